import type { FastifyInstance } from 'fastify';
import { validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { FastifyRequest } from 'fastify';
import { requestAction, requestContractJson, requestEdit } from '../../../services/contractRequests.js';
import type { ServiceContext } from '../../../services/context.js';
import type { ShopPrincipal } from '../../../services/principal.js';
import { listContractEvents } from '../../../services/listContractEvents.js';
import { listContracts } from '../../../services/listContracts.js';
import { requireJsonBody } from '../../body.js';
import type { Contract } from '../../../domain/resources.js';
import { JsonText } from '../../../domain/json.js';
import {
  actionErrors,
  authErrors,
  ContractActionBody,
  ContractActionResponse,
  ContractEditBody,
  ContractEditResponse,
  ContractIdParams,
  editErrors,
  ContractListResponse,
  ContractResponse,
  EventListResponse,
  ListContractsQuery,
  ListEventsQuery,
  readErrors,
} from './schemas.js';

const security = [{ bearerAuth: [] }];

/**
 * A contract already written as JSON (the change path wrote it for its event), standing in the answer for the contract
 * itself: the app's serializer (domain/json.ts replyJson) writes it as that text instead of parsing and writing it
 * again. Returned as the handler's value, not sent by the handler: a handler that returns the reply after sending
 * makes Fastify wait on the response stream's end (listeners on every response).
 */
const written = (json: string): Contract => new JsonText(json) as unknown as Contract;

/** The public API v1: thin adapters from HTTP to the contract services. */
export async function contractRoutes(app: FastifyInstance, opts: { ctx: ServiceContext }): Promise<void> {
  const { ctx } = opts;
  const r = app.withTypeProvider<ZodTypeProvider>();
  // Authentication runs first, in the app's key gate (docs/product.md §2 order: key → plan → scope → rate limit → the
  // operation): each route gets its principal, resolved for its operation's permission (domain/operations.ts), or, for
  // the routes whose first step reads the contract, its caller, resolved by that read.
  const principal = (req: FastifyRequest): ShopPrincipal => req.principal!;
  // An action's response, fresh or replayed from the result its Idempotency-Key recorded: bill_now's with its attempt,
  // which the contract carries as its latest.
  const renderAction = (contract: unknown, req: FastifyRequest) => {
    const c = contract as Contract;
    return (req.body as { action?: unknown } | undefined)?.action === 'bill_now' ? { contract: c, billingAttempt: c.billing.lastAttempt ?? undefined } : { contract: c };
  };

  r.get('/subscription-contracts', {
    schema: {
      operationId: 'listSubscriptionContracts',
      summary: 'List subscription contracts',
      description:
        'Contracts of the key\'s shop in id order, optionally filtered (status, billingStatus, customer, variant, next billing ' +
        'dates; the filters AND together), paged with a cursor.',
      tags: ['Subscription contracts'],
      security,
      querystring: ListContractsQuery,
      response: { 200: ContractListResponse.describe('A page of contracts; nextCursor is null on the last page.'), ...authErrors },
    },
    handler: async (req) => listContracts({ ctx, input: { principal: principal(req), ...req.query } }),
  });

  r.get('/subscription-contracts/:contract_id', {
    schema: {
      operationId: 'getSubscriptionContract',
      summary: 'Get a subscription contract',
      description: 'One contract of the key\'s shop: status, customer, billing policy, next billing date, lines, pause and cancellation details.',
      tags: ['Subscription contracts'],
      security,
      params: ContractIdParams,
      response: { 200: ContractResponse.describe('The contract.'), ...readErrors },
    },
    handler: async (req) => ({ contract: written((await requestContractJson(ctx, req.caller!, req.params.contract_id)).json) }),
  });

  r.get('/subscription-contracts/:contract_id/events', {
    schema: {
      operationId: 'listContractEvents',
      summary: 'List a contract\'s events',
      description: 'What happened to the contract, newest first, with who did it (API key fingerprint, MCP, scheduler, admin).',
      tags: ['Subscription contracts'],
      security,
      params: ContractIdParams,
      querystring: ListEventsQuery,
      response: { 200: EventListResponse.describe('A page of the contract\'s events, newest first; nextCursor is null on the last page.'), ...readErrors },
    },
    handler: async (req) => listContractEvents({ ctx, input: { principal: principal(req), contractId: req.params.contract_id, ...req.query } }),
  });

  r.post('/subscription-contracts/:contract_id/actions', {
    schema: {
      operationId: 'actOnSubscriptionContract',
      summary: 'Act on a subscription contract',
      description:
        'pause (optional resumeAt), resume, cancel (optional reason), skip (the next order), reschedule (nextBillingDate), ' +
        'bill_now (bill the current cycle now; the answer carries the billing attempt, usually pending; within 24 hours of a ' +
        'bill_now that succeeded it is refused with 409 recently_billed unless the body says "again": true). ' +
        'Returns the contract after the action. Actions on one contract are serialised; while a billing attempt awaits ' +
        'its outcome they are refused with 409 billing_in_progress.',
      tags: ['Subscription contracts'],
      security,
      params: ContractIdParams,
      body: ContractActionBody,
      response: { 200: ContractActionResponse.describe('The contract after the action (and, for bill_now, the billing attempt).'), ...actionErrors },
    },
    // The body is validated by the service (the MCP tools share the rules): the schema above documents it.
    validatorCompiler: (route) => (route.httpPart === 'body' ? (data: unknown) => ({ value: data }) : validatorCompiler(route as never)),
    preValidation: requireJsonBody,
    config: { recordsResult: { render: renderAction } },
    // With an Idempotency-Key, the result is recorded in the same commit as the action.
    handler: async (req) => {
      const done = await requestAction(ctx, req.caller!, req.params.contract_id, req.body, { record: req.idempotency });
      req.resultRecorded = !!req.idempotency;
      const answer = renderAction(done.contract, req);
      // The contract as its event already holds it in JSON, sent as that text (bill_now's answer, with its attempt,
      // is written whole).
      return done.json !== undefined && answer.billingAttempt === undefined ? { contract: written(done.json) } : answer;
    },
  });

  const renderEdit = (contract: unknown) => ({ contract: contract as Contract, preview: false });
  r.post('/subscription-contracts/:contract_id/edits', {
    schema: {
      operationId: 'editSubscriptionContract',
      summary: 'Edit a subscription contract',
      description:
        'Change lines (set_quantity, swap_variant, add_line, remove_line), the frequency (set_frequency), the shipping ' +
        'address (set_shipping_address) and discounts (apply_discount_code, remove_discount). Operations apply in order, ' +
        'all or nothing. With "preview": true the contract is returned exactly as it would be, with its totals, and ' +
        'nothing changes anywhere. Allowed from ACTIVE and PAUSED.',
      tags: ['Subscription contracts'],
      security,
      params: ContractIdParams,
      body: ContractEditBody,
      response: { 200: ContractEditResponse.describe('The contract after the edit (or as it would be, with preview).'), ...editErrors },
    },
    // The body is validated by the service (MCP shares the rules): the schema above documents it.
    validatorCompiler: (route) => (route.httpPart === 'body' ? (data: unknown) => ({ value: data }) : validatorCompiler(route as never)),
    preValidation: requireJsonBody,
    config: { recordsResult: { render: renderEdit } },
    handler: async (req) => {
      const done = await requestEdit(ctx, req.caller!, req.params.contract_id, req.body, { record: req.idempotency });
      // A preview changes nothing, so nothing recorded its result: the response itself is kept for the key.
      req.resultRecorded = !done.preview && !!req.idempotency;
      // The contract as its event holds it in JSON (a preview's too), sent as that text.
      return { contract: done.json !== undefined ? written(done.json) : done.contract, preview: done.preview };
    },
  });
}
