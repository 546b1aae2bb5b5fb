import { retryAfterSeconds } from './errors.js';

export type FetchLike = (request: Request, init?: RequestInit) => Promise<Response>;

export type RetryOptions = {
  /** Retries after the first attempt (default 3; 0 turns retrying off). */
  retries?: number;
  /** The wait after the first failure without a Retry-After; it doubles on each retry, with jitter (default 250 ms). */
  baseDelayMs?: number;
  /**
   * The longest the client waits before one retry (default 10 s). A Retry-After asking for longer ends the retries
   * at once: the caller gets the error, with `retryAfterSeconds`, instead of a call that blocks for minutes.
   */
  maxDelayMs?: number;
  /** Each attempt's time limit (default 30 s); an attempt that runs out counts as a network error. */
  timeoutMs?: number;
};

export const DEFAULT_RETRY: Required<RetryOptions> = { retries: 3, baseDelayMs: 250, maxDelayMs: 10_000, timeoutMs: 30_000 };

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Wraps fetch so that requests are retried when retrying is safe and useful: no answer at all (a network error or a
 * timeout), `503` (the database or an instance is briefly unavailable) and `409 idempotency_in_progress` (the same
 * request is still running elsewhere). Every POST carries an `Idempotency-Key` (one is added when the caller gave
 * none), the same on every attempt of one call, so the API runs the action at most once and a retry after a lost
 * answer gets the first outcome. Anything else (4xx, a 429 with its Retry-After) goes back to the caller at once.
 */
export function retryingFetch(base: FetchLike, options: RetryOptions = {}): FetchLike {
  const o = { ...DEFAULT_RETRY, ...options };
  const backoff = (attempt: number) => Math.min(o.maxDelayMs, o.baseDelayMs * 2 ** attempt) * (0.5 + Math.random() / 2);

  /** How long to wait before retrying this answer, or undefined to hand it to the caller. */
  async function delayFor(response: Response, attempt: number): Promise<number | undefined> {
    let retriable = response.status === 503;
    if (response.status === 409) {
      const body = (await response.clone().json().catch(() => undefined)) as { error?: { code?: unknown } } | undefined;
      retriable = body?.error?.code === 'idempotency_in_progress';
    }
    if (!retriable) return undefined;
    const after = retryAfterSeconds(response.headers);
    if (after === undefined) return backoff(attempt);
    return after * 1000 <= o.maxDelayMs ? after * 1000 : undefined;
  }

  return async (input, init) => {
    let request = input;
    if (request.method === 'POST' && !request.headers.has('idempotency-key')) {
      const headers = new Headers(request.headers);
      headers.set('idempotency-key', crypto.randomUUID());
      request = new Request(request, { headers });
    }
    for (let attempt = 0; ; attempt++) {
      const last = attempt >= o.retries;
      // The caller's own abort still ends everything; the attempt's timeout only ends this attempt.
      const signal = AbortSignal.any([request.signal, AbortSignal.timeout(o.timeoutMs)]);
      let response: Response;
      try {
        // A clone per attempt: a request's body can be sent only once.
        response = await base(new Request(request.clone(), { signal }), init);
      } catch (err) {
        if (last || request.signal.aborted) throw err;
        await sleep(backoff(attempt));
        continue;
      }
      if (last) return response;
      const wait = await delayFor(response, attempt);
      if (wait === undefined) return response;
      await response.body?.cancel();
      await sleep(wait);
    }
  };
}
