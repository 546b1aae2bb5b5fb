import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { webhookEventTypeList } from '../../domain/webhooks.js';
import type { ShopPrincipal } from '../../services/principal.js';
import type { ServiceContext } from '../../services/context.js';
import { listWebhookDeliveries, resendFailedDeliveries, resendWebhookDelivery, sendTestWebhook } from '../../services/webhookDeliveries.js';
import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  getWebhookEndpoint,
  listWebhookEndpoints,
  revealWebhookSecret,
  rotateWebhookSecret,
  updateWebhookEndpoint,
} from '../../services/webhookEndpoints.js';

const Params = z.strictObject({ id: z.string().max(100) });
const DeliveryParams = Params.extend({ delivery_id: z.string().max(20) });
const Page = z.strictObject({ limit: z.coerce.number().int().min(1).max(100).optional(), cursor: z.string().max(200).optional() });

/**
 * Settings → Webhooks behind the admin screen: the public API's webhook endpoints for the merchant (session token),
 * plus revealing the signing secret on request. Registered inside the admin API, after its session-token check.
 */
export function adminWebhookRoutes(app: FastifyInstance, ctx: ServiceContext, principal: (req: FastifyRequest) => ShopPrincipal): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const base = '/webhook-endpoints';
  // The event types an endpoint may subscribe to, each with what it means: the page's list comes from the same list
  // that validates a subscription, so it cannot leave one out.
  const eventTypes = { eventTypes: webhookEventTypeList() };
  r.get('/webhook-event-types', async () => eventTypes);
  r.get(base, async (req) => listWebhookEndpoints({ ctx, input: { principal: principal(req) } }));
  r.post(base, async (req, reply) => {
    reply.header('cache-control', 'no-store');
    return reply.code(201).send(await createWebhookEndpoint({ ctx, input: { principal: principal(req), body: req.body } }));
  });
  r.get(`${base}/:id`, { schema: { params: Params } }, async (req) => ({ endpoint: await getWebhookEndpoint({ ctx, input: { principal: principal(req), id: req.params.id } }) }));
  r.patch(`${base}/:id`, { schema: { params: Params } }, async (req) => updateWebhookEndpoint({ ctx, input: { principal: principal(req), id: req.params.id, body: req.body } }));
  r.delete(`${base}/:id`, { schema: { params: Params } }, async (req, reply) => {
    await deleteWebhookEndpoint({ ctx, input: { principal: principal(req), id: req.params.id } });
    return reply.code(204).send();
  });
  r.get(`${base}/:id/secret`, { schema: { params: Params } }, async (req, reply) => {
    reply.header('cache-control', 'no-store');
    return revealWebhookSecret({ ctx, input: { principal: principal(req), id: req.params.id } });
  });
  r.post(`${base}/:id/rotate-secret`, { schema: { params: Params } }, async (req, reply) => {
    reply.header('cache-control', 'no-store');
    return rotateWebhookSecret({ ctx, input: { principal: principal(req), id: req.params.id } });
  });
  r.post(`${base}/:id/test`, { schema: { params: Params } }, async (req, reply) =>
    reply.code(202).send({ delivery: await sendTestWebhook({ ctx, input: { principal: principal(req), endpointId: req.params.id, body: req.body } }) }),
  );
  r.get(`${base}/:id/deliveries`, { schema: { params: Params, querystring: Page } }, async (req) =>
    listWebhookDeliveries({ ctx, input: { principal: principal(req), endpointId: req.params.id, ...req.query } }),
  );
  r.post(`${base}/:id/deliveries/:delivery_id/resend`, { schema: { params: DeliveryParams } }, async (req, reply) =>
    reply.code(202).send({
      delivery: await resendWebhookDelivery({ ctx, input: { principal: principal(req), endpointId: req.params.id, deliveryId: req.params.delivery_id } }),
    }),
  );
  r.post(`${base}/:id/resend-failed`, { schema: { params: Params } }, async (req) =>
    resendFailedDeliveries({ ctx, input: { principal: principal(req), endpointId: req.params.id, body: req.body } }),
  );
}
