import type { FastifyInstance } from 'fastify';
import { receivePlatformWebhook } from '../platform/shopify/webhooksIn.js';
import type { Shopify } from '../platform/shopify/index.js';
import type { ServiceContext } from '../services/context.js';

/** The platform's payloads (a customer data request with its orders, say) can be larger than an API request. */
const WEBHOOK_BODY_LIMIT = 1024 * 1024;

/**
 * POST /webhooks/shopify (platform mode): one endpoint for every topic. The HMAC is computed over the raw bytes,
 * so this route keeps the body as it came. Stored before the 200; processed by the inbox worker (`onReceived`
 * wakes it when there is work for it). A signed body that fails its topic's checks is answered 200, not stored, and
 * logged as a warning.
 */
export async function shopifyWebhookRoutes(app: FastifyInstance, opts: { ctx: ServiceContext; shopify: Shopify; onReceived?: () => void }) {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: WEBHOOK_BODY_LIMIT }, (_req, body, done) => done(null, body));
  app.post('/webhooks/shopify', { bodyLimit: WEBHOOK_BODY_LIMIT, schema: { hide: true } }, async (req, reply) => {
    const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const { stored, pending, refused } = await receivePlatformWebhook(opts.ctx, opts.shopify.apiSecret, { rawBody: body, headers: req.headers });
    if (refused) {
      // 200 all the same (webhookChecks.ts says why); the body is never logged (it carries customers' data).
      const h = req.headers;
      req.log.warn({ topic: h['x-shopify-topic'], shop: h['x-shopify-shop-domain'], webhookId: h['x-shopify-webhook-id'], reason: refused }, 'platform webhook not acted on: its body fails its topic’s checks');
      return reply.code(200).send({ received: true, duplicate: false, ignored: true });
    }
    if (pending) opts.onReceived?.();
    return reply.code(200).send({ received: true, duplicate: !stored });
  });
}
