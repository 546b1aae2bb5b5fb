import type { IncomingMessage, Server, ServerOptions } from 'node:http';
import type { Duplex } from 'node:stream';
import ipaddr from 'ipaddr.js';
import { ServiceError } from '../domain/errors.js';
import { rawErrorResponse } from './errors.js';

/** How long a client may take to send a request, and how many connections one address may hold open. */
export type ClientLimits = {
  /** REQUEST_BODY_TIMEOUT_MS: a request, headers and body, must have arrived in full within this time. */
  requestBodyTimeoutMs: number;
  /** MAX_CONNECTIONS_PER_IP: open connections per client address; further ones are refused at once. */
  maxConnectionsPerIp: number;
};

export const DEFAULT_CLIENT_LIMITS: ClientLimits = { requestBodyTimeoutMs: 10_000, maxConnectionsPerIp: 256 };

/**
 * Fastify's options for Node's own request timeout: a request (a connection that has sent nothing yet included)
 * not in full within the time gets a 408 and its connection closed (http/errors.ts, clientErrorHandler). Fastify
 * turns Node's timeout off unless told; Node looks for late requests every `connectionsCheckingInterval` (30 s by
 * default, which would let a request take up to 40 s), here a quarter of the timeout, at most a second.
 */
export function requestTimeoutOptions(limits: ClientLimits): { requestTimeout: number; http: ServerOptions } {
  const ms = limits.requestBodyTimeoutMs;
  return {
    requestTimeout: ms,
    http: { headersTimeout: ms, connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.floor(ms / 4))) },
  };
}

/**
 * At most `max` open connections per client address. A connection past it is answered at once, on the socket,
 * with 429 rate_limited in the envelope (`Retry-After: 1`, `Connection: close`) and closed: it never reaches the
 * HTTP parser. Connections from a trusted proxy (TRUST_PROXY) are not counted: they carry many clients, whose
 * address is known only from each request's X-Forwarded-For, so the proxy is the one to limit them.
 */
export function limitConnectionsPerAddress(
  server: Server,
  opts: { max: number; trustProxy?: boolean | number | string[]; onRefused?: () => void },
): void {
  const open = new Map<string, number>();
  const exempt = trustedProxies(opts.trustProxy);
  // The HTTP server's own listeners (its parser) run only for connections let in.
  const listeners = server.listeners('connection') as ((socket: Duplex) => void)[];
  server.removeAllListeners('connection');
  server.on('connection', (socket: Duplex & { remoteAddress?: string }) => {
    const address = socket.remoteAddress;
    if (address !== undefined && !exempt(address)) {
      const count = open.get(address) ?? 0;
      if (count >= opts.max) {
        opts.onRefused?.();
        refuse(socket, opts.max);
        return;
      }
      open.set(address, count + 1);
      socket.once('close', () => {
        const left = open.get(address)! - 1;
        if (left === 0) open.delete(address);
        else open.set(address, left);
      });
    }
    for (const listener of listeners) listener.call(server, socket);
  });
}

function refuse(socket: Duplex, max: number): void {
  socket.on('error', () => {});
  const err = new ServiceError('rate_limited', `Too many open connections from this address: at most ${max}. Close one, or retry later.`, {
    headers: { 'retry-after': '1' },
  });
  socket.end(rawErrorResponse(429, 'Too Many Requests', err), () => socket.destroy());
  // Whatever the client sends meanwhile is dropped.
  socket.resume();
}

/** Which peer addresses are trusted proxies: all of them when TRUST_PROXY is true or a hop count, else those listed. */
function trustedProxies(trustProxy: boolean | number | string[] | undefined): (address: string) => boolean {
  if (!trustProxy) return () => false;
  if (!Array.isArray(trustProxy)) return () => true;
  const ranges = trustProxy.flatMap((entry): [ipaddr.IPv4 | ipaddr.IPv6, number][] => {
    try {
      if (entry.includes('/')) return [ipaddr.parseCIDR(entry)];
      const ip = ipaddr.process(entry);
      return [[ip, ip.kind() === 'ipv4' ? 32 : 128]];
    } catch {
      return [];
    }
  });
  return (address) => {
    if (!ipaddr.isValid(address)) return false;
    const ip = ipaddr.process(address);
    return ranges.some(([range, bits]) => range.kind() === ip.kind() && ip.match(range, bits));
  };
}

/**
 * CONNECT (a proxy tunnel) is not something svc serves. Node closes such a connection without a word unless a
 * listener answers it: 405 in the envelope, and the connection closed.
 */
export function refuseConnect(server: Server): void {
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    socket.on('error', () => {});
    const err = new ServiceError('method_not_allowed', 'CONNECT is not supported: svc is not a proxy.');
    socket.end(rawErrorResponse(405, 'Method Not Allowed', err, { headers: { allow: 'GET, HEAD, POST, PATCH, DELETE' } }), () => socket.destroy());
  });
}
