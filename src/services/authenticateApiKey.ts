import { and, eq, isNull, lt, or } from 'drizzle-orm';
import { apiKeys } from '../db/schema.js';
import { MESSAGES, ServiceError } from '../domain/errors.js';
import { fingerprintOf, isWellFormedKey, keyDigest } from '../domain/keys.js';
import type { KeyCheck, ServiceCall, ServiceContext } from './context.js';
import { hotStatements } from './hotStatements.js';
import { shopApiAccess } from './shops.js';

/**
 * The key a request authenticated with. `verified` says whether this request has confirmed the key's state (not
 * revoked, the shop's plan allows the API) in the database yet: a key found in the KeyCache is not, and the
 * request's first statement confirms it (see KeyCheck).
 */
export type AuthenticatedKey = KeyCheck & { shopId: string; fingerprint: string; digest: string };

/** last_used_at is refreshed at most this often per key, so a busy key does not write on every request. */
export const LAST_USED_PRECISION_MS = 60_000;

export type AuthFailureReason = 'missing' | 'malformed' | 'unknown' | 'revoked' | 'plan_required';

export class AuthError extends ServiceError {
  constructor(
    readonly reason: AuthFailureReason,
    message: string,
  ) {
    super(reason === 'plan_required' ? 'plan_required' : 'unauthorized', message);
  }
}

// Immutable and without a stack: one instance per reason serves every refusal.
export const AUTH_ERRORS: Record<AuthFailureReason, AuthError> = {
  missing: new AuthError('missing', MESSAGES.missingKey),
  malformed: new AuthError('malformed', MESSAGES.unauthorized),
  unknown: new AuthError('unknown', MESSAGES.unauthorized),
  revoked: new AuthError('revoked', MESSAGES.unauthorized),
  plan_required: new AuthError('plan_required', MESSAGES.planRequired),
};

/** The key out of an `Authorization: Bearer <key>` header, or null. */
export function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return m ? m[1] : null;
}

/**
 * The first checks of PRODUCT §2, without I/O: a bearer token of the key's shape with a valid checksum. Returns the
 * key's digest, or the refusal.
 */
export function presentedKeyDigest(authorization: string | undefined): string | AuthError {
  const raw = bearerToken(authorization);
  if (raw === null) return authorization ? AUTH_ERRORS.malformed : AUTH_ERRORS.missing;
  if (!isWellFormedKey(raw)) return AUTH_ERRORS.malformed;
  return keyDigest(raw);
}

/**
 * The key's state as the database has it now (a row of `api_keys` joined to its shop, or none): throws the
 * refusal PRODUCT §2 gives (unknown or revoked → 401, no API access → 403).
 */
export function assertKeyUsable(ctx: ServiceContext, row: { revokedAt: Date | null; plan: string } | undefined | null): void {
  if (!row) throw AUTH_ERRORS.unknown;
  if (row.revokedAt) throw AUTH_ERRORS.revoked;
  if (!shopApiAccess(ctx, row.plan).allowed) throw AUTH_ERRORS.plan_required;
}

/** Confirms an unverified key with one indexed read (for operations that have no statement of their own to do it). */
export async function verifyKey({ ctx, input }: ServiceCall<KeyCheck>): Promise<void> {
  if (input.verified) return;
  assertKeyUsable(ctx, await hotStatements(ctx.db).keyStates.load(input.keyId));
  input.verified = true;
}

/** Refreshes last_used_at unless another request (on any instance) did within the last minute. */
async function touchLastUsed(ctx: ServiceContext, keyId: string, now: Date): Promise<void> {
  const cutoff = new Date(now.getTime() - LAST_USED_PRECISION_MS);
  await ctx.db.orm
    .update(apiKeys)
    .set({ lastUsedAt: now })
    .where(and(eq(apiKeys.id, keyId), isNull(apiKeys.revokedAt), or(isNull(apiKeys.lastUsedAt), lt(apiKeys.lastUsedAt, cutoff))))
    .catch((err) => ctx.warn?.({ err }, 'could not record key last use'));
}

type CachedKey = { keyId: string; shopId: string; fingerprint: string; lastUsedAt: number };

/**
 * digest → key id, shop id and fingerprint: what never changes for a key, so this cache can never be stale on
 * anything that decides access. Whether the key is revoked and whether its shop's plan allows the API are NOT
 * cached: the request's own first statement reads them (KeyCheck), so a key revoked on any instance is refused by
 * every instance on its very next request, with no invalidation messages to lose. A hit saves the lookup's round
 * trip. Only keys that existed are cached (unknown keys never enter it), bounded, oldest first out.
 */
export class KeyCache {
  private readonly entries = new Map<string, CachedKey>();
  constructor(private readonly maxEntries = 10_000) {}

  remember(digest: string, key: Omit<CachedKey, 'lastUsedAt'>, lastUsedAt: number): void {
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(digest, { ...key, lastUsedAt });
  }

  forget(digest: string): void {
    this.entries.delete(digest);
  }

  /** The key for `digest` if cached: not yet verified (its request's first statement confirms it). */
  find(digest: string): AuthenticatedKey | null {
    const hit = this.entries.get(digest);
    if (!hit) return null;
    return { keyId: hit.keyId, shopId: hit.shopId, fingerprint: hit.fingerprint, digest, verified: false };
  }

  /**
   * A cached key's request has confirmed it usable: refreshes last_used_at if this instance last did so a minute
   * ago or more (a key refused for its plan is not "used", as on the lookup path). Null when there is nothing to
   * write (nearly always), so the caller can go on without waiting.
   */
  noteUse(ctx: ServiceContext, key: AuthenticatedKey): Promise<void> | null {
    const hit = this.entries.get(key.digest);
    if (!hit || !key.verified) return null;
    const now = ctx.clock.now();
    if (now.getTime() - hit.lastUsedAt < LAST_USED_PRECISION_MS) return null;
    hit.lastUsedAt = now.getTime();
    // Never rejects: a failed write is a warning (touchLastUsed), not a failed request.
    return touchLastUsed(ctx, hit.keyId, now);
  }
}

/**
 * Looks a well-formed key's digest up through the unique index (unknown or revoked → 401) and checks the shop's
 * plan (→ 403): a verified key. The digest is compared by the index, never byte by byte in code.
 */
export async function lookupKey({ ctx, input }: ServiceCall<{ digest: string; cache?: KeyCache }>): Promise<AuthenticatedKey> {
  const { digest } = input;
  const row = await hotStatements(ctx.db).keysByDigest.load(digest);
  assertKeyUsable(ctx, row);
  const now = ctx.clock.now();
  let lastUsedAt = row!.lastUsedAt?.getTime() ?? -Infinity;
  if (now.getTime() - lastUsedAt >= LAST_USED_PRECISION_MS) {
    await touchLastUsed(ctx, row!.keyId, now);
    lastUsedAt = now.getTime();
  }
  const key = { keyId: row!.keyId, shopId: row!.shopId, fingerprint: fingerprintOf(digest) };
  input.cache?.remember(digest, key, lastUsedAt);
  return { ...key, digest, verified: true };
}

/**
 * Checks, in the order PRODUCT §2 fixes: key shape and checksum (no I/O) → lookup by digest (unknown or revoked →
 * 401) → the shop's plan (→ 403). Without a cache: every call reads the database.
 */
export async function authenticateApiKey({ ctx, input }: ServiceCall<{ authorization: string | undefined }>): Promise<AuthenticatedKey> {
  const digest = presentedKeyDigest(input.authorization);
  if (digest instanceof AuthError) throw digest;
  return lookupKey({ ctx, input: { digest } });
}
