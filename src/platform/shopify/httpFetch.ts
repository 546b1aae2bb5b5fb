import http from 'node:http';
import https from 'node:https';
import { keptAliveAgents } from '../../http/keepAlive.js';

/**
 * The fetch svc hands the platform's GraphQL client (its `customFetchApi`) and uses for the token endpoint: a POST or
 * GET over node:http with kept-alive connections, answered as a standard Response.
 *
 * Why not the global fetch: a call to the platform is on the path of every action in platform mode, and the global
 * fetch costs several times what node:http does per request; worse, a fetch given an AbortSignal keeps that request's
 * state reachable (a FinalizationRegistry entry) until a later collection, so at a thousand calls a second it is all
 * promoted to the old heap and collected in long pauses (bench:platform's p99). What is used of fetch here is small:
 * method, headers, a string body, a signal, and `redirect: 'error'` (a redirect is a failure, never followed).
 */
const agents = keptAliveAgents();

/** Statuses whose Response has no body (the Response constructor refuses one). */
const NULL_BODY = new Set([101, 204, 205, 304]);

export const httpFetch: typeof fetch = (input, init = {}) => {
  const url = new URL(input instanceof Request ? input.url : String(input));
  const client = url.protocol === 'https:' ? https : url.protocol === 'http:' ? http : null;
  if (!client) return Promise.reject(new TypeError(`fetch failed: unsupported protocol ${url.protocol}`));
  const signal = init.signal ?? undefined;
  if (signal?.aborted) return Promise.reject(signal.reason);
  const body = init.body;
  if (body !== undefined && body !== null && typeof body !== 'string') return Promise.reject(new TypeError('httpFetch sends string bodies only'));
  const headers: Record<string, string> = {};
  new Headers(init.headers).forEach((v, k) => (headers[k] = v));
  if (body) headers['content-length'] = String(Buffer.byteLength(body));
  return new Promise<Response>((resolve, reject) => {
    const req = client.request(url, { method: init.method ?? 'GET', headers, agent: agents[url.protocol as 'http:' | 'https:'] }, (res) => {
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400 && init.redirect !== 'manual') {
        res.resume();
        cleanup();
        // As fetch with redirect: 'error' (svc never follows one: the platform does not send them to an API call).
        reject(new TypeError(`fetch failed: redirect (${status})`));
        return;
      }
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        cleanup();
        const answer = new Headers();
        for (let i = 0; i < res.rawHeaders.length; i += 2) answer.append(res.rawHeaders[i], res.rawHeaders[i + 1]);
        resolve(new Response(NULL_BODY.has(status) ? null : Buffer.concat(chunks), { status, statusText: res.statusMessage ?? '', headers: answer }));
      });
      res.on('error', (err) => {
        cleanup();
        reject(new TypeError('fetch failed', { cause: err }));
      });
    });
    const onAbort = () => req.destroy(signal!.reason instanceof Error ? signal!.reason : new Error('aborted'));
    const cleanup = () => signal?.removeEventListener('abort', onAbort);
    signal?.addEventListener('abort', onAbort, { once: true });
    req.on('error', (err) => {
      cleanup();
      reject(signal?.aborted ? signal.reason : new TypeError('fetch failed', { cause: err }));
    });
    req.end(body ?? undefined);
  });
};
