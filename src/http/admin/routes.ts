import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { MAX_ACTIVE_KEYS } from '../../domain/access.js';
import { mentionsKey } from '../../domain/keys.js';
import { ServiceError } from '../../domain/errors.js';
import { StoredText } from '../../domain/text.js';
import { MAX_WEBHOOK_ENDPOINTS } from '../../domain/webhooks.js';
import { PermissionsSchema } from '../../domain/permissions.js';
import { ApiKey, KeyAccess } from '../../domain/resources.js';
import { adminPrincipal, type ShopPrincipal } from '../../services/principal.js';
import type { ServiceContext } from '../../services/context.js';
import { generateKey } from '../../services/generateKey.js';
import { listKeys } from '../../services/listKeys.js';
import { revokeKey } from '../../services/revokeKey.js';
import { updateKeyPermissions } from '../../services/updateKeyPermissions.js';
import { bearerToken } from '../../services/authenticateApiKey.js';
import { verifySessionToken, type AppCredentials } from '../../services/sessionTokens.js';
import { provisionShop, shopApiAccess, type Shop } from '../../services/shops.js';
import { ErrorEnvelope } from '../errors.js';
import { adminBillingRoutes } from './billingRoutes.js';
import { adminBulkJobRoutes } from './bulkJobRoutes.js';
import { adminContractRoutes } from './contractRoutes.js';
import { adminWebhookRoutes } from './webhookRoutes.js';
import { adminRequestLogRoutes } from './requestLogRoutes.js';
import { adminOAuthRoutes } from './oauthRoutes.js';
import { getBillingPolicy, setBillingPolicy } from '../../services/billingPolicy.js';
import type { Shopify } from '../../platform/shopify/index.js';
import { APP_SUBSCRIPTION_STATUSES } from '../../platform/shopify/install.js';

declare module 'fastify' {
  interface FastifyRequest {
    adminShop?: Shop;
  }
}

const err = (d: string) => ErrorEnvelope.describe(d);
const adminErrors = {
  400: err('invalid_request'),
  401: err('unauthorized: missing, invalid or expired session token'),
  404: err('not_found'),
  500: err('internal_error'),
  503: err('unavailable'),
} as const;

const ShopResponse = z.object({
  shop: z.object({
    domain: z.string(),
    plan: z.string(),
    apiAccess: z.object({
      allowed: z.boolean(),
      reason: z.enum(['enterprise', 'free_period', 'plan_required']),
      freePeriodEndsAt: z.string().nullable(),
    }),
  }),
  limits: z.object({ maxActiveKeys: z.number().int(), maxWebhookEndpoints: z.number().int() }),
  platform: z.object({
    mode: z.enum(['standalone', 'shopify']),
    import: z
      .object({
        status: z.enum(['pending', 'running', 'completed', 'failed']),
        mode: z.enum(['paged', 'bulk']).nullable(),
        imported: z.number().int(),
        total: z.number().int().nullable(),
        startedAt: z.string().nullable(),
        finishedAt: z.string().nullable(),
        error: z.string().nullable(),
      })
      .nullable(),
    canUpgrade: z.boolean(),
  }),
});

/**
 * The admin JSON API behind Settings → API (docs/product.md, "Admin: Settings → API"), authenticated by the platform's
 * session token only. API keys are refused here, as session tokens are refused on /api.
 */
