import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { keyRows } from '../db/keyRows.js';
import { ServiceError } from '../domain/errors.js';
import { isOperationName, needsOf, OPERATIONS, type OperationName, type OperationPolicy } from '../domain/operations.js';
import { AuthError, KeyCache, lookupKey, presentedKeyDigest, type KnownKey } from '../services/authenticateApiKey.js';
import { grantCaller, keyCaller, resolvedCaller, type Admission, type Caller, type ShopPrincipal } from '../services/principal.js';
import type { ServiceContext } from '../services/context.js';
import { errorEnvelope } from '../domain/errors.js';
import { sendError, toServiceError } from './errors.js';
import { usesApiKey } from './apiPaths.js';
import { appendHook } from './hooks.js';
import type { LoggedKey } from './requestLog.js';
import { fingerprintOf } from '../domain/keys.js';
import type { AppMetrics } from './metrics.js';
import { FixedWindowLimiter, type LimitState, type RateLimitStore } from './rateLimitStore.js';
import { ACCESS_TOKEN_PREFIX, tokenDigest } from '../domain/oauth.js';
import { KEY_PREFIX } from '../domain/keys.js';
import { authenticateAccessToken, INVALID_TOKEN, TokenCache, tokenFits, type KnownToken } from '../services/oauth/accessTokens.js';
import { bearerToken } from '../services/authenticateApiKey.js';
import { mcpResourceOf, protectedResourceMetadataUrl } from './oauth/urls.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who is calling (API and MCP routes), once the gate has identified the key: resolved to a principal at most once. */
    caller?: Caller;
    /** The caller's principal, once resolved and authorized for the route's operation (routes that do not read first). */
    principal?: ShopPrincipal;
    /** The key the request came with, as the gate knows it (for a refusal: forget it from the cache). */
    knownKey?: KnownKey;
  }
  interface FastifyContextConfig {
    /** The MCP endpoint: its exchange decides when and for what its caller is resolved (mcp/http.ts). */
    mcp?: boolean;
  }
}

/** An OAuth access token sent to the API: 401, saying where it works. */
const OAUTH_TOKEN_ON_API = new AuthError('malformed', 'An OAuth access token works on /mcp only; the API takes an API key (Authorization: Bearer svc_live_…).');

type Reservation = Awaited<ReturnType<FixedWindowLimiter['reserve']>>;

export type RateLimitOptions = {
  /** Requests per shop per minute, over the API and MCP together (RATE_LIMIT_PER_MINUTE). */
  perMinute: number;
  /** Failed key lookups (unknown or revoked key) per client IP per minute (AUTH_FAILURE_LIMIT_PER_MINUTE). */
  authFailuresPerMinute: number;
  store: RateLimitStore;
  onStoreError?: (err: Error) => void;
};

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
   * For the error handler, before it answers: a request that failed before its caller was resolved (a bad body on a
   * route that resolves with its first read) is resolved now, for what its body asked, so a revoked key gets its 401
   * and a key without the permission its 403, not the validation error; and a refused key is recorded (metrics,
   * WWW-Authenticate, the failure count). Returns the error to send.
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

/** A route's operation (its OpenAPI operationId) and that operation's policy; none for MCP. */
const operationOf = (req: FastifyRequest): OperationName | null => {
  const id = (req.routeOptions.schema as { operationId?: string } | undefined)?.operationId;
  return id && isOperationName(id) ? id : null;
};

