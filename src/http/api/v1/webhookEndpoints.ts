import type { FastifyInstance, FastifyRequest } from 'fastify';
import { validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { Cursor, PAGE_LIMIT_DESCRIPTION, PageLimitQuery } from '../../../domain/paging.js';
import { WebhookDelivery, WebhookEndpoint, WebhookEndpointInput, WebhookEndpointPatch } from '../../../domain/webhooks.js';
import type { ShopPrincipal } from '../../../services/principal.js';
import type { ServiceContext } from '../../../services/context.js';
import { listWebhookDeliveries, resendFailedDeliveries, resendWebhookDelivery, sendTestWebhook, TestEventInput } from '../../../services/webhookDeliveries.js';
import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  getWebhookEndpoint,
  listWebhookEndpoints,
  rotateWebhookSecret,
  updateWebhookEndpoint,
} from '../../../services/webhookEndpoints.js';
import { requireJsonBody } from '../../body.js';
import { authErrors, changeErrors, readErrors } from './schemas.js';

const security = [{ bearerAuth: [] }];
const tags = ['Webhook endpoints'];
const EndpointParams = z.strictObject({ id: z.string().max(100).describe('The webhook endpoint id.') });
const DeliveryParams = EndpointParams.extend({ delivery_id: z.string().max(20).describe('The delivery id.') });
const Secret = z.string().describe('The signing secret (whsec_…): verify deliveries with it. Keep it server-side.');
const EndpointWithSecret = z.object({ endpoint: WebhookEndpoint, secret: Secret });
const EndpointResponse = z.object({ endpoint: WebhookEndpoint });
const DeliveryResponse = z.object({ delivery: WebhookDelivery });

/** Bodies are read by the services (the admin API shares the rules); the schemas here document them. */
const servicesReadTheBody = (route: { httpPart?: string }) =>
  route.httpPart === 'body' ? (data: unknown) => ({ value: data }) : validatorCompiler(route as never);

/**
 * The public API's webhook endpoints (docs/product.md §10): thin adapters over the same services as the admin screen. A
 * read-only key may list and read them and their deliveries; every change needs a read-write key.
 */
