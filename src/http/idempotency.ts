import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { z } from 'zod';
import type { IdempotencyRecord } from '../db/contractWrites.js';
import { ServiceError } from '../domain/errors.js';
import type { ServiceContext } from '../services/context.js';
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  idempotencyKeyDigest,
  releaseIdempotencyKey,
  requestFingerprint,
} from '../services/idempotency.js';
import { appendHook } from './hooks.js';
import type { AppMetrics } from './metrics.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The Idempotency-Key this request claimed: a route whose service records its result passes it on. */
    idempotency?: IdempotencyRecord;
    /** The service recorded the result with its effect (a committed change): nothing left to keep. */
    resultRecorded?: boolean;
  }
  interface FastifyContextConfig {
    /**
     * A route whose service records its result with its effect (services/idempotency.ts): a 200 is already kept,
     * and a replay renders the response from the recorded result with `render`, as the route renders a fresh one.
     */
    recordsResult?: { render(result: unknown, req: FastifyRequest): unknown };
  }
}

/** 1 to 255 printable ASCII characters (space to tilde). */
const KEY_SHAPE = /^[\x20-\x7e]{1,255}$/;
const KEY_RULE = 'must be 1 to 255 printable ASCII characters';

/** Added to the schema of every route that takes a key: it validates the header and documents it (OpenAPI). */
export const IdempotencyKeyHeader = z.object({
  'idempotency-key': z
    .string()
    .regex(KEY_SHAPE, KEY_RULE)
    .optional()
    .describe(
      'Makes a retry safe: the same key with the same request within 24 h returns the first response (header ' +
        '`Idempotent-Replayed: true`) without acting again. 1 to 255 printable ASCII characters, e.g. a UUID; scoped to the shop.',
    ),
});

/**
 * Idempotency-Key on every POST of the public API. Not on the admin API: key generation answers with a secret,
 * which is never stored anywhere, so it cannot be replayed.
 */
export const takesIdempotencyKey = (route: Pick<RouteOptions, 'url' | 'method'>) =>
  route.url.startsWith('/api/v1/') && [route.method].flat().includes('POST');

/**
 * Wires the idempotency rules (services/idempotency.ts) into the routes that take a key: a route-level preHandler,
 * after authentication and the rate limit, claims the key (or answers with the replay, 409 or 422), and a
 * route-level onSend keeps any outcome the service did not record itself. 2xx and 4xx outcomes are kept: they are
 * the outcome of the request and a retry must not change it. 5xx responses are not (as Stripe): a change commits in
 * one transaction with its events, so a 5xx means nothing happened, and releasing the key lets the client's retry
 * succeed. Requests without the header are untouched.
 */