export async function adminApiRoutes(app: FastifyInstance, opts: { ctx: ServiceContext; credentials: AppCredentials; shopify?: Shopify; publicUrl?: string }) {
  const { ctx, credentials, shopify } = opts;
  const r = app.withTypeProvider<ZodTypeProvider>();

  // Before the body is read: a caller without a valid session token costs no parsing, and is refused (with the
  // connection closed) even while it is still sending its body.
  r.addHook('onRequest', async (req: FastifyRequest) => {
    const token = bearerToken(req.headers.authorization);
    if (!token || mentionsKey(token)) {
      throw new ServiceError('unauthorized', 'The admin API takes the platform session token, not an API key. Open the app from the shop admin.');
    }
    const { shopDomain } = await verifySessionToken(ctx, credentials, token);
    req.adminShop = await provisionShop({ ctx, input: { domain: shopDomain } });
    // Platform mode: the first session token of a shop installs it (token exchange, then webhooks, plan, import).
    if (shopify) await shopify.installer.ensureInstalled(req.adminShop, token);
  });
  const shopId = (req: FastifyRequest) => req.adminShop!.id;
  // The merchant, signed in with the platform's session token: confirmed, and may change what the shop owns.
  const principal = (req: FastifyRequest): ShopPrincipal => adminPrincipal(shopId(req));
  const tags = ['Admin'];

  r.get('/shop', {
    schema: { tags, response: { 200: ShopResponse, ...adminErrors } },
    handler: async (req) => {
      const shop = req.adminShop!;
      const access = shopApiAccess(ctx, shop.plan);
      return {
        shop: {
          domain: shop.domain,
          plan: shop.plan,
          apiAccess: { ...access, freePeriodEndsAt: access.freePeriodEndsAt?.toISOString() ?? null },
        },
        limits: { maxActiveKeys: MAX_ACTIVE_KEYS, maxWebhookEndpoints: MAX_WEBHOOK_ENDPOINTS },
        platform: {
          mode: shopify ? ('shopify' as const) : ('standalone' as const),
          import: shopify ? await shopify.installer.importProgress(shop.id) : null,
          canUpgrade: !!shopify && !access.allowed,
        },
      };
    },
  });

  r.post('/billing/upgrade', {
    schema: { tags, body: z.strictObject({}).nullish(), response: { 200: z.object({ confirmationUrl: z.string() }), ...adminErrors } },
    handler: async (req) => {
      if (!shopify) throw new ServiceError('not_found', 'Upgrading through the platform exists in platform mode only; the operator sets plans with `svc shops set-plan`.');
      return shopify.installer.startUpgrade(req.adminShop!);
    },
  });

  r.get('/billing/upgrade/:chargeId', {
    schema: {
      tags,
      params: z.strictObject({ chargeId: z.string().regex(/^\d{1,19}$/, 'A charge id is the number the platform put in charge_id.') }),
      response: {
        200: z.object({
          status: z.enum(APP_SUBSCRIPTION_STATUSES).describe('The app subscription’s status on the platform.'),
          plan: z.string().describe('The shop’s plan now (read again from the platform when the subscription is active).'),
        }),
        ...adminErrors,
        404: err('not_found'),
      },
    },
    handler: async (req) => {
      if (!shopify) throw new ServiceError('not_found', 'Upgrading through the platform exists in platform mode only.');
      const outcome = await shopify.installer.upgradeOutcome(req.adminShop!, req.params.chargeId);
      if (!outcome) throw new ServiceError('not_found', 'This store has no Enterprise subscription with that charge id.');
      return outcome;
    },
  });

  r.get('/keys', {
    schema: { tags, response: { 200: z.object({ keys: z.array(ApiKey), activeCount: z.number().int() }), ...adminErrors } },
    handler: async (req) => listKeys({ ctx, input: { shopId: shopId(req) } }),
  });

  r.post('/keys', {
    schema: {
      tags,
      // The body is optional (a bare POST generates an unnamed key); Fastify hands a missing body over as null.
      // A preset (access) or one level per resource (permissions), not both (the service refuses both: 400).
      body: z.strictObject({ name: StoredText(100).nullable().optional(), access: KeyAccess.optional(), permissions: PermissionsSchema.optional() }).nullish(),
      response: {
        201: z.object({ key: ApiKey, secret: z.string().describe('The raw key. Sent this once and never again.') }),
        ...adminErrors,
        403: err('plan_required'),
        409: err('key_limit_reached'),
      },
    },
    handler: async (req, reply) => {
      const created = await generateKey({
        ctx,
        input: { shopId: shopId(req), name: req.body?.name, access: req.body?.access, permissions: req.body?.permissions },
      });
      // The secret must not linger in any cache between here and the merchant's screen.
      reply.header('cache-control', 'no-store');
      return reply.code(201).send(created);
    },
  });

  r.post('/keys/:id/revoke', {
    schema: { tags, params: z.strictObject({ id: z.string().max(100) }), response: { 200: z.object({ key: ApiKey }), ...adminErrors } },
    handler: async (req) => ({ key: await revokeKey({ ctx, input: { shopId: shopId(req), keyId: req.params.id } }) }),
  });

  // A key's permissions, changed: in effect from the next request on every instance, as a revocation is.
  r.patch('/keys/:id', {
    schema: {
      tags,
      params: z.strictObject({ id: z.string().max(100) }),
      body: z.strictObject({ permissions: PermissionsSchema }),
      response: { 200: z.object({ key: ApiKey }), ...adminErrors, 409: err('invalid_state: the key is revoked') },
    },
    handler: async (req) => ({ key: await updateKeyPermissions({ ctx, input: { shopId: shopId(req), keyId: req.params.id, permissions: req.body.permissions } }) }),
  });

  adminContractRoutes(app, ctx, principal);
  adminWebhookRoutes(app, ctx, principal);
  adminRequestLogRoutes(app, ctx, principal);
  // Connecting an AI assistant (OAuth): the consent page's API, and the connected apps.
  adminOAuthRoutes(app, ctx, shopId, opts.publicUrl);
  // Settings → Billing: the shop's dunning policy.
  r.get('/billing-policy', async (req) => getBillingPolicy({ ctx, input: { principal: principal(req) } }));
  r.put('/billing-policy', async (req) => setBillingPolicy({ ctx, input: { principal: principal(req), body: req.body } }));
  // A contract's billing attempts and the Renewals overview.
  adminBillingRoutes(app, ctx, principal);
  // Bulk jobs: one change across many contracts, previewed, then run.
  adminBulkJobRoutes(app, ctx, principal);
}
