import type { FastifyInstance, FastifyReply, FastifyRequest, onSendHookHandler } from 'fastify';
import { ServiceError } from '../domain/errors.js';
import {
  AuthError,
  KeyCache,
  lookupKey,
  presentedKeyDigest,
  verifyKey,
  type AuthenticatedKey,
} from '../services/authenticateApiKey.js';
import type { Clock, ServiceContext } from '../services/context.js';
import { errorBody, sendError, toServiceError } from './errors.js';
import { appendHook } from './hooks.js';
import type { AppMetrics } from './metrics.js';
import { FixedWindowLimiter, type CountedState, type LimitState, type RateLimitStore } from './rateLimitStore.js';

declare module 'fastify' {
  interface FastifyRequest {
    apiKey?: AuthenticatedKey;
    /** The unit of the shop's limit this request was counted for, while its key is unconfirmed (refunded if refused). */
    shopLimitCharge?: CountedState;
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

/**
 * Every request to a key-authenticated route (the API and MCP) passes one gate, in the order of PRODUCT §2/§8:
 * key syntax and checksum (no I/O) → lookup by digest (unknown or revoked → 401) → the shop's plan (→ 403) → the
 * shop's rate limit → the operation. It runs in onRequest, before the body is read or any input validated: an
 * unauthenticated caller learns nothing and costs no parsing.
 *
 * Keys the process has seen are in a KeyCache (ids only, never access state): a hit skips the lookup's round trip,
 * and the operation's first statement confirms the key (revoked? plan?) in the same round trip as its data
 * (KeyCheck). A response that no statement confirmed (a validation error, a 404 from the router, a 429) is held in
 * onSend until one indexed read has, so no client ever gets anything but the refusal from a revoked key, on any
 * instance, from the moment the revocation commits.
 *
 * The limits (when configured):
 * - Failed key lookups per client IP. A request from an IP that has used up its failures and carries a well-formed
 *   key not in the cache is refused with 429 before the lookup, so spraying keys costs the database nothing.
 *   Malformed keys are refused by their checksum without I/O and are not counted.
 * - Requests per shop, counted right after authentication, before the body is read.
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
): { cache: KeyCache; guardUnmatched(req: FastifyRequest, reply: FastifyReply): Promise<boolean> } {
  const { ctx, metrics } = opts;
  const cache = opts.cache ?? new KeyCache();
  const clock: Clock = ctx.clock;
  const limits = opts.rateLimit
    ? {
        perShop: new FixedWindowLimiter(opts.rateLimit.store, { name: 'shop', limit: opts.rateLimit.perMinute, clock, onStoreError: opts.rateLimit.onStoreError }),
        failures: new FixedWindowLimiter(opts.rateLimit.store, {
          name: 'authfail',
          limit: opts.rateLimit.authFailuresPerMinute,
          clock,
          onStoreError: opts.rateLimit.onStoreError,
        }),
      }
    : null;

  /**
   * Metrics, WWW-Authenticate, the failed-lookup count, and no cached entry left for a refused key. The request then
   * has no key any more: nothing later (the onSend check) asks the database about it again or counts it twice.
   */
  const recordRefusal = async (req: FastifyRequest, reply: FastifyReply, err: AuthError): Promise<void> => {
    metrics?.authFailure(err.reason);
    if (err.code === 'unauthorized') reply.header('www-authenticate', 'Bearer');
    if (req.apiKey) {
      cache.forget(req.apiKey.digest);
      req.apiKey = undefined;
    }
    // A cached key is counted against its shop's limit before its statement confirms it; refused, it does not
    // count (PRODUCT §2: the limit comes after the key and the plan), and the response shows the IP's allowance
    // of failed lookups, as a refusal on the lookup path does.
    const charge = req.shopLimitCharge;
    req.shopLimitCharge = undefined;
    if (!limits) return;
    if (charge) await limits.perShop.refund(charge);
    const s = err.reason === 'unknown' || err.reason === 'revoked' ? await limits.failures.consume(req.ip) : await limits.failures.peek(req.ip);
    if (s) setLimitHeaders(reply, s);
  };