export function installIdempotency(app: FastifyInstance, opts: { ctx: ServiceContext; metrics?: AppMetrics; releaseRetryMs?: number }): void {
  const { ctx, metrics } = opts;
  const unreleased = new PendingReleases(ctx, opts.releaseRetryMs ?? 1000);
  app.addHook('onClose', async () => unreleased.close());

  const claim = async (req: FastifyRequest, reply: FastifyReply) => {
    if (req.method !== 'POST') return;
    const header = req.headers['idempotency-key'];
    if (header === undefined) return;
    const key = Array.isArray(header) ? header.join(', ') : header;
    if (!KEY_SHAPE.test(key)) {
      throw new ServiceError('invalid_request', `Invalid request: idempotency-key ${KEY_RULE}.`, {
        details: [{ path: 'idempotency-key', message: KEY_RULE }],
      });
    }
    // Authentication runs first on every route that takes a key, and resolves its principal before a claim (the
    // gate): nothing is stored for a key that is not usable, and without a shop there is nothing to scope to.
    const principal = req.principal;
    if (!principal) return;
    // A key of this shop that this instance failed to release (after a 5xx) is released first, if the database takes
    // it now: the retry of that request finds its key free.
    await unreleased.releaseNow(principal.shopId, idempotencyKeyDigest(key));
    const input = {
      shopId: principal.shopId,
      key,
      requestId: String(req.id),
      requestHash: requestFingerprint({ method: req.method, path: req.url.split('?')[0], body: req.body }),
    };
    let result;
    try {
      result = await claimIdempotencyKey({ ctx, input });
    } catch (err) {
      if (err instanceof ServiceError) metrics?.idempotency(err.code === 'idempotency_key_reused' ? 'key_reused' : 'in_progress');
      throw err;
    }
    if (result.kind === 'claimed') {
      req.idempotency = result.record;
      metrics?.idempotency('executed');
      return;
    }
    metrics?.idempotency('replayed');
    const { recorded } = result;
    const render = req.routeOptions.config.recordsResult?.render;
    const body = 'result' in recorded && render ? JSON.stringify(render(recorded.result, req)) : withRequestId((recorded as { body: string }).body, String(req.id));
    // For the request log: a replayed refusal carries its code as the first answer did.
    if (result.statusCode >= 400) req.errorCode = /^\{"error":\{"code":"([a-z_]{1,60})"/.exec(body)?.[1];
    reply.header('idempotent-replayed', 'true').header('original-request-id', result.originalRequestId);
    return reply.code(result.statusCode).type('application/json; charset=utf-8').send(body);
  };

  const keep = async (req: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const record = req.idempotency;
    if (!record) return payload;
    req.idempotency = undefined;
    // The service recorded its result in the commit of its effect: nothing left to do.
    if (reply.statusCode === 200 && req.resultRecorded) return payload;
    try {
      if (reply.statusCode >= 500) {
        try {
          await releaseIdempotencyKey({ ctx, input: { record } });
        } catch (err) {
          unreleased.add(record);
          throw err;
        }
      } else {
        const body = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : '';
        await completeIdempotencyKey({ ctx, input: { record, statusCode: reply.statusCode, body } });
      }
    } catch (err) {
      // The response still goes out. A release is tried again until the database takes it (PendingReleases); a
      // response not kept leaves the key in progress until the lock timeout lets a retry take it over.
      req.log.warn({ err: { message: (err as Error).message } }, 'could not record the idempotent response');
    }
    return payload;
  };

  app.addHook('onRoute', (route) => {
    if (!takesIdempotencyKey(route)) return;
    if (!route.schema?.headers) route.schema = { ...route.schema, headers: IdempotencyKeyHeader };
    route.preHandler = appendHook(route.preHandler, claim);
    route.onSend = appendHook(route.onSend, keep);
  });
}

/**
 * A replayed error envelope names the replay's request id, as every envelope names the X-Request-Id it came with;
 * the first request's id travels in `Original-Request-Id`. Everything else is replayed byte for byte.
 */
function withRequestId(body: string, requestId: string): string {
  if (!body.startsWith('{"error":')) return body;
  try {
    const parsed = JSON.parse(body) as { error?: { requestId?: unknown } };
    if (!parsed.error || typeof parsed.error.requestId !== 'string') return body;
    parsed.error.requestId = requestId;
    return JSON.stringify(parsed);
  } catch {
    return body;
  }
}

/**
 * Idempotency-Keys whose release failed after a 5xx (typically: the database was gone, which is why the request
 * failed). The README promises that a 5xx frees the key; left in progress, every retry would get 409
 * idempotency_in_progress until the lock timeout. So each is released again every `retryMs` until the database takes
 * it, and at once before this instance claims the same key again. Only this execution's own claim is released
 * (services/idempotency.ts: the owner's request id, still in progress): a change that did commit recorded its result
 * in its own statement, and stays. Bounded: past MAX_PENDING the oldest are left to the lock timeout.
 */
class PendingReleases {
  private static readonly MAX_PENDING = 10_000;
  private readonly records = new Map<string, IdempotencyRecord>();
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private closed = false;

  constructor(
    private readonly ctx: ServiceContext,
    private readonly retryMs: number,
  ) {}

  private static id(shopId: string, keyDigest: string): string {
    return `${shopId}:${keyDigest}`;
  }

  add(record: IdempotencyRecord): void {
    if (this.records.size >= PendingReleases.MAX_PENDING) this.records.delete(this.records.keys().next().value!);
    this.records.set(PendingReleases.id(record.shopId, record.keyDigest), record);
    this.schedule();
  }

  /** Releases this key now if it waits to be released; a failure leaves it waiting. */
  async releaseNow(shopId: string, keyDigest: string): Promise<void> {
    const id = PendingReleases.id(shopId, keyDigest);
    const record = this.records.get(id);
    if (!record) return;
    try {
      await releaseIdempotencyKey({ ctx: this.ctx, input: { record } });
      if (this.records.get(id) === record) this.records.delete(id);
    } catch {
      // still unreachable: the claim that follows says so
    }
  }

  private schedule(): void {
    if (this.timer || this.closed || this.records.size === 0) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.running = this.retryAll().finally(() => {
        this.running = null;
        this.schedule();
      });
    }, this.retryMs);
    this.timer.unref();
  }

  private async retryAll(): Promise<void> {
    for (const [id, record] of [...this.records]) {
      try {
        await releaseIdempotencyKey({ ctx: this.ctx, input: { record } });
      } catch {
        return; // the database is still away: the rest wait for the next round
      }
      if (this.records.get(id) === record) this.records.delete(id);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
    if (this.records.size) await this.retryAll().catch(() => undefined);
    this.records.clear();
  }
}
