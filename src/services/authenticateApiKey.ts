import { and, eq, isNull, lt, or } from 'drizzle-orm';
import type { KeyState } from '../db/contractRows.js';
import { keyRows } from '../db/keyRows.js';
import { apiKeys } from '../db/schema.js';
import { MESSAGES, ServiceError } from '../domain/errors.js';
import { fingerprintOf, isWellFormedKey, keyDigest } from '../domain/keys.js';
import { keyPermissions, type Permissions } from '../domain/permissions.js';
import type { ServiceCall, ServiceContext } from './context.js';
import { shopApiAccess } from './shops.js';

/**
 * What never changes about a key: who it belongs to. Safe to cache; its state (revoked? the plan, its permissions)
 * is not.
 */
export type KnownKey = { keyId: string; shopId: string; fingerprint: string; digest: string };

/** A key's permissions as its state has them now: the stored ones, or the preset its `access` names. */
export function permissionsOfState(state: Pick<KeyState, 'access' | 'permissions'>): Permissions {
  return keyPermissions(state);
}

/** last_used_at is refreshed at most this often per key, so a busy key does not write on every request. */
export const LAST_USED_PRECISION_MS = 60_000;

export type AuthFailureReason = 'missing' | 'malformed' | 'unknown' | 'revoked' | 'app_not_installed' | 'plan_required';

export class AuthError extends ServiceError {
  constructor(
    readonly reason: AuthFailureReason,
    message: string,
  ) {
    super(reason === 'plan_required' || reason === 'app_not_installed' ? reason : 'unauthorized', message);
  }
}

// Immutable and without a stack: one instance per reason serves every refusal.
export const AUTH_ERRORS: Record<AuthFailureReason, AuthError> = {
  missing: new AuthError('missing', MESSAGES.missingKey),
  malformed: new AuthError('malformed', MESSAGES.unauthorized),
  unknown: new AuthError('unknown', MESSAGES.unauthorized),
  revoked: new AuthError('revoked', MESSAGES.unauthorized),
  app_not_installed: new AuthError('app_not_installed', MESSAGES.appNotInstalled),
  plan_required: new AuthError('plan_required', MESSAGES.planRequired),
};

/** The token out of an `Authorization: Bearer <token>` header, or null. */
export function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return m ? m[1] : null;
}

/**
 * The first checks of docs/product.md §2, without I/O: a bearer token of the key's shape with a valid checksum. Returns the
 * key's digest, or the refusal. `raw`: the header's bearer token, when the caller has taken it out already.
 */
export function presentedKeyDigest(authorization: string | undefined, raw: string | null = bearerToken(authorization)): string | AuthError {
  if (raw === null) return authorization ? AUTH_ERRORS.malformed : AUTH_ERRORS.missing;
  if (!isWellFormedKey(raw)) return AUTH_ERRORS.malformed;
  return keyDigest(raw);
}

/**
 * A key's state as the database has it now (none: no such key): throws the refusal docs/product.md §2 gives (unknown or
 * revoked → 401, no API access → 403).
 */
export function assertKeyUsable(ctx: ServiceContext, state: KeyState | undefined | null): void {
  if (!state) throw AUTH_ERRORS.unknown;
  if (state.revokedAt) throw AUTH_ERRORS.revoked;
  if (state.uninstalled) throw AUTH_ERRORS.app_not_installed;
  if (!shopApiAccess(ctx, state.plan).allowed) throw AUTH_ERRORS.plan_required;
}

/** Refreshes last_used_at unless another request (on any instance) did within the last minute; never rejects. */
async function touchLastUsed(ctx: ServiceContext, keyId: string, now: Date): Promise<void> {
  const cutoff = new Date(now.getTime() - LAST_USED_PRECISION_MS);
  await ctx.db.orm
    .update(apiKeys)
    .set({ lastUsedAt: now })
    .where(and(eq(apiKeys.id, keyId), isNull(apiKeys.revokedAt), or(isNull(apiKeys.lastUsedAt), lt(apiKeys.lastUsedAt, cutoff))))
    .catch((err) => ctx.warn?.({ err }, 'could not record key last use'));
}

/**
 * digest → what never changes about a key (ids, fingerprint), so this cache can never be stale on anything
 * that decides access. Whether the key is revoked, what it may do and whether its shop's plan allows the API are NOT
 * cached: each request reads them (services/principal.ts), so a key revoked on any instance is refused by every instance on its very
 * next request, with no invalidation messages to lose. A hit saves the lookup's round trip. Only keys that existed
 * are cached (unknown keys never enter it), bounded, oldest first out.
 */
export class KeyCache {
  private readonly entries = new Map<string, { key: KnownKey; lastUsedAt: number }>();
  constructor(private readonly maxEntries = 10_000) {}

  remember(key: KnownKey, lastUsedAt: number): void {
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key.digest, { key, lastUsedAt });
  }

  forget(digest: string): void {
    this.entries.delete(digest);
  }

  find(digest: string): KnownKey | null {
    return this.entries.get(digest)?.key ?? null;
  }

  /**
   * A cached key was confirmed usable by a request: refreshes last_used_at if this instance last did so a minute ago
   * or more. Null when there is nothing to write (nearly always), so the caller can go on without waiting.
   */
  noteUse(ctx: ServiceContext, digest: string): Promise<void> | null {
    const hit = this.entries.get(digest);
    if (!hit) return null;
    const now = ctx.clock.now();
    if (now.getTime() - hit.lastUsedAt < LAST_USED_PRECISION_MS) return null;
    hit.lastUsedAt = now.getTime();
    return touchLastUsed(ctx, hit.key.keyId, now);
  }
}

/**
 * Looks a well-formed key's digest up through the unique index (unknown or revoked → 401) and checks the shop's
 * plan (→ 403): the key, confirmed usable now, with its permissions now. The digest is compared by the index, never
 * byte by byte in code.
 */
export async function lookupKey({
  ctx,
  input,
}: ServiceCall<{
  digest: string;
  cache?: KeyCache;
  /** Told which key this is as soon as it is found, before it is judged (the request log records refusals too). */
  identified?: (key: { keyId: string; shopId: string; fingerprint: string }) => void;
}>): Promise<KnownKey & { permissions: Permissions }> {
  const { digest } = input;
  const row = await keyRows(ctx.db).byDigest.load(digest);
  if (row && input.identified) input.identified({ keyId: row.keyId, shopId: row.shopId, fingerprint: fingerprintOf(digest) });
  assertKeyUsable(ctx, row);
  const now = ctx.clock.now();
  let lastUsedAt = row!.lastUsedAt?.getTime() ?? -Infinity;
  if (now.getTime() - lastUsedAt >= LAST_USED_PRECISION_MS) {
    await touchLastUsed(ctx, row!.keyId, now);
    lastUsedAt = now.getTime();
  }
  const key: KnownKey = { keyId: row!.keyId, shopId: row!.shopId, fingerprint: fingerprintOf(digest), digest };
  input.cache?.remember(key, lastUsedAt);
  return { ...key, permissions: permissionsOfState(row!) };
}

/**
 * Checks, in the order docs/product.md §2 fixes: key shape and checksum (no I/O) → lookup by digest (unknown or revoked →
 * 401) → the shop's plan (→ 403). Without a cache: every call reads the database.
 */
export async function authenticateApiKey({ ctx, input }: ServiceCall<{ authorization: string | undefined }>): Promise<KnownKey & { permissions: Permissions }> {
  const digest = presentedKeyDigest(input.authorization);
  if (digest instanceof AuthError) throw digest;
  return lookupKey({ ctx, input: { digest } });
}
