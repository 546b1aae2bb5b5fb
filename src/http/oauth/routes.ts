import { parse as parseQueryString } from 'node:querystring';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ServiceError } from '../../domain/errors.js';
import { OAuthError, SCOPES } from '../../domain/oauth.js';
import type { ServiceContext } from '../../services/context.js';
import {
  AUTHORIZE_PARAMS,
  checkAuthorizationRequest,
  RefusedAuthorizeRequest,
  UntrustedAuthorizeRequest,
  type AuthorizeParams,
} from '../../services/oauth/authorize.js';
import { registerClient } from '../../services/oauth/clients.js';
import { exchangeCode, refreshTokens } from '../../services/oauth/tokens.js';
import { isDatabaseUnavailable } from '../../db/client.js';
import { baseUrlOf, mcpResourceOf } from './urls.js';
import type { RateLimitOptions } from '../apiKeyGate.js';
import { FixedWindowLimiter } from '../rateLimitStore.js';

/** Registrations, authorization and token requests per client address per minute (when rate limits are on). */
export const OAUTH_REQUESTS_PER_MINUTE = 60;

/** Where the consent page is: a page of the admin UI (web/src/pages/ConsentPage.tsx). */
export const CONSENT_PATH = '/admin/oauth/consent';

/** The string parameters of a query or form body, each once: a repeated parameter is an error (RFC 6749 §3.1). */
export function singleParams(source: unknown, names: readonly string[]): Record<string, string | undefined> {
  const q = (source ?? {}) as Record<string, unknown>;
  const out: Record<string, string | undefined> = {};
  for (const n of names) {
    const v = q[n];
    if (v === undefined || v === '') continue;
    if (typeof v !== 'string') throw new OAuthError('invalid_request', `${n} must be given once.`);
    out[n] = v;
  }
  return out;
}

/** An OAuth endpoint's error (RFC 6749 §5.2): `{ error, error_description }`, never cached. */
function sendOAuthError(reply: FastifyReply, err: OAuthError): FastifyReply {
  reply.request.errorCode = err.error;
  const headers: Record<string, string> = { 'cache-control': 'no-store' };
  return reply.code(err.status).headers(headers).type('application/json; charset=utf-8').send({ error: err.error, error_description: err.description });
}

/** Anything thrown in an OAuth endpoint, as RFC 6749 answers it (a database outage is temporarily_unavailable, 503). */
function asOAuthError(err: unknown): OAuthError {
  if (err instanceof OAuthError) return err;
  if (err instanceof ServiceError && err.status < 500) return new OAuthError('invalid_request', err.message, err.status === 413 || err.status === 415 ? err.status : 400);
  if (isDatabaseUnavailable(err)) return new OAuthError('temporarily_unavailable', 'The service is briefly unavailable; try again.', 503);
  return new OAuthError('server_error', 'Something went wrong on the server.', 500);
}

