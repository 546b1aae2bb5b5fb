import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { keyRows } from '../db/keyRows.js';
import { ServiceError } from '../domain/errors.js';
import { AuthError, KeyCache, assertKeyUsable, lookupKey, presentedKeyDigest, type KnownKey } from '../services/authenticateApiKey.js';
import { assertMayChange, callerPendingConfirmation, confirmPending, isPendingConfirmation, UnconfirmedCaller, type Caller } from '../services/caller.js';
import type { ServiceContext } from '../services/context.js';
import { errorEnvelope } from '../domain/errors.js';
import { sendError, toServiceError } from './errors.js';
import { appendHook } from './hooks.js';
import type { LoggedKey } from './requestLog.js';
import { fingerprintOf } from '../domain/keys.js';
import type { AppMetrics } from './metrics.js';
import { FixedWindowLimiter, type LimitState, type RateLimitStore } from './rateLimitStore.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who is calling, once the key gate has let the request through (API and MCP routes). */
    caller?: Caller;
    /** The key the request came with, as the gate knows it (for a refusal: forget it from the cache). */
    knownKey?: KnownKey;
  }
  interface FastifyContextConfig {
    /**
     * How the key gate treats a route. `changes`: the route changes data (a read-only key gets 403
     * insufficient_scope). `confirmedByRead`: the operation's first step reads one contract, which may confirm a
     * cached key in the same statement (services/caller.ts).
     */
    apiKey?: { changes?: boolean; confirmedByRead?: boolean };
  }
}

export type RateLimitOptions = {
  /** Requests per shop per minute, over the API and MCP together (RATE_LIMIT_PER_MINUTE). */
  perMinute: number;
  /** Failed key lookups (unknown or revoked key) per client IP per minute (AUTH_FAILURE_LIMIT_PER_MINUTE). */
  authFailuresPerMinute: number;
  store: RateLimitStore;
  onStoreError?: (err: Error) => void;
};

/** The routes an API key authenticates: the public API (not its OpenAPI document) and MCP. */
export function usesApiKey(url: string | undefined): boolean {
  if (!url) return false;
  if (url.startsWith('/api/v1/')) return url !== '/api/v1/openapi.json';
  return url === '/mcp' || url.startsWith('/mcp/');
}

/** A request URL (query included) under the public API, its OpenAPI document excepted. */
export function isApiPath(url: string): boolean {
  const path = url.split('?')[0];
  return path === '/api/v1' || (path.startsWith('/api/v1/') && usesApiKey(path));
}

/** The RateLimit-* headers of the limit that applied to this request. */
function setLimitHeaders(reply: FastifyReply, s: LimitState): void {
  reply.header('ratelimit-limit', String(s.limit)).header('ratelimit-remaining', String(s.remaining)).header('ratelimit-reset', String(s.resetSeconds));
}

function rateLimited(s: LimitState, message: string): ServiceError {
  return new ServiceError('rate_limited', `${message} Retry after ${s.resetSeconds} s.`, {
    headers: {
      'retry-after': String(s.resetSeconds),
      'ratelimit-limit': String(s.limit),
      'ratelimit-remaining': '0',
      'ratelimit-reset': String(s.resetSeconds),
    },
  });
}

export type ApiKeyGate = {
  cache: KeyCache;
  /** For a request no route matched (an unknown path, a wrong method): true when the gate has answered it. */
  guardUnmatched(req: FastifyRequest, reply: FastifyReply): Promise<boolean>;
  /**
   * For the error handler, before it answers: a request that failed before its key was confirmed (a bad body on a
   * route that confirms by reading) is confirmed now, so a revoked key gets its 401 and not the validation error;
   * and a refused key is recorded (metrics, WWW-Authenticate, the failure count). Returns the error to send.
   */
  beforeErrorResponse(req: FastifyRequest, reply: FastifyReply, err: ServiceError): Promise<ServiceError>;
  /**
   * The key a request's Authorization header holds, as far as it exists (revoked or not): for the request log, of a
   * request the gate never saw (refused for a key in its URL). Null for a malformed or unknown key. A lookup is a
   * failed lookup like the gate's when it finds nothing, and is not made for an address past its allowance of them,
   * so such requests cannot be used to spray keys at the database either.
   */
  identify(req: FastifyRequest): Promise<LoggedKey | null>;
};