export async function webhookEndpointRoutes(app: FastifyInstance, opts: { ctx: ServiceContext }): Promise<void> {
  const { ctx } = opts;
  const r = app.withTypeProvider<ZodTypeProvider>();
  const principal = (req: FastifyRequest): ShopPrincipal => req.principal!;

  r.get('/webhook-endpoints', {
    schema: {
      operationId: 'listWebhookEndpoints',
      summary: 'List webhook endpoints',
      description: 'The shop\'s endpoints (at most 10), oldest first. Secrets are not listed.',
      tags,
      security,
      response: { 200: z.object({ endpoints: z.array(WebhookEndpoint) }).describe('The endpoints.'), ...authErrors },
    },
    handler: async (req) => listWebhookEndpoints({ ctx, input: { principal: principal(req) } }),
  });

  r.post('/webhook-endpoints', {
    schema: {
      operationId: 'createWebhookEndpoint',
      summary: 'Add a webhook endpoint',
      description: 'svc POSTs every contract event the endpoint subscribes to, signed with Standard Webhooks. The secret is in this response.',
      tags,
      security,
      body: WebhookEndpointInput,
      response: { 201: EndpointWithSecret.describe('The endpoint and its signing secret.'), ...changeErrors },
    },
    validatorCompiler: servicesReadTheBody,
    preValidation: requireJsonBody,
    handler: async (req, reply) => {
      reply.header('cache-control', 'no-store');
      return reply.code(201).send(await createWebhookEndpoint({ ctx, input: { principal: principal(req), body: req.body } }));
    },
  });

  r.get('/webhook-endpoints/:id', {
    schema: { operationId: 'getWebhookEndpoint', summary: 'Get a webhook endpoint', description: 'One endpoint of the shop.', tags, security, params: EndpointParams, response: { 200: EndpointResponse.describe('The endpoint.'), ...readErrors } },
    handler: async (req) => ({ endpoint: await getWebhookEndpoint({ ctx, input: { principal: principal(req), id: req.params.id } }) }),
  });

  r.patch('/webhook-endpoints/:id', {
    schema: {
      operationId: 'updateWebhookEndpoint',
      summary: 'Change a webhook endpoint',
      description: 'Its url, description, events, or status. Enabling a disabled endpoint says how many deliveries failed meanwhile (resendable).',
      tags,
      security,
      params: EndpointParams,
      body: WebhookEndpointPatch,
      response: {
        200: z
          .object({ endpoint: WebhookEndpoint, resendable: z.object({ count: z.number().int(), since: z.string() }).optional() })
          .describe('The endpoint after the change.'),
        ...changeErrors,
      },
    },
    validatorCompiler: servicesReadTheBody,
    preValidation: requireJsonBody,
    handler: async (req) => updateWebhookEndpoint({ ctx, input: { principal: principal(req), id: req.params.id, body: req.body } }),
  });

  r.delete('/webhook-endpoints/:id', {
    schema: { operationId: 'deleteWebhookEndpoint', summary: 'Delete a webhook endpoint', description: 'Nothing more is sent to it; its delivery log goes with it.', tags, security, params: EndpointParams, response: { 204: z.null().describe('Deleted.'), ...changeErrors } },
    handler: async (req, reply) => {
      await deleteWebhookEndpoint({ ctx, input: { principal: principal(req), id: req.params.id } });
      return reply.code(204).send(null);
    },
  });

  r.post('/webhook-endpoints/:id/test', {
    schema: {
      operationId: 'sendTestWebhook',
      summary: 'Send a test event',
      description: 'Queues a test delivery of any event type (test: true), signed and logged like any other.',
      tags,
      security,
      params: EndpointParams,
      body: TestEventInput.optional(),
      response: { 202: DeliveryResponse.describe('The queued delivery.'), ...changeErrors },
    },
    validatorCompiler: servicesReadTheBody,
    handler: async (req, reply) => reply.code(202).send({ delivery: await sendTestWebhook({ ctx, input: { principal: principal(req), endpointId: req.params.id, body: req.body } }) }),
  });

  r.post('/webhook-endpoints/:id/rotate-secret', {
    schema: {
      operationId: 'rotateWebhookSecret',
      summary: 'Rotate the signing secret',
      description: 'A new secret; the previous one keeps signing beside it for 24 hours, so receivers switch without a gap.',
      tags,
      security,
      params: EndpointParams,
      response: { 200: EndpointWithSecret.describe('The endpoint and its new secret.'), ...changeErrors },
    },
    handler: async (req, reply) => {
      reply.header('cache-control', 'no-store');
      return rotateWebhookSecret({ ctx, input: { principal: principal(req), id: req.params.id } });
    },
  });

  r.get('/webhook-endpoints/:id/deliveries', {
    schema: {
      operationId: 'listWebhookDeliveries',
      summary: 'List an endpoint\'s deliveries',
      description: 'The delivery log (30 days), newest first: every attempt with its time, status, duration, error and the first 4 KB of the response.',
      tags,
      security,
      params: EndpointParams,
      querystring: z.strictObject({ limit: PageLimitQuery.describe(PAGE_LIMIT_DESCRIPTION), cursor: Cursor.optional().describe('nextCursor from the previous page.') }),
      response: { 200: z.object({ deliveries: z.array(WebhookDelivery), nextCursor: z.string().nullable() }).describe('A page of deliveries.'), ...readErrors },
    },
    handler: async (req) => listWebhookDeliveries({ ctx, input: { principal: principal(req), endpointId: req.params.id, ...req.query } }),
  });

  r.post('/webhook-endpoints/:id/deliveries/:delivery_id/resend', {
    schema: {
      operationId: 'resendWebhookDelivery',
      summary: 'Resend a delivery',
      description: 'Sends it again now, with the same webhook-id, whatever came of it before.',
      tags,
      security,
      params: DeliveryParams,
      response: { 202: DeliveryResponse.describe('The delivery, queued again.'), ...changeErrors },
    },
    handler: async (req, reply) =>
      reply.code(202).send({ delivery: await resendWebhookDelivery({ ctx, input: { principal: principal(req), endpointId: req.params.id, deliveryId: req.params.delivery_id } }) }),
  });

  r.post('/webhook-endpoints/:id/resend-failed', {
    schema: {
      operationId: 'resendFailedWebhookDeliveries',
      summary: 'Resend failed deliveries',
      description: 'Sends again every delivery to this endpoint that failed from `since` on (what failed while it was failing).',
      tags,
      security,
      params: EndpointParams,
      body: z.strictObject({ since: z.string().describe('An ISO 8601 timestamp.') }),
      response: { 200: z.object({ resent: z.number().int() }).describe('How many deliveries were queued again.'), ...changeErrors },
    },
    validatorCompiler: servicesReadTheBody,
    preValidation: requireJsonBody,
    handler: async (req) => resendFailedDeliveries({ ctx, input: { principal: principal(req), endpointId: req.params.id, body: req.body } }),
  });
}