const escapeHtml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** The page shown for a request that cannot go back to its client (RFC 6749 §4.1.2.1): said to the person, not redirected. */
const untrustedPage = (message: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
  `<title>This app cannot connect</title></head><body style="font-family:system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;line-height:1.5">` +
  `<h1>This app cannot connect</h1><p>${escapeHtml(message)}</p><p>Nothing was shared with it. You can close this tab.</p></body></html>`;

/** The authorization server's metadata (RFC 8414 §2), derived from one base URL. */
export function authorizationServerMetadata(base: string) {
  return {
    issuer: base,
    authorization_endpoint: `${base}/oauth/authorize`,
    token_endpoint: `${base}/oauth/token`,
    registration_endpoint: `${base}/oauth/register`,
    scopes_supported: SCOPES,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    token_endpoint_auth_methods_supported: ['none'],
    code_challenge_methods_supported: ['S256'],
    client_id_metadata_document_supported: true,
    authorization_response_iss_parameter_supported: true,
    service_documentation: `${base}/docs`,
  };
}

/**
 * svc as an OAuth 2.1 authorization server for its own MCP endpoint (MCP authorization, 2025-11-25):
 * the discovery documents (RFC 9728, RFC 8414), dynamic client registration (RFC 7591), the authorization endpoint
 * (which hands the merchant to the admin's consent page) and the token endpoint. Errors are RFC 6749's
 * (`{ error, error_description }`), the one exception to the service's envelope.
 *
 * Written here rather than taken from @modelcontextprotocol/sdk's server/auth: its router and handlers are Express
 * middleware (express, express-rate-limit, cors) and its provider interface leaves consent, storage and the
 * resource binding to us, which is most of this; the SDK's client (client/auth.js) is what the tests drive it with.
 *
 * No CORS: browser-based MCP clients are not among svc's users (docs/mcp-assistants.md), and the API stays
 * server-to-server (docs/product.md §5); native and server-side clients (the SDK's among them) need none.
 */
export async function oauthRoutes(app: FastifyInstance, opts: { ctx: ServiceContext; publicUrl?: string; rateLimit?: RateLimitOptions }): Promise<void> {
  const { ctx, publicUrl } = opts;
  const base = (req: FastifyRequest) => baseUrlOf(publicUrl, req);
  // Registration is open and each one is a row, and an authorization request may fetch a metadata document: per client
  // address, these and token requests share a budget far above what connecting and refreshing take (a few requests
  // per connection, one refresh an hour).
  const limiter = opts.rateLimit
    ? new FixedWindowLimiter(opts.rateLimit.store, { name: 'oauth', limit: OAUTH_REQUESTS_PER_MINUTE, clock: ctx.clock, onStoreError: opts.rateLimit.onStoreError })
    : null;
  const withinLimit = async (req: FastifyRequest, reply: FastifyReply) => {
    if (!limiter) return;
    const s = await limiter.consume(req.ip);
    if (!s.exceeded) return;
    reply.header('retry-after', String(s.resetSeconds));
    throw new OAuthError('temporarily_unavailable', `Too many OAuth requests from this address; retry after ${s.resetSeconds} s.`, 429);
  };

  // The token endpoint takes a form (RFC 6749 §4.1.3); read as a string and parsed here, within this plugin only.
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    done(null, parseQueryString(body as string));
  });
  // A body the parsers refuse (bad JSON, too large, another media type) is answered in RFC 6749's shape here too.
  app.setErrorHandler(async (err, _req, reply) => {
    const status = (err as { statusCode?: number }).statusCode;
    const mapped = status && status >= 400 && status < 500 ? new OAuthError('invalid_request', 'The request body could not be read.', status) : asOAuthError(err);
    return sendOAuthError(reply, mapped);
  });

  const protectedResource = async (req: FastifyRequest) => ({
    resource: mcpResourceOf(publicUrl, req),
    authorization_servers: [base(req)],
    scopes_supported: SCOPES,
    bearer_methods_supported: ['header'],
    resource_name: 'svc subscription contracts (MCP)',
    resource_documentation: `${base(req)}/docs`,
  });
  // RFC 9728 §3.1: the well-known path followed by the resource's path; the bare one too, for clients that try it.
  app.get('/.well-known/oauth-protected-resource/mcp', { schema: { hide: true } }, protectedResource);
  app.get('/.well-known/oauth-protected-resource', { schema: { hide: true } }, protectedResource);
  app.get('/.well-known/oauth-authorization-server', { schema: { hide: true } }, async (req) => authorizationServerMetadata(base(req)));

  app.post('/oauth/register', { schema: { hide: true } }, async (req, reply) => {
    try {
      await withinLimit(req, reply);
      const registered = await registerClient(ctx, req.body);
      return reply.code(201).header('cache-control', 'no-store').send(registered);
    } catch (err) {
      return sendOAuthError(reply, asOAuthError(err));
    }
  });

  app.get('/oauth/authorize', { schema: { hide: true } }, async (req, reply) => {
    // Within the same budget: an authorization request may make svc fetch a client's metadata document.
    try {
      await withinLimit(req, reply);
    } catch (err) {
      return reply.code(429).type('text/html; charset=utf-8').send(untrustedPage((err as Error).message));
    }
    let params: AuthorizeParams;
    try {
      params = singleParams(req.query, AUTHORIZE_PARAMS);
    } catch (err) {
      return reply.code(400).type('text/html; charset=utf-8').send(untrustedPage((err as Error).message));
    }
    try {
      await checkAuthorizationRequest(ctx, params, mcpResourceOf(publicUrl, req), base(req));
    } catch (err) {
      if (err instanceof UntrustedAuthorizeRequest) return reply.code(400).type('text/html; charset=utf-8').header('cache-control', 'no-store').send(untrustedPage(err.message));
      if (err instanceof RefusedAuthorizeRequest) return reply.redirect(err.redirectTo, 302);
      throw err;
    }
    // The merchant decides on the consent page, where their admin session is; the page reads these same parameters.
    const query = new URLSearchParams(Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined));
    return reply.header('cache-control', 'no-store').redirect(`${base(req)}${CONSENT_PATH}?${query.toString()}`, 302);
  });

  app.post('/oauth/token', { schema: { hide: true } }, async (req, reply) => {
    try {
      await withinLimit(req, reply);
      const p = singleParams(req.body, ['grant_type', 'code', 'code_verifier', 'client_id', 'redirect_uri', 'resource', 'refresh_token', 'scope']);
      let tokens;
      if (p.grant_type === 'authorization_code') tokens = await exchangeCode(ctx, p);
      else if (p.grant_type === 'refresh_token') tokens = await refreshTokens(ctx, p);
      else throw new OAuthError('unsupported_grant_type', 'grant_type must be authorization_code or refresh_token.');
      return reply.header('cache-control', 'no-store').header('pragma', 'no-cache').send(tokens);
    } catch (err) {
      return sendOAuthError(reply, asOAuthError(err));
    }
  });
}