/**
 * Every request to a key-authenticated route (the API and MCP) passes one gate, in the order of docs/product.md §2: key
 * syntax and checksum (no I/O) → the key's state (unknown or revoked → 401) → the shop's plan (→ 403) → may the key
 * do this (a read-only key and a change → 403) → the shop's rate limit → the operation, which receives the caller
 * ({ shop, actor, access }). It runs in onRequest, before the body is read or any input validated: an
 * unauthenticated caller learns nothing and costs no parsing.
 *
 * Keys the process has seen are in a KeyCache (ids only, never access state): a hit saves the lookup by digest, and
 * the key's state is read by the request itself, either by one indexed read here or, on the routes that read one
 * contract first, in the same statement as that contract (services/caller.ts). So a key revoked on any instance is
 * refused by every instance on its very next request.
 *
 * The limits (when configured):
 * - Failed key lookups per client IP. A request from an IP that has used up its failures and carries a well-formed
 *   key not in the cache is refused with 429 before the lookup, so spraying keys costs the database nothing.
 *   Malformed keys are refused by their checksum without I/O and are not counted.
 * - Requests per shop, counted once the key is confirmed usable and allowed the request.
 * Every response that reached a limit carries RateLimit-Limit / -Remaining / -Reset for the limit that applied:
 * the shop's once authenticated, the IP's failed-lookup allowance before.
 *
 * A small fixed-window limiter instead of @fastify/rate-limit: that plugin keys one limit per hook and counts every
 * request, while the failure limit counts only failed lookups and must be checked before authentication, and the
 * shop limit after it; its clock is not injectable either, and tests must move time instead of sleeping.
 */
