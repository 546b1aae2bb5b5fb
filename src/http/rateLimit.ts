import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isWellFormedKey } from '../domain/keys.js';
import { ServiceError } from '../domain/errors.js';
import { AuthError, bearerToken } from '../services/authenticateApiKey.js';
import type { Clock } from '../services/context.js';
import { appendHook } from './hooks.js';
import type { AppMetrics } from './metrics.js';
import { FixedWindowLimiter, type LimitState, type RateLimitStore } from './rateLimitStore.js';

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

/** Requests already counted against their shop (the shop check is hooked at two stages; see below). */
const shopCounted = new WeakSet<FastifyRequest>();

/**
 * On the reply and on the raw response too: a route that hijacks the reply and writes the response itself (the
 * MCP transport) still sends them. A normal reply writes its own values over the raw ones.
 */
function setHeaders(reply: FastifyReply, s: LimitState): void {
  const values = { 'ratelimit-limit': String(s.limit), 'ratelimit-remaining': String(s.remaining), 'ratelimit-reset': String(s.resetSeconds) };
  for (const [name, value] of Object.entries(values)) {
    reply.header(name, value);
    if (!reply.raw.headersSent) reply.raw.setHeader(name, value);
  }
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
 * The two limits of PRODUCT §2/§8, in its order of checks (key syntax → lookup → plan → rate limit → operation):
 *
 * - Failed key lookups per client IP. A request from an IP that has used up its failures and carries a well-formed
 *   key is refused with 429 before the lookup, so spraying keys costs the database nothing. Malformed keys are
 *   refused by their checksum without I/O and are not counted: they cost nothing and never authenticate.
 * - Requests per shop, checked right after authentication (a route-level hook runs after every plugin-level one,
 *   wherever a surface authenticates: onRequest for the API, preHandler for MCP), before the body is read.
 *
 * Every response of a key-authenticated route that reached these checks carries RateLimit-Limit / -Remaining /
 * -Reset for the limit that applied: the shop's once authenticated, the IP's failed-lookup allowance before.
 *
 * A small fixed-window limiter instead of @fastify/rate-limit: that plugin keys one limit per hook and counts every
 * request, while the failure limit counts only failed lookups and must be checked before authentication, and the
 * shop limit after it; its clock is not injectable either, and tests must move time instead of sleeping.
 */
export function installRateLimits(
  app: FastifyInstance,
  opts: RateLimitOptions & { clock: Clock; metrics?: AppMetrics },
): void {
  const common = { clock: opts.clock, onStoreError: opts.onStoreError };
  const perShop = new FixedWindowLimiter(opts.store, { name: 'shop', limit: opts.perMinute, ...common });
  const failures = new FixedWindowLimiter(opts.store, { name: 'authfail', limit: opts.authFailuresPerMinute, ...common });

  app.addHook('onRequest', async (req, reply) => {
    if (!usesApiKey(req.routeOptions.url)) return;
    const s = await failures.peek(req.ip);
    if (!s) return;
    setHeaders(reply, s);
    const token = bearerToken(req.headers.authorization);
    if (s.exceeded && token !== null && isWellFormedKey(token)) {
      opts.metrics?.rateLimited('auth_failures');
      throw rateLimited(s, 'Too many failed authentications from this address.');
    }
  });

  app.addHook('onError', async (req, reply, err) => {
    if (!(err instanceof AuthError) || (err.reason !== 'unknown' && err.reason !== 'revoked')) return;
    if (!usesApiKey(req.routeOptions.url)) return;
    const s = await failures.consume(req.ip);
    if (s) setHeaders(reply, s);
  });

  const limitShop = async (req: FastifyRequest, reply: FastifyReply) => {
    if (!req.apiKey || shopCounted.has(req)) return;
    shopCounted.add(req);
    const s = await perShop.consume(req.apiKey.shopId);
    if (!s) return;
    setHeaders(reply, s);
    if (s.exceeded) {
      opts.metrics?.rateLimited('shop');
      throw rateLimited(s, `Too many requests for this shop: the limit is ${s.limit} per minute.`);
    }
  };

  app.addHook('onRoute', (route) => {
    if (!usesApiKey(route.url)) return;
    // Whichever of the two runs first after authentication counts the request; the other sees it counted.
    route.onRequest = appendHook(route.onRequest, limitShop);
    route.preHandler = appendHook(route.preHandler, limitShop);
  });
}
