import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RequestLogWriter } from '../db/requestLogWriter.js';
import { MAX_IDEMPOTENCY_KEY, MAX_PATH, MAX_USER_AGENT, type RequestLogEntry } from '../domain/requestLog.js';
import type { Clock } from '../services/context.js';
import { isApiPath } from './apiPaths.js';
import { scrubSecrets } from './logging.js';

/**
 * Whose request it was, as the request log records it: known once the key gate has identified the key, or (an OAuth
 * request on /mcp) the connection's grant, which has no key.
 */
export type LoggedKey = { keyId: string | null; shopId: string; fingerprint: string | null; grantId?: string | null };

declare module 'fastify' {
  interface FastifyRequest {
    /** The key the request came with, once identified; kept when the key is then refused (revoked, say). */
    loggedKey?: LoggedKey;
    /** The code of the error envelope the request was answered with (for MCP, also a refused tool call's). */
    errorCode?: string;
    /** MCP: the tool(s) the request called. */
    mcpTool?: string;
    /** MCP: the status the API gives the first refused call's error code (the exchange itself answers 200). */
    mcpStatus?: number;
  }
}

const isLoggedPath = (url: string) => isApiPath(url) || url === '/mcp' || url.startsWith('/mcp?') || url.startsWith('/mcp/');

/**
 * Text a client chose (the URL, a header) as the log keeps it: secrets replaced, NUL removed (PostgreSQL text cannot
 * hold it), cut to `max`.
 */
function clientText(text: string, max: number): string {
  return storable(scrubSecrets(text), max);
}

/** Scrubbed text as the log keeps it: NUL removed, cut to `max`. */
function storable(clean: string, max: number): string {
  if (clean.includes('\u0000')) clean = clean.replaceAll('\u0000', '');
  return clean.length > max ? clean.slice(0, max) : clean;
}

function headerText(value: string | string[] | undefined, max: number): string | null {
  if (value === undefined) return null;
  const text = Array.isArray(value) ? value.join(', ') : value;
  return text === '' ? null : clientText(text, max);
}

/** `url`: the request's URL already scrubbed (the access log's), when the caller has it. */
export type RequestLogRecorder = (req: FastifyRequest, reply: FastifyReply, ms: number, url?: string) => void;

/**
 * What the app's onResponse hook calls for every request: an API or MCP request whose key was identified becomes an
 * entry in the writer's buffer (nothing is written on the request's path). A request refused for a key in its URL
 * was answered before the gate looked at its key: if its Authorization header holds a well-formed key, `identify`
 * finds the key (after the answer has gone out) so the merchant sees that request too, with the key in the URL
 * scrubbed. Nothing is recorded for a request whose key is unknown: it belongs to no shop.
 */
export function requestLogRecorder(
  writer: RequestLogWriter,
  clock: Clock,
  identify: (req: FastifyRequest) => Promise<LoggedKey | null>,
): RequestLogRecorder {
  const entryOf = (req: FastifyRequest, reply: FastifyReply, ms: number, key: LoggedKey, url: string | undefined): RequestLogEntry => {
    return {
      s: key.shopId,
      k: key.keyId,
      f: key.fingerprint,
      g: key.grantId ?? null,
      t: clock.now().getTime(),
      m: req.method,
      p: url === undefined ? clientText(req.url, MAX_PATH) : storable(url, MAX_PATH),
      tool: req.mcpTool ?? null,
      st: reply.statusCode,
      // Only while the answer is a success: a refusal of the whole exchange (401, 429 …) is its own status.
      ms: req.mcpStatus !== undefined && reply.statusCode < 300 ? req.mcpStatus : null,
      e: req.errorCode ?? null,
      d: Math.round(ms * 1000),
      rid: String(req.id),
      ik: headerText(req.headers['idempotency-key'], MAX_IDEMPOTENCY_KEY),
      ip: req.ip ?? null,
      ua: headerText(req.headers['user-agent'], MAX_USER_AGENT),
    };
  };
  return (req, reply, ms, url) => {
    const key = req.loggedKey;
    if (key) {
      writer.record(entryOf(req, reply, ms, key, url));
      return;
    }
    if ((req as { keyInUrl?: boolean }).keyInUrl && isLoggedPath(req.url)) {
      identify(req).then(
        (found) => {
          if (found) writer.record(entryOf(req, reply, ms, found, undefined));
        },
        () => {
          // The key could not be looked up (the database is down): this one request goes unlogged.
        },
      );
    }
  };
}
