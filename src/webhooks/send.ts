import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { performance } from 'node:perf_hooks';
import { keptAliveAgents } from '../http/keepAlive.js';
import { AddressRefused, allowedAddresses, guardedLookup, type AddressPolicy } from './addressGuard.js';

/** What one attempt came to: the receiver's status (null: no answer), how long it took, and why it failed if it did. */
export type AttemptResult = {
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  /** The first 4 KB of the response body. */
  responseBody: string | null;
  retryAfter: string | undefined;
};

export const DELIVERY_TIMEOUT_MS = 15_000;
const MAX_RESPONSE_BYTES = 4096;

// Connections are kept alive between deliveries to one receiver: most deliveries go to a few endpoints.
const agents = keptAliveAgents();

/**
 * POSTs one delivery (docs/product.md §10): success is a 2xx within 15 s; a redirect is not followed (it is a failure); at
 * most 4 KB of the response is read. The address guard runs at connect time, after DNS. Never throws: every outcome
 * is an AttemptResult, and its error text never holds the body or a secret.
 */
export async function postWebhook(target: string, headers: Record<string, string>, body: string, policy: AddressPolicy, timeoutMs = DELIVERY_TIMEOUT_MS): Promise<AttemptResult> {
  const started = performance.now();
  const done = (r: Omit<AttemptResult, 'durationMs'>): AttemptResult => ({ ...r, durationMs: Math.round(performance.now() - started) });
  const url = new URL(target);
  try {
    // A literal address is never looked up: check it here; a name is checked by the lookup, at connect time.
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host)) await allowedAddresses(host, policy);
  } catch (err) {
    return done({ statusCode: null, error: (err as Error).message, responseBody: null, retryAfter: undefined });
  }
  const client = url.protocol === 'https:' ? https : http;
  return new Promise<AttemptResult>((resolve) => {
    let settled = false;
    const finish = (r: Omit<AttemptResult, 'durationMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(done(r));
    };
    const req = client.request(
      url,
      {
        method: 'POST',
        agent: agents[url.protocol as 'http:' | 'https:'],
        lookup: guardedLookup(policy) as never,
        headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'user-agent': 'svc-webhooks/1' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const end = () => {
          const status = res.statusCode ?? 0;
          const responseBody = Buffer.concat(chunks).subarray(0, MAX_RESPONSE_BYTES).toString('utf8');
          const retryAfter = res.headers['retry-after'];
          let error: string | null = null;
          if (status >= 300 && status < 400) error = `redirect (${status}) not followed`;
          else if (status < 200 || status >= 300) error = `HTTP ${status}`;
          finish({ statusCode: status, error, responseBody, retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter });
        };
        res.on('data', (chunk: Buffer) => {
          if (size >= MAX_RESPONSE_BYTES) return;
          chunks.push(chunk);
          size += chunk.length;
          // Enough read: the rest of a large answer is not waited for.
          if (size >= MAX_RESPONSE_BYTES) {
            end();
            res.destroy();
          }
        });
        res.on('end', end);
        res.on('error', end);
      },
    );
    const timer = setTimeout(() => {
      req.destroy();
      finish({ statusCode: null, error: `no answer within ${Math.round(timeoutMs / 1000)} s`, responseBody: null, retryAfter: undefined });
    }, timeoutMs);
    req.on('error', (err: NodeJS.ErrnoException) =>
      finish({ statusCode: null, error: err instanceof AddressRefused ? err.message : `connection failed (${err.code ?? err.message})`, responseBody: null, retryAfter: undefined }),
    );
    req.end(body);
  });
}
