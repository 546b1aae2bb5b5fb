import type { FastifyInstance, FastifyRequest } from 'fastify';
import { validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ATTEMPT_TRIGGERS } from '../../domain/billing.js';
import { ACTION_NAMES } from '../../domain/commands/registry.js';
import { Cursor, PAGE_LIMIT_DESCRIPTION, PageLimitQuery } from '../../domain/paging.js';
import { Contract, ContractEvent } from '../../domain/resources.js';
import { StoredText } from '../../domain/text.js';
import { listCatalogVariants } from '../../services/catalog.js';
import { requestAction, requestEdit } from '../../services/contractRequests.js';
import { resolvedCaller, type ShopPrincipal } from '../../services/principal.js';
import type { ServiceContext } from '../../services/context.js';
import { getContractWithHistory } from '../../services/getContractWithHistory.js';
import { listContractEvents } from '../../services/listContractEvents.js';
import { countContracts } from '../../services/countContracts.js';
import { SEARCH_QUERY_MAX, searchContracts } from '../../services/searchContracts.js';
import {
  ContractActionBody,
  ContractEditBody,
  ContractEditResponse,
  ContractIdParams,
  ContractResponse,
  EventListResponse,
  ListContractsQuery,
  ListEventsQuery,
} from '../api/v1/schemas.js';
import { requireJsonBody } from '../body.js';
import { ErrorEnvelope } from '../errors.js';

const err = (d: string) => ErrorEnvelope.describe(d);
const readErrors = {
  400: err('invalid_request, naming the parameter'),
  401: err('unauthorized: missing, invalid or expired session token'),
  404: err('not_found: no such contract in this shop'),
  500: err('internal_error'),
  503: err('unavailable'),
} as const;
const actionErrors = {
  ...readErrors,
  400: err('invalid_request or unsupported_action'),
  409: err('invalid_state (not allowed from the contract\'s status), billing_in_progress or recently_billed (bill_now within 24 hours of one that succeeded, without "again": true)'),
  413: err('payload_too_large'),
  415: err('unsupported_media_type'),
  422: err('platform_rejected (platform mode: the platform refused the change)'),
  503: err('unavailable or platform_unavailable'),
} as const;

const editErrors = {
  ...actionErrors,
  400: err('invalid_request (a malformed edit: an unknown op, a bad field; details name the operation)'),
  409: err('invalid_state (edits are allowed from ACTIVE and PAUSED) or billing_in_progress'),
  422: err('invalid_edit (an operation cannot apply: details name its index and why) or platform_rejected'),
} as const;

/** The public list's filter (status may repeat, customer, exact email, variant, next billing dates): a bulk job's. */
const ContractFilterQuery = ListContractsQuery.pick({ status: true, billingStatus: true, customerId: true, customerEmail: true, variantId: true, nextBillingDateFrom: true, nextBillingDateTo: true });
const SearchContractsQuery = z.strictObject({
  query: StoredText(SEARCH_QUERY_MAX).optional().describe('A contract id (digits, "#" allowed) or the start of the customer\'s email, in any case.'),
  ...ContractFilterQuery.shape,
  limit: PageLimitQuery.describe(PAGE_LIMIT_DESCRIPTION),
  cursor: Cursor.optional().describe('nextCursor or previousCursor of the page shown.'),
});
const ContractSearchResponse = z.object({
  contracts: z.array(Contract),
  nextCursor: z.string().nullable().describe('The older contracts; null on the last page.'),
  previousCursor: z.string().nullable().describe('The newer contracts; null on the first page.'),
});
const CatalogVariantsResponse = z.object({
  variants: z
    .array(z.object({ id: z.string(), title: z.string(), price: z.object({ amount: z.string(), currencyCode: z.string() }) }))
    .describe('The shop\'s variants by title (standalone mode; empty in platform mode, where the platform has the catalog).'),
});

