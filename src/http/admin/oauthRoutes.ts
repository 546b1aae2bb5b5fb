import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { invalidRequest } from '../../domain/errors.js';
import { scopeOf } from '../../domain/oauth.js';
import { PermissionsSchema } from '../../domain/permissions.js';
import type { ServiceContext } from '../../services/context.js';
import {
  approveAuthorization,
  AUTHORIZE_PARAMS,
  checkAuthorizationRequest,
  denyAuthorization,
  RefusedAuthorizeRequest,
  UntrustedAuthorizeRequest,
  type AuthorizeParams,
} from '../../services/oauth/authorize.js';
import { disconnectConnection, listConnections } from '../../services/oauth/tokens.js';
import { ErrorEnvelope } from '../errors.js';
import { baseUrlOf, mcpResourceOf } from '../oauth/urls.js';

const err = (d: string) => ErrorEnvelope.describe(d);
const errors = {
  400: err('invalid_request: the authorization request cannot be approved (its text says why)'),
  401: err('unauthorized: missing, invalid or expired session token'),
  404: err('not_found'),
  500: err('internal_error'),
  503: err('unavailable'),
} as const;

/** The authorization request's parameters, as /oauth/authorize passed them to the consent page. */
const AuthorizationParams = z.strictObject(Object.fromEntries(AUTHORIZE_PARAMS.map((n) => [n, z.string().max(2000).optional()])) as Record<(typeof AUTHORIZE_PARAMS)[number], z.ZodOptional<z.ZodString>>);

const Connection = z.object({
  id: z.string(),
  clientName: z.string(),
  clientId: z.string(),
  permissions: PermissionsSchema,
  createdAt: z.string(),
  lastUsedAt: z.string().nullable(),
});

/**
 * The consent page's API and Settings → API's connected apps (session token only, like the rest of the admin API).
 * Approving is a call carrying the admin session token in its Authorization header, never a cookie: a page of
 * another site can make the merchant's browser open the consent page, but cannot approve on their behalf.
 */
export function adminOAuthRoutes(app: FastifyInstance, ctx: ServiceContext, shopId: (req: FastifyRequest) => string, publicUrl: string | undefined): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['Admin'];

  /** The request checked again (it came through the browser's address bar): a refusal is a 400 naming why. */
  const check = async (req: FastifyRequest, params: AuthorizeParams) => {
    try {
      return await checkAuthorizationRequest(ctx, params, mcpResourceOf(publicUrl, req), baseUrlOf(publicUrl, req));
    } catch (e) {
      if (e instanceof UntrustedAuthorizeRequest) throw invalidRequest(e.message);
      if (e instanceof RefusedAuthorizeRequest) throw invalidRequest(`The app's request cannot be approved: ${e.error.description}`);
      throw e;
    }
  };

  r.get('/oauth/authorization', {
    schema: {
      tags,
      querystring: AuthorizationParams,
      response: {
        200: z.object({
          client: z.object({ id: z.string(), name: z.string(), kind: z.enum(['registered', 'metadata_document']) }),
          redirectHost: z.string().describe('Where the browser goes after the decision: the host (or a native app\'s scheme).'),
          asked: PermissionsSchema,
          scope: z.string(),
          resource: z.string(),
        }),
        ...errors,
      },
    },
    handler: async (req) => {
      const request = await check(req, req.query);
      const u = new URL(request.redirectUri);
      return {
        client: { id: request.client.id, name: request.client.name, kind: request.client.kind },
        redirectHost: u.host || u.protocol,
        asked: request.asked,
        scope: scopeOf(request.asked),
        resource: request.resource,
      };
    },
  });

  r.post('/oauth/authorization', {
    schema: {
      tags,
      body: z.strictObject({
        request: AuthorizationParams,
        approve: z.boolean(),
        permissions: PermissionsSchema.optional().describe('What the merchant approves: at most what was asked, per resource (narrowed to it).'),
      }),
      response: { 200: z.object({ redirectTo: z.string() }), ...errors, 403: err('plan_required') },
    },
    handler: async (req, reply) => {
      const request = await check(req, req.body.request);
      const issuer = baseUrlOf(publicUrl, req);
      reply.header('cache-control', 'no-store');
      if (!req.body.approve) return { redirectTo: denyAuthorization(request, issuer) };
      const { redirectTo } = await approveAuthorization(ctx, { shopId: shopId(req), request, approved: req.body.permissions ?? request.asked, issuer });
      return { redirectTo };
    },
  });

  r.get('/connections', {
    schema: { tags, response: { 200: z.object({ connections: z.array(Connection) }), ...errors } },
    handler: async (req) => ({ connections: await listConnections(ctx, shopId(req)) }),
  });

  // In effect at once on every instance: each request of the app reads its grant.
  r.post('/connections/:id/disconnect', {
    schema: { tags, params: z.strictObject({ id: z.string().max(100) }), response: { 200: z.object({ disconnected: z.literal(true) }), ...errors } },
    handler: async (req) => {
      await disconnectConnection(ctx, shopId(req), req.params.id);
      return { disconnected: true as const };
    },
  });
}