  /** The key is confirmed usable: its charge on the shop's limit stands, and it counts as used (null: nothing to write). */
  const accepted = (req: FastifyRequest, key: AuthenticatedKey): Promise<void> | null => {
    req.shopLimitCharge = undefined;
    return cache.noteUse(ctx, key);
  };

  const refuse = async (req: FastifyRequest, reply: FastifyReply, err: AuthError): Promise<FastifyReply> => {
    await recordRefusal(req, reply, err);
    return sendError(reply, err);
  };

  const gate = async (req: FastifyRequest, reply: FastifyReply) => {
    const digest = presentedKeyDigest(req.headers.authorization);
    let key = typeof digest === 'string' ? cache.find(digest) : null;
    if (!key && limits) {
      const s = await limits.failures.peek(req.ip);
      if (s) {
        setLimitHeaders(reply, s);
        if (s.exceeded && typeof digest === 'string') {
          metrics?.rateLimited('auth_failures');
          return sendError(reply, rateLimited(s, 'Too many failed authentications from this address.'));
        }
      }
    }
    if (digest instanceof AuthError) return refuse(req, reply, digest);
    if (!key) {
      try {
        key = await lookupKey({ ctx, input: { digest, cache } });
      } catch (err) {
        if (err instanceof AuthError) return refuse(req, reply, err);
        throw err;
      }
    }
    req.apiKey = key;
    if (!limits) return;
    const s = await limits.perShop.consume(key.shopId);
    if (!s) return;
    if (!key.verified) req.shopLimitCharge = s;
    setLimitHeaders(reply, s);
    if (s.exceeded) {
      // A 429 says the key is good: confirm it first, as every other answer does.
      try {
        await verifyKey({ ctx, input: key });
      } catch (err) {
        if (err instanceof AuthError) return refuse(req, reply, err);
        throw err;
      }
      metrics?.rateLimited('shop');
      return sendError(reply, rateLimited(s, `Too many requests for this shop: the limit is ${s.limit} per minute.`));
    }
  };

  // The backstop: nothing leaves for an unconfirmed key until the database has confirmed it.
  const confirmBeforeSending: onSendHookHandler = (req, reply, payload, done) => {
    const key = req.apiKey;
    // A 5xx says nothing about the key or the data (and the database it would ask is likely the trouble).
    if (!key || reply.statusCode >= 500) return done(null, payload);
    if (key.verified) {
      const touching = accepted(req, key);
      if (!touching) return done(null, payload);
      touching.then(() => done(null, payload));
      return;
    }
    verifyKey({ ctx, input: key }).then(
      async () => {
        await accepted(req, key);
        done(null, payload);
      },
      async (err: unknown) => {
        const refusal = err instanceof AuthError ? err : toServiceError(err, req);
        if (err instanceof AuthError) await recordRefusal(req, reply, err);
        if (refusal.headers) reply.headers(refusal.headers);
        reply.code(refusal.status).type('application/json; charset=utf-8');
        done(null, JSON.stringify(errorBody(refusal, String(req.id))));
      },
    );
  };

  // Refusals thrown by an operation (its statement found the key revoked, or the plan gone).
  app.addHook('onError', async (req, reply, err) => {
    if (err instanceof AuthError && req.apiKey) await recordRefusal(req, reply, err);
  });

  app.addHook('onRoute', (route) => {
    if (!usesApiKey(route.url)) return;
    route.onRequest = appendHook(route.onRequest, gate);
    route.onSend = appendHook(route.onSend, confirmBeforeSending);
  });

  /**
   * The gate for a request no route matched (an unknown path, a wrong method): true when it has been answered (a
   * refusal or a 429). Otherwise the key is confirmed here, since no statement of an operation will, and the caller
   * answers 404 or 405 with the shop's RateLimit headers.
   */
  const guardUnmatched = async (req: FastifyRequest, reply: FastifyReply): Promise<boolean> => {
    await gate(req, reply);
    if (reply.sent) return true;
    const key = req.apiKey;
    if (!key) return false;
    try {
      await verifyKey({ ctx, input: key });
    } catch (err) {
      if (!(err instanceof AuthError)) throw err;
      await refuse(req, reply, err);
      return true;
    }
    await accepted(req, key);
    return false;
  };
  return { cache, guardUnmatched };
}
