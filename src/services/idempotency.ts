import { createHash } from 'node:crypto';
import { and, eq, lte, or, sql } from 'drizzle-orm';
import { idempotencyKeys } from '../db/schema.js';
import { ServiceError } from '../domain/errors.js';
import type { IdempotencyRecord } from '../db/contractWrites.js';
import type { ServiceCall } from './context.js';

/**
 * The life of an Idempotency-Key (docs/product.md §4), all of it in this module: claim → the operation runs → its outcome is
 * kept for 24 h, or the key is released (a 5xx: nothing is kept, so a retry can succeed). Rows live in the database,
 * so the rules hold across instances, and the claim is one INSERT … ON CONFLICT statement, so of two concurrent
 * requests with one key exactly one executes.
 *
 * Two ways an outcome is kept:
 * - a contract change records its result (the contract after it) in the very statement that commits it
 *   (db/contractWrites.ts, given the claim's IdempotencyRecord), so no crash between the effect and the record
 *   can let a retry execute the request a second time; a replay renders the response from that result, as the first
 *   response was rendered;
 * - any other outcome (a refusal: nothing changed) is kept as the response that was sent (completeIdempotencyKey).
 */

/** How long a completed response is replayed. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/**
 * An execution that has held its key this long without finishing is presumed dead (a crash, a killed instance):
 * the next identical request takes the key over instead of finding it blocked forever. Requests take milliseconds;
 * a minute leaves a wide margin.
 */
export const IDEMPOTENCY_LOCK_TIMEOUT_MS = 60_000;

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** How an Idempotency-Key is stored: its SHA-256 (hex), never the key itself. */
export const idempotencyKeyDigest = sha256;

/** Nesting deeper than any valid body: below it keys are sorted, past it the JSON text is taken as it is. */
const MAX_CANONICAL_DEPTH = 32;

/** JSON with object keys sorted at every level, so `{"a":1,"b":2}` and `{"b":2,"a":1}` are the same request. */
export function canonicalJson(value: unknown, depth = 0): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (depth >= MAX_CANONICAL_DEPTH) return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v, depth + 1)).join(',')}]`;
  const obj = value as Record<string, unknown>;
  const fields = Object.keys(obj)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k], depth + 1)}`);
  return `{${fields.join(',')}}`;
}

/** SHA-256 of the canonical request: method, path (without the query) and body. */
export function requestFingerprint(req: { method: string; path: string; body: unknown }): string {
  return sha256(`${req.method.toUpperCase()} ${req.path}\n${req.body === undefined ? '' : canonicalJson(req.body)}`);
}

export type ClaimInput = { shopId: string; key: string; requestHash: string; requestId: string };
export type ClaimResult =
  | { kind: 'claimed'; record: IdempotencyRecord }
  | { kind: 'replay'; statusCode: number; originalRequestId: string; recorded: { result: unknown } | { body: string } };

/**
 * Takes the key for this request, or says what to answer instead: the stored response (same request, completed),
 * 409 `idempotency_in_progress` (same request, still running) or 422 `idempotency_key_reused` (another request).
 * An expired row is a fresh start; an in-progress row past the lock timeout is taken over by the same request.
 */
export async function claimIdempotencyKey({ ctx, input }: ServiceCall<ClaimInput>): Promise<ClaimResult> {
  const now = ctx.clock.now();
  const keyDigest = sha256(input.key);
  const staleBefore = new Date(now.getTime() - IDEMPOTENCY_LOCK_TIMEOUT_MS);
  const fresh = {
    requestHash: input.requestHash,
    state: 'in_progress' as const,
    ownerRequestId: input.requestId,
    statusCode: null,
    responseBody: null,
    lockedAt: now,
    createdAt: now,
    expiresAt: new Date(now.getTime() + IDEMPOTENCY_TTL_MS),
  };
  // A row can vanish between the claim and the read (released after a 5xx, purged): then claim again.
  for (let attempt = 0; attempt < 3; attempt++) {
    const claimed = await ctx.db.orm
      .insert(idempotencyKeys)
      .values({ shopId: input.shopId, keyDigest, ...fresh })
      .onConflictDoUpdate({
        target: [idempotencyKeys.shopId, idempotencyKeys.keyDigest],
        set: fresh,
        // Evaluated on the row as it is once the conflict is locked: of two concurrent takeovers only one passes.
        setWhere: or(
          lte(idempotencyKeys.expiresAt, now),
          and(
            eq(idempotencyKeys.state, 'in_progress'),
            lte(idempotencyKeys.lockedAt, staleBefore),
            eq(idempotencyKeys.requestHash, sql`excluded.request_hash`),
          ),
        ),
      })
      .returning({ owner: idempotencyKeys.ownerRequestId });
    if (claimed.length) return { kind: 'claimed', record: { shopId: input.shopId, keyDigest, requestId: input.requestId } };

    const [row] = await ctx.db.orm
      .select()
      .from(idempotencyKeys)
      .where(and(eq(idempotencyKeys.shopId, input.shopId), eq(idempotencyKeys.keyDigest, keyDigest)));
    if (!row) continue;
    if (row.requestHash !== input.requestHash) {
      throw new ServiceError(
        'idempotency_key_reused',
        'This Idempotency-Key was already used with a different request (method, path or body). Send a new key for a new request.',
      );
    }
    if (row.state === 'completed') {
      const recorded = row.result !== null ? { result: row.result } : { body: row.responseBody! };
      return { kind: 'replay', statusCode: row.statusCode!, recorded, originalRequestId: row.ownerRequestId };
    }
    break;
  }
  throw new ServiceError(
    'idempotency_in_progress',
    'A request with this Idempotency-Key is still being processed. Retry shortly to get its result.',
    { headers: { 'retry-after': '1' } },
  );
}

const ownedBy = (input: { shopId: string; keyDigest: string; requestId: string }) =>
  and(
    eq(idempotencyKeys.shopId, input.shopId),
    eq(idempotencyKeys.keyDigest, input.keyDigest),
    eq(idempotencyKeys.ownerRequestId, input.requestId),
    eq(idempotencyKeys.state, 'in_progress'),
  );

/** Keeps a response as it was sent, for replays. Only the execution that holds the key may complete it. */
export async function completeIdempotencyKey({
  ctx,
  input,
}: ServiceCall<{ record: IdempotencyRecord; statusCode: number; body: string }>): Promise<void> {
  await ctx.db.orm
    .update(idempotencyKeys)
    .set({ state: 'completed', statusCode: input.statusCode, responseBody: input.body })
    .where(ownedBy(input.record));
}

/** Gives the key back without keeping anything (after a 5xx), so a retry executes the request again. */
export async function releaseIdempotencyKey({ ctx, input }: ServiceCall<{ record: IdempotencyRecord }>): Promise<void> {
  await ctx.db.orm.delete(idempotencyKeys).where(ownedBy(input.record));
}