/**
 * Every request to a key-authenticated route (the API and MCP) passes one gate, in the order of docs/product.md §2: key
 * syntax and checksum (no I/O) → the key's state (unknown or revoked → 401) → the shop's plan (→ 403) → the
 * permission the operation needs (→ 403 insufficient_scope; domain/operations.ts) → the shop's rate limit → the
 * operation, which receives the principal ({ shop, actor, permissions }). The key is identified in onRequest, before
 * the body is read: an unknown key is looked up (and refused) there, costing no parsing.
 *
 * Keys the process has seen are in a KeyCache (ids only, never their state): a hit saves the lookup by digest, and
 * the key's state is read by the request itself, either here (one indexed read) or, on the routes whose first step
 * reads one contract, in the same statement as that contract (services/runner.ts withContract). So a key revoked, or
 * its permissions changed, on any instance holds on every instance from its very next request. Each route's
 * principal is resolved where its needs are known: in onRequest for an operation whose needs are fixed, after the
 * body is parsed for one whose body says what runs (an action, a bulk job), by the first read for a route that reads
 * one contract first.
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
  opts: { ctx: ServiceContext; rateLimit?: RateLimitOptions; metrics?: AppMetrics; cache?: KeyCache; publicUrl?: string },
): ApiKeyGate {
  const { ctx, metrics } = opts;
  const cache = opts.cache ?? new KeyCache();
  const tokens = new TokenCache();
  const limiter = (name: string, limit: number) =>
    new FixedWindowLimiter(opts.rateLimit!.store, { name, limit, clock: ctx.clock, onStoreError: opts.rateLimit!.onStoreError });
  const limits = opts.rateLimit
    ? { perShop: limiter('shop', opts.rateLimit.perMinute), failures: limiter('authfail', opts.rateLimit.authFailuresPerMinute) }
    : null;

  /** An unknown or revoked key: a failed lookup, counted against the client's address. */
  const isFailedLookup = (err: unknown) => err instanceof AuthError && (err.reason === 'unknown' || err.reason === 'revoked');

  /**
   * The challenge of a 401. On /mcp (an OAuth protected resource, docs/mcp-assistants.md) a request without a key
   * gets the discovery of RFC 9728 (`resource_metadata`), and a bad OAuth token `error="invalid_token"` too, so a
   * client refreshes or connects again; a request that presented an API key never does: its client was configured
   * with the header, and is told only that the key failed, as on the API.
   */
  const challenge = (req: FastifyRequest): string => {
    if (!req.url.startsWith('/mcp')) return 'Bearer';
    const raw = bearerToken(req.headers.authorization);
    if (raw?.startsWith(KEY_PREFIX)) return 'Bearer';
    const discovery = `resource_metadata="${protectedResourceMetadataUrl(opts.publicUrl, req)}"`;
    return raw === null ? `Bearer ${discovery}` : `Bearer error="invalid_token", ${discovery}`;
  };

  /** Metrics, WWW-Authenticate, the failed-lookup count, and no cached entry left for a refused key. */
  const recordRefusal = async (req: FastifyRequest, reply: FastifyReply, err: AuthError, counted = false): Promise<void> => {
    metrics?.authFailure(err.reason);
    if (err.code === 'unauthorized') reply.header('www-authenticate', challenge(req));
    if (req.knownKey) cache.forget(req.knownKey.digest);
    const raw = bearerToken(req.headers.authorization);
    if (raw?.startsWith(ACCESS_TOKEN_PREFIX) && isFailedLookup(err)) tokens.forget(tokenDigest(raw));
    req.knownKey = undefined;
    req.caller = undefined;
    if (!limits) return;
    // A refusal shows the IP's allowance of failed lookups, and an unknown or revoked key uses one up (unless it was
    // counted before its lookup).
    const s = isFailedLookup(err) && !counted ? await limits.failures.consume(req.ip) : await limits.failures.peek(req.ip);
    setLimitHeaders(reply, s);
  };

  /** The shop's limit, counted once the caller may act. Throws the refusal. */
  const consumeShopLimit = async (reply: FastifyReply, shopId: string) => {
    if (!limits) return;
    const s = await limits.perShop.consume(shopId);
    setLimitHeaders(reply, s);
    if (s.exceeded) {
      metrics?.rateLimited('shop');
      throw rateLimited(s, `Too many requests for this shop: the limit is ${s.limit} per minute.`);
    }
  };

  /** The principal may act: the shop's limit, then the key (or the connection) counts as used. Throws the refusal. */
  const admission =
    (reply: FastifyReply, used: { key: KnownKey } | { tokenDigest: string }): Admission =>
    async (principal) => {
      await consumeShopLimit(reply, principal.shopId);
      const touching = 'key' in used ? cache.noteUse(ctx, used.key.digest) : tokens.noteUse(ctx, used.tokenDigest);
      if (touching) await touching;
    };

  /**
   * A lookup the database must be asked about counts as a failed lookup from the start, and is given back once it
   * turns out to be no failure: requests that arrive together cannot all pass an allowance none of them has used up
   * yet. The reservation, or the 429 already sent for an address past its allowance.
   */
  const reserveLookup = async (req: FastifyRequest, reply: FastifyReply): Promise<Reservation | FastifyReply> => {
    const reserved = await limits!.failures.reserve(req.ip);
    setLimitHeaders(reply, reserved.state);
    if (!reserved.state.exceeded) return reserved;
    await reserved.release();
    metrics?.rateLimited('auth_failures');
    return sendError(reply, rateLimited(reserved.state, 'Too many failed authentications from this address.'));
  };

  const actorOf = (req: FastifyRequest, key: KnownKey) => ({ type: req.url.startsWith('/mcp') ? ('mcp' as const) : ('api_key' as const), keyFingerprint: key.fingerprint });

  /** A refusal for want of a permission costs the shop nothing, and still shows the shop's budget. */
  const showShopBudget = async (reply: FastifyReply, req: FastifyRequest, err: ServiceError) => {
    if (err.code === 'insufficient_scope' && limits && req.caller?.resolved) setLimitHeaders(reply, await limits.perShop.peek(req.caller.resolved.shopId));
  };

  /** Answers the request with a refusal (and records it): the request goes no further. */
  const refuse = async (req: FastifyRequest, reply: FastifyReply, err: unknown, counted = false): Promise<FastifyReply> => {
    if (err instanceof AuthError) await recordRefusal(req, reply, err, counted);
    if (err instanceof ServiceError) await showShopBudget(reply, req, err);
    if (err instanceof ServiceError) return sendError(reply, err);
    throw err;
  };

  /**
   * An OAuth access token on /mcp (services/oauth/accessTokens.ts). A token seen before is checked here (expiry,
   * resource) and its grant's state read by the request, as a cached key's is; an unknown one is looked up, counted
   * as a failed lookup like an unknown key until found.
   */
  const identifyGrant = async (req: FastifyRequest, reply: FastifyReply, raw: string): Promise<Caller | FastifyReply> => {
    const digest = tokenDigest(raw);
    const resource = mcpResourceOf(opts.publicUrl, req);
    const known = tokens.find(digest);
    const logAs = (t: KnownToken) => (req.loggedKey = { shopId: t.shopId, keyId: null, fingerprint: null, grantId: t.grantId });
    if (known) {
      logAs(known);
      if (!tokenFits(ctx, known, resource)) {
        tokens.forget(digest);
        return refuse(req, reply, INVALID_TOKEN);
      }
      return grantCaller({ grantId: known.grantId, shopId: known.shopId }, admission(reply, { tokenDigest: digest }));
    }
    const reserved = limits ? await reserveLookup(req, reply) : null;
    if (reserved && !('release' in reserved)) return reserved;
    try {
      const { principal, token, lastUsedAt } = await authenticateAccessToken(ctx, digest, resource, logAs);
      if (reserved) await reserved.release();
      tokens.remember(digest, token, lastUsedAt);
      return resolvedCaller(principal, admission(reply, { tokenDigest: digest }));
    } catch (err) {
      if (reserved && !isFailedLookup(err)) await reserved.release();
      return refuse(req, reply, err, reserved !== null);
    }
  };

  /** Identifies the key (looked up unless cached): the request's caller. Answers the refusal when there is one. */
  const identify = async (req: FastifyRequest, reply: FastifyReply): Promise<Caller | FastifyReply> => {
    const raw = bearerToken(req.headers.authorization);
    if (raw?.startsWith(ACCESS_TOKEN_PREFIX)) {
      // An OAuth access token works on /mcp only: on the API it is no key (401).
      if (req.url.startsWith('/mcp')) return identifyGrant(req, reply, raw);
      return refuse(req, reply, OAUTH_TOKEN_ON_API);
    }
    const digest = presentedKeyDigest(req.headers.authorization, raw);
    const cached = typeof digest === 'string' ? cache.find(digest) : null;
    let reserved: Reservation | null = null;
    if (!cached && limits) {
      if (typeof digest === 'string') {
        const r = await reserveLookup(req, reply);
        if (!('release' in r)) return r;
        reserved = r;
      } else setLimitHeaders(reply, await limits.failures.peek(req.ip));
    }
    if (digest instanceof AuthError) return refuse(req, reply, digest);
    if (cached) {
      req.knownKey = req.loggedKey = cached;
      return keyCaller({ keyId: cached.keyId, shopId: cached.shopId, actor: actorOf(req, cached) }, admission(reply, { key: cached }));
    }
    try {
      // Identified before it is judged: a refusal of a known key (revoked, no plan) goes to its shop's request log.
      const found = await lookupKey({ ctx, input: { digest, cache, identified: (k) => (req.loggedKey = k) } });
      if (reserved) await reserved.release();
      req.knownKey = found;
      const principal: ShopPrincipal = { kind: 'shop', shopId: found.shopId, actor: actorOf(req, found), permissions: found.permissions, who: 'This API key', keyId: found.keyId };
      return resolvedCaller(principal, admission(reply, { key: found }));
    } catch (err) {
      if (reserved && !isFailedLookup(err)) await reserved.release();
      return refuse(req, reply, err, reserved !== null);
    }
  };

  /**
   * onRequest: the key identified, and for a route whose needs are fixed and that does not read first, the principal
   * resolved, authorized and admitted; for one whose body says what it needs, resolved now (a revoked key is refused
   * before its body is read) and authorized in preValidation.
   */
  const gate = async (req: FastifyRequest, reply: FastifyReply, name: OperationName | null): Promise<FastifyReply | void> => {
    const caller = await identify(req, reply);
    if (!('principal' in caller)) return caller;
    req.caller = caller;
    if (!name) return;
    const op = OPERATIONS[name] as OperationPolicy;
    const resolvesByRead = op.readsContract && req.headers['idempotency-key'] === undefined;
    if (resolvesByRead) return;
    try {
      if (typeof op.needs === 'function') await caller.resolve(ctx);
      else req.principal = await caller.principal(ctx, op.needs);
    } catch (err) {
      return refuse(req, reply, err);
    }
  };

  /**
   * preValidation, for an operation whose body says what it needs (not resolved by a first read). A callback hook:
   * on the hottest of them (an action) it has nothing to do, and says so without a promise.
   */
  const authorizeBody = (req: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
    const name = operationOf(req);
    const caller = req.caller;
    if (!caller || !name || req.principal) return done();
    const op = OPERATIONS[name] as OperationPolicy;
    if (op.readsContract && req.headers['idempotency-key'] === undefined) return done();
    caller.principal(ctx, needsOf(name, req.body)).then((p) => {
      req.principal = p;
      done();
    }, done);
  };

  /**
   * The last word on a key-authenticated route: an answer that would leave while its caller was never resolved is
   * refused with 401 instead, whatever the route did. Fail closed by construction.
   */
  const unresolvedGuard = async (req: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    if (!req.caller || reply.statusCode >= 400 || req.caller.settled) return payload;
    req.log.error({ route: req.routeOptions.url }, 'an answer was about to leave for a caller never resolved: refused');
    reply.code(401).header('content-type', 'application/json; charset=utf-8').header('www-authenticate', 'Bearer');
    const refusal = new ServiceError('unauthorized', 'The API key could not be confirmed for this request.');
    req.errorCode = refusal.code;
    return JSON.stringify(errorEnvelope(refusal, String(req.id)));
  };

  app.addHook('onRoute', (route) => {
    if (!usesApiKey(route.url)) return;
    const isMcp = (route.config as { mcp?: boolean } | undefined)?.mcp === true;
    const id = (route.schema as { operationId?: string } | undefined)?.operationId;
    // Fail closed: a route of the API whose operation has no policy does not start.
    if (!isMcp && !(id && isOperationName(id))) throw new Error(`${route.method} ${route.url}: no policy for operation "${id}" in domain/operations.ts`);
    const name = isMcp ? null : (id as OperationName);
    route.onRequest = appendHook(route.onRequest, (req: FastifyRequest, reply: FastifyReply) => gate(req, reply, name));
    if (name && typeof OPERATIONS[name].needs === 'function') route.preValidation = appendHook(route.preValidation, authorizeBody);
    route.onSend = appendHook(route.onSend, unresolvedGuard);
  });

  return {
    cache,
    async guardUnmatched(req, reply) {
      const caller = await identify(req, reply);
      if (!('principal' in caller)) return true;
      try {
        await caller.principal(ctx, []);
      } catch (err) {
        await refuse(req, reply, err);
      }
      return reply.sent;
    },
    async beforeErrorResponse(req, reply, err) {
      let final = err;
      const caller = req.caller;
      if (caller && !caller.settled && err.status < 500 && !(err instanceof AuthError)) {
        try {
          const name = operationOf(req);
          await caller.principal(ctx, name ? needsOf(name, req.body) : []);
        } catch (refusal) {
          // The caller's check failed to run (the database is unreachable, say): that, not the client's error, is the
          // answer (503), as it would have been had the check come first.
          final = refusal instanceof ServiceError ? refusal : toServiceError(refusal, req);
        }
      }
      await showShopBudget(reply, req, final);
      // A key or a connection refused by its state, read after the gate let it through (revoked meanwhile, say).
      if (final instanceof AuthError && (req.knownKey || req.loggedKey?.grantId)) await recordRefusal(req, reply, final);
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