export function installApiKeyGate(
  app: FastifyInstance,
  opts: { ctx: ServiceContext; rateLimit?: RateLimitOptions; metrics?: AppMetrics; cache?: KeyCache },
): ApiKeyGate {
  const { ctx, metrics } = opts;
  const cache = opts.cache ?? new KeyCache();
  const limiter = (name: string, limit: number) =>
    new FixedWindowLimiter(opts.rateLimit!.store, { name, limit, clock: ctx.clock, onStoreError: opts.rateLimit!.onStoreError });
  const limits = opts.rateLimit
    ? { perShop: limiter('shop', opts.rateLimit.perMinute), failures: limiter('authfail', opts.rateLimit.authFailuresPerMinute) }
    : null;

  /** An unknown or revoked key: a failed lookup, counted against the client's address. */
  const isFailedLookup = (err: unknown) => err instanceof AuthError && (err.reason === 'unknown' || err.reason === 'revoked');

  /** Metrics, WWW-Authenticate, the failed-lookup count, and no cached entry left for a refused key. */
  const recordRefusal = async (req: FastifyRequest, reply: FastifyReply, err: AuthError, counted = false): Promise<void> => {
    metrics?.authFailure(err.reason);
    if (err.code === 'unauthorized') reply.header('www-authenticate', 'Bearer');
    if (req.knownKey) cache.forget(req.knownKey.digest);
    req.knownKey = undefined;
    req.caller = undefined;
    if (!limits) return;
    // A refusal shows the IP's allowance of failed lookups, and an unknown or revoked key uses one up (unless it was
    // counted before its lookup).
    const s = isFailedLookup(err) && !counted ? await limits.failures.consume(req.ip) : await limits.failures.peek(req.ip);
    setLimitHeaders(reply, s);
  };

  /** The key is usable: may it do this, then the shop's limit; then it counts as used. Throws the refusal. */
  const admit = async (reply: FastifyReply, key: KnownKey, changes: boolean): Promise<void> => {
    if (changes && key.access !== 'read_write') {
      // Refused before the shop's limit, so it costs the shop nothing; the answer still shows the shop's budget.
      if (limits) setLimitHeaders(reply, await limits.perShop.peek(key.shopId));
      assertMayChange(key);
    }
    if (limits) {
      const s = await limits.perShop.consume(key.shopId);
      setLimitHeaders(reply, s);
      if (s.exceeded) {
        metrics?.rateLimited('shop');
        throw rateLimited(s, `Too many requests for this shop: the limit is ${s.limit} per minute.`);
      }
    }
    const touching = cache.noteUse(ctx, key.digest);
    if (touching) await touching;
  };

  const callerOf = (req: FastifyRequest, key: KnownKey): Caller => ({
    shopId: key.shopId,
    actor: { type: req.url.startsWith('/mcp') ? 'mcp' : 'api_key', keyFingerprint: key.fingerprint },
    access: key.access,
  });

  /** Answers the request with a refusal (and records it): the request goes no further. */
  const refuse = async (req: FastifyRequest, reply: FastifyReply, err: unknown, counted = false): Promise<FastifyReply> => {
    if (err instanceof AuthError) await recordRefusal(req, reply, err, counted);
    if (err instanceof ServiceError) return sendError(reply, err);
    throw err;
  };

  const gate = async (req: FastifyRequest, reply: FastifyReply, mayFold: boolean): Promise<FastifyReply | void> => {
    const digest = presentedKeyDigest(req.headers.authorization);
    const cached = typeof digest === 'string' ? cache.find(digest) : null;
    // A key the database must be asked about counts as a failed lookup from the start, and is given back once it
    // turns out to be no failure: requests that arrive together cannot all pass an allowance none of them has used
    // up yet.
    let reserved: Awaited<ReturnType<FixedWindowLimiter['reserve']>> | null = null;
    if (!cached && limits) {
      if (typeof digest === 'string') {
        reserved = await limits.failures.reserve(req.ip);
        setLimitHeaders(reply, reserved.state);
        if (reserved.state.exceeded) {
          await reserved.release();
          metrics?.rateLimited('auth_failures');
          return sendError(reply, rateLimited(reserved.state, 'Too many failed authentications from this address.'));
        }
      } else setLimitHeaders(reply, await limits.failures.peek(req.ip));
    }
    if (digest instanceof AuthError) return refuse(req, reply, digest);
    const config = mayFold ? (req.routeOptions.config.apiKey ?? {}) : {};
    const changes = !!config.changes;
    let key: KnownKey;
    try {
      if (cached) {
        req.knownKey = req.loggedKey = key = cached;
        // With an Idempotency-Key the key is confirmed first: nothing is claimed for a key that is not usable.
        if (config.confirmedByRead && req.headers['idempotency-key'] === undefined) {
          req.caller = callerPendingConfirmation(callerOf(req, key), {
            keyId: key.keyId,
            settle: async (state) => {
              assertKeyUsable(ctx, state);
              await admit(reply, key, changes);
            },
          });
          return;
        }
        assertKeyUsable(ctx, await keyRows(ctx.db).states.load(key.keyId));
      } else {
        // Identified before it is judged: a refusal of a known key (revoked, no plan) goes to its shop's request log.
        req.knownKey = key = await lookupKey({ ctx, input: { digest, cache, identified: (k) => (req.loggedKey = k) } });
      }
      if (reserved) await reserved.release();
      await admit(reply, key, changes);
    } catch (err) {
      if (reserved && !isFailedLookup(err)) await reserved.release();
      return refuse(req, reply, err, reserved !== null);
    }
    req.caller = callerOf(req, key);
  };

  /**
   * The last word on a route whose key a contract read confirms (services/caller.ts): an answer that would leave while
   * the confirmation never ran is refused with 401 instead, whatever the route did. Fail closed by construction.
   */
  const unconfirmedGuard = async (req: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    if (!req.caller || reply.statusCode >= 400 || !isPendingConfirmation(req.caller)) return payload;
    req.log.error({ route: req.routeOptions.url }, 'an answer was about to leave for a key never confirmed: refused');
    reply.code(401).header('content-type', 'application/json; charset=utf-8').header('www-authenticate', 'Bearer');
    const refusal = new UnconfirmedCaller();
    req.errorCode = refusal.code;
    return JSON.stringify(errorEnvelope(refusal, String(req.id)));
  };

  app.addHook('onRoute', (route) => {
    if (!usesApiKey(route.url)) return;
    route.onRequest = appendHook(route.onRequest, (req: FastifyRequest, reply: FastifyReply) => gate(req, reply, true));
    if ((route.config as { apiKey?: { confirmedByRead?: boolean } } | undefined)?.apiKey?.confirmedByRead) route.onSend = appendHook(route.onSend, unconfirmedGuard);
  });

  return {
    cache,
    async guardUnmatched(req, reply) {
      await gate(req, reply, false);
      return reply.sent;
    },
    async beforeErrorResponse(req, reply, err) {
      let final = err;
      if (req.caller && err.status < 500 && !(err instanceof AuthError)) {
        try {
          await confirmPending(ctx, req.caller);
        } catch (refusal) {
          // The key's check failed to run (the database is unreachable, say): that, not the client's error, is the
          // answer (503), as it would have been had the check come first.
          final = refusal instanceof ServiceError ? refusal : toServiceError(refusal, req);
        }
      }
      if (final instanceof AuthError && req.knownKey) await recordRefusal(req, reply, final);
      return final;
    },
    async identify(req) {
      const digest = presentedKeyDigest(req.headers.authorization);
      if (typeof digest !== 'string') return null;
      const cached = cache.find(digest);
      if (cached) return cached;
      const reserved = limits ? await limits.failures.reserve(req.ip) : null;
      if (reserved?.state.exceeded) {
        await reserved.release();
        return null;
      }
      let row;
      try {
        row = await keyRows(ctx.db).byDigest.load(digest);
      } catch (err) {
        await reserved?.release();
        throw err;
      }
      if (!row) return null;
      await reserved?.release();
      return { keyId: row.keyId, shopId: row.shopId, fingerprint: fingerprintOf(digest) };
    },
  };
}
