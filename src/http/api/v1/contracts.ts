import type { FastifyInstance } from 'fastify';
import { validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { actOnContract } from '../../../services/actOnContract.js';
import type { AuthenticatedKey } from '../../../services/authenticateApiKey.js';
import type { ServiceContext } from '../../../services/context.js';
import { getContract } from '../../../services/getContract.js';
import { listContractEvents } from '../../../services/listContractEvents.js';
import { listContracts } from '../../../services/listContracts.js';
import { requireJsonBody } from '../../body.js';
import { atomicCompletion } from '../../idempotency.js';
import type { Contract } from '../../../domain/resources.js';
import {
  actionErrors,
  authErrors,
  ContractActionBody,
  ContractIdParams,
  ContractListResponse,
  ContractResponse,
  EventListResponse,
  ListContractsQuery,
  ListEventsQuery,
  readErrors,
} from './schemas.js';

const security = [{ bearerAuth: [] }];

/** The public API v1: thin adapters from HTTP to the contract services. */
export async function contractRoutes(app: FastifyInstance, opts: { ctx: ServiceContext }): Promise<void> {
  const { ctx } = opts;
  const r = app.withTypeProvider<ZodTypeProvider>();
  // Authentication runs first, in the app's key gate (PRODUCT §2 order: key → plan → … → the operation), before
  // the body is read or any input is validated. Each service gets the key to confirm in its first statement.
  const caller = (key: AuthenticatedKey) => ({
    shopId: key.shopId,
    actor: { type: 'api_key' as const, keyFingerprint: key.fingerprint },
    key,
  });

  r.get('/subscription-contracts', {
    schema: {
      summary: 'List subscription contracts',
      description: 'Contracts of the key\'s shop in id order, optionally filtered by status, paged with a cursor.',
      tags: ['Subscription contracts'],
      security,
      querystring: ListContractsQuery,
      response: { 200: ContractListResponse, ...authErrors },
    },
    handler: async (req) => listContracts({ ctx, input: { shopId: req.apiKey!.shopId, key: req.apiKey, ...req.query } }),
  });

  r.get('/subscription-contracts/:contract_id', {
    schema: {
      summary: 'Get a subscription contract',
      tags: ['Subscription contracts'],
      security,
      params: ContractIdParams,
      response: { 200: ContractResponse, ...readErrors },
    },
    handler: async (req) => ({
      contract: await getContract({ ctx, input: { shopId: req.apiKey!.shopId, contractId: req.params.contract_id, key: req.apiKey } }),
    }),
  });

  r.get('/subscription-contracts/:contract_id/events', {
    schema: {
      summary: 'List a contract\'s events',
      description: 'What happened to the contract, newest first, with who did it (API key fingerprint, MCP, scheduler, admin).',
      tags: ['Subscription contracts'],
      security,
      params: ContractIdParams,
      querystring: ListEventsQuery,
      response: { 200: EventListResponse, ...readErrors },
    },
    handler: async (req) =>
      listContractEvents({ ctx, input: { shopId: req.apiKey!.shopId, contractId: req.params.contract_id, key: req.apiKey, ...req.query } }),
  });

  r.post('/subscription-contracts/:contract_id/actions', {
    schema: {
      summary: 'Act on a subscription contract',
      description:
        'pause (optional resumeAt), resume, cancel (optional reason), skip (the next order), reschedule (nextBillingDate). ' +
        'Returns the contract after the action. Actions on one contract are serialised.',
      tags: ['Subscription contracts'],
      security,
      params: ContractIdParams,
      body: ContractActionBody,
      response: { 200: ContractResponse, ...actionErrors },
    },
    // The body is validated by the service (the MCP tools share the rules): the schema above documents it.
    validatorCompiler: (route) => (route.httpPart === 'body' ? (data: unknown) => ({ value: data }) : validatorCompiler(route as never)),
    preValidation: requireJsonBody,
    handler: async (req) => {
      // With an Idempotency-Key, the response is recorded in the same commit as the action (AtomicCompletion).
      const completion = atomicCompletion(req, (contract: Contract) => ({ contract }));
      return { contract: await actOnContract({ ctx, input: { ...caller(req.apiKey!), contractId: req.params.contract_id, body: req.body, completion } }) };
    },
  });
}
