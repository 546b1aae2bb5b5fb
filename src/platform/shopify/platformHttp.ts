import http from 'node:http';
import https from 'node:https';
import { keptAliveAgents } from '../../http/keepAlive.js';

/**
 * svc's HTTP calls to the platform (the Admin GraphQL API and the token endpoint): one POST of a string body over
 * node:http with kept-alive connections, answered with the status, the headers and the body as text.
 *
 * Why not fetch, or the platform's GraphQL client over a fetch: a call is on the path of every action in platform
 * mode, and building the standard Response, its Headers and its body stream is a large share of what svc spends on a
 * platform action (docs/performance-log.md, "Figures behind the shape of the code"); a fetch given an AbortSignal
 * also keeps the request's state reachable until a later collection, so under load it is promoted to the old heap
 * and collected in long pauses. What the calls need is small: a POST, a body, a time limit, and never a redirect
 * followed.
 */
export type PlatformAnswer = { status: number; headers: http.IncomingHttpHeaders; body: string };

/** The call failed before an answer: refused, cut, or out of time (`timedOut`). Nothing says it did not happen. */
export class CallFailed extends Error {
  constructor(
    readonly timedOut: boolean,
    cause?: unknown,
  ) {
    super(timedOut ? 'no answer in time' : 'the connection failed', { cause });
  }
}

const agents = keptAliveAgents();

export function postToPlatform(url: string, opts: { headers: Record<string, string>; body: string; timeoutMs: number }): Promise<PlatformAnswer> {
  let target: URL;
  try {
    target = new URL(url);
  } catch (err) {
    return Promise.reject(new CallFailed(false, err));
  }
  const client = target.protocol === 'https:' ? https : target.protocol === 'http:' ? http : null;
  if (!client) return Promise.reject(new CallFailed(false, new Error(`unsupported protocol ${target.protocol}`)));
  const headers = { ...opts.headers, 'content-length': String(Buffer.byteLength(opts.body)) };
  return new Promise<PlatformAnswer>((resolve, reject) => {
    let timedOut = false;
    const req = client.request(target, { method: 'POST', headers, agent: agents[target.protocol as 'http:' | 'https:'] }, (res) => {
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400) {
        // A redirect is a failure, never followed: the platform does not send one to an API call.
        res.resume();
        done();
        reject(new CallFailed(false, new Error(`redirect (${status})`)));
        return;
      }
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        done();
        resolve({ status, headers: res.headers, body: chunks.length === 1 ? chunks[0].toString('utf8') : Buffer.concat(chunks).toString('utf8') });
      });
      res.on('error', (err) => {
        done();
        reject(new CallFailed(timedOut, err));
      });
    });
    // The whole call's limit (connecting, sending, the answer to its end), not an idle timeout.
    const timer = setTimeout(() => {
      timedOut = true;
      req.destroy(new Error('timed out'));
    }, opts.timeoutMs);
    const done = () => clearTimeout(timer);
    req.on('error', (err) => {
      done();
      reject(new CallFailed(timedOut, err));
    });
    req.end(opts.body);
  });
}