const ContractWithHistoryResponse = z.object({
  contract: Contract,
  allowedActions: z.array(z.enum(ACTION_NAMES)),
  editable: z.boolean(),
  events: z.array(ContractEvent),
  eventsNextCursor: z.string().nullable(),
  lastBilled: z
    .object({ at: z.string(), trigger: z.enum(ATTEMPT_TRIGGERS), orderName: z.string().nullable() })
    .nullable()
    .describe('The contract\'s latest attempt that succeeded: when its payment succeeded, what started it, its order. null: never billed.'),
  resume: z
    .object({ billsNow: z.boolean(), nextBillingDate: z.string() })
    .nullable()
    .describe('When resume is allowed: whether resuming bills the unpaid cycle at once, and the next billing date it sets.'),
});

/**
 * The Contracts page behind the admin (session token): find a shop's contracts, read one with its history, and act
 * on it as the merchant. Actions go through the same service as the API's, so their rules, events and webhooks are
 * the API's, with actor `admin`. Registered inside the admin API, after its session-token check.
 */
export function adminContractRoutes(app: FastifyInstance, ctx: ServiceContext, principal: (req: FastifyRequest) => ShopPrincipal): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['Admin'];

  r.get('/contracts', {
    schema: { tags, querystring: SearchContractsQuery, response: { 200: ContractSearchResponse, ...readErrors } },
    handler: async (req) => searchContracts({ ctx, input: { principal: principal(req), ...req.query } }),
  });

  // How many contracts the filter matches: what "Change N contracts…" offers, counted as a bulk job would.
  r.get('/contracts/count', {
    schema: { tags, querystring: ContractFilterQuery, response: { 200: z.object({ count: z.number().int(), more: z.boolean().describe('More than a bulk job takes (100,000).') }), ...readErrors } },
    handler: async (req) => countContracts({ ctx, input: { principal: principal(req), ...req.query } }),
  });

  r.get('/contracts/:contract_id', {
    schema: { tags, params: ContractIdParams, response: { 200: ContractWithHistoryResponse, ...readErrors } },
    handler: async (req) => getContractWithHistory({ ctx, input: { principal: principal(req), contractId: req.params.contract_id } }),
  });

  r.get('/contracts/:contract_id/events', {
    schema: { tags, params: ContractIdParams, querystring: ListEventsQuery, response: { 200: EventListResponse, ...readErrors } },
    handler: async (req) => listContractEvents({ ctx, input: { principal: principal(req), contractId: req.params.contract_id, ...req.query } }),
  });

  r.post('/contracts/:contract_id/actions', {
    schema: { tags, params: ContractIdParams, body: ContractActionBody, response: { 200: ContractResponse, ...actionErrors } },
    // The service validates the body, as it does for the API and MCP: one set of rules and messages.
    validatorCompiler: (route) => (route.httpPart === 'body' ? (data: unknown) => ({ value: data }) : validatorCompiler(route as never)),
    preValidation: requireJsonBody,
    handler: async (req) => ({ contract: (await requestAction(ctx, resolvedCaller(principal(req)), req.params.contract_id, req.body)).contract }),
  });

  // The API's edit (POST /api/v1/subscription-contracts/{id}/edits): the same body, rules and service, with a
  // preview that changes nothing; the page previews an edit, shows the totals before and after, then saves it.
  r.post('/contracts/:contract_id/edits', {
    schema: { tags, params: ContractIdParams, body: ContractEditBody, response: { 200: ContractEditResponse, ...editErrors } },
    validatorCompiler: (route) => (route.httpPart === 'body' ? (data: unknown) => ({ value: data }) : validatorCompiler(route as never)),
    preValidation: requireJsonBody,
    handler: async (req) => {
      const done = await requestEdit(ctx, resolvedCaller(principal(req)), req.params.contract_id, req.body);
      return { contract: done.contract, preview: done.preview };
    },
  });

  // What the edit form offers for a swap or a new line.
  r.get('/catalog/variants', {
    schema: { tags, response: { 200: CatalogVariantsResponse, ...readErrors } },
    handler: async (req) => ({ variants: await listCatalogVariants(ctx, principal(req).shopId) }),
  });
}
