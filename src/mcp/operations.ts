import type { ContractStatus } from '../domain/contract.js';
import type { AttemptStatus } from '../domain/billing.js';
import { needsOf } from '../domain/operations.js';
import { toContract, type BillingAttempt, type Contract, type ContractEvent } from '../domain/resources.js';
import { listBillingAttempts, listContractBillingAttempts } from '../services/listBillingAttempts.js';
import { getUpcomingRenewals, type UpcomingRenewalOut } from '../services/upcomingRenewals.js';
import { requestAction, requestContractJson, requestEdit } from '../services/contractRequests.js';
import type { ServiceContext } from '../services/context.js';
import type { Caller } from '../services/principal.js';
import { currentContract } from '../services/readContract.js';
import { withContract } from '../services/runner.js';
import { listContractEvents } from '../services/listContractEvents.js';
import { listContracts } from '../services/listContracts.js';
import type { ContractFilter } from '../domain/contractFilter.js';
import { createBulkJob, startBulkJob, type BulkJob } from '../services/bulkJobs.js';
import { getBulkJob, listBulkJobResults, listBulkJobs, type BulkJobResult } from '../services/bulkJobQueries.js';

export type Page = { limit?: number; cursor?: string };

/** A page of contracts a filter matches (domain/contractFilter.ts); `status` one or several. */
export type ContractListQuery = Page & Omit<ContractFilter, 'status'> & { status?: ContractStatus | ContractStatus[] };

/**
 * What the MCP tools can do to one shop's contracts. Two implementations: the services themselves (the /mcp
 * endpoint) and the HTTP API as a client sees it (`svc mcp-stdio`). Failures are ServiceErrors either way.
 */
export type ContractOperations = {
  getContract(contractId: string): Promise<Contract>;
  /** getContract as its JSON text, where it can be had without building the object (the services: the API's GET). */
  getContractJson?(contractId: string): Promise<string>;
  listContracts(query: ContractListQuery): Promise<{ contracts: Contract[]; nextCursor: string | null }>;
  /** `body` is an action body exactly as the API takes it; the service validates it. */
  actOnContract(contractId: string, body: Record<string, unknown>): Promise<Contract>;
  listContractEvents(contractId: string, query: Page): Promise<{ events: ContractEvent[]; nextCursor: string | null }>;
  /** `body` is an edit body exactly as the API takes it (`operations`, `preview`); the service validates it. */
  editContract(contractId: string, body: Record<string, unknown>): Promise<{ contract: Contract; preview: boolean }>;
  /** One contract's attempts (with `contractId`), else the shop's (by status, created since). */
  listBillingAttempts(query: Page & { contractId?: string; status?: AttemptStatus; since?: string }): Promise<{ billingAttempts: BillingAttempt[]; nextCursor: string | null }>;
  getUpcomingRenewals(contractId: string, count?: number): Promise<{ upcoming: UpcomingRenewalOut[] }>;
  /** `body` is POST /bulk-jobs' (`selector`, `change`; `preview` is set here); the service validates it. */
  createBulkPreview(body: Record<string, unknown>): Promise<BulkJob>;
  getBulkJob(id: string): Promise<BulkJob>;
  startBulkJob(id: string): Promise<BulkJob>;
  listBulkJobs(query: Page & { status?: string }): Promise<{ bulkJobs: BulkJob[]; nextCursor: string | null }>;
  listBulkJobResults(id: string, query: Page & { status?: string }): Promise<{ results: BulkJobResult[]; nextCursor: string | null }>;
};

/**
 * The services, for one caller: the same requests the HTTP routes make, each resolving the caller for what it needs
 * (domain/operations.ts), so a tool the caller may not call is refused with insufficient_scope and changes nothing.
 */
export function serviceOperations(ctx: ServiceContext, caller: Caller): ContractOperations {
  const principal = (name: Parameters<typeof needsOf>[0]) => caller.principal(ctx, needsOf(name, undefined));
  return {
    getContract: async (contractId) => {
      const { row } = await withContract(ctx, caller, contractId, needsOf('getSubscriptionContract', undefined));
      return toContract(await currentContract(ctx, row));
    },
    getContractJson: async (contractId) => (await requestContractJson(ctx, caller, contractId)).json,
    listContracts: async (query) => listContracts({ ctx, input: { principal: await principal('listSubscriptionContracts'), ...query } }),
    actOnContract: async (contractId, body) => (await requestAction(ctx, caller, contractId, body)).contract,
    listContractEvents: async (contractId, { limit, cursor }) =>
      listContractEvents({ ctx, input: { principal: await principal('listContractEvents'), contractId, limit, cursor } }),
    editContract: async (contractId, body) => {
      const { contract, preview } = await requestEdit(ctx, caller, contractId, body);
      return { contract, preview };
    },
    listBillingAttempts: async ({ contractId, status, since, limit, cursor }) =>
      contractId
        ? listContractBillingAttempts({ ctx, input: { principal: await principal('listContractBillingAttempts'), contractId, limit, cursor } })
        : listBillingAttempts({ ctx, input: { principal: await principal('listBillingAttempts'), status, since, limit, cursor } }),
    getUpcomingRenewals: async (contractId, count) => getUpcomingRenewals({ ctx, input: { principal: await principal('getUpcomingRenewals'), contractId, count } }),
    createBulkPreview: async (body) => {
      const withPreview = { ...body, preview: true };
      return createBulkJob(ctx, await caller.principal(ctx, needsOf('createBulkJob', withPreview)), withPreview);
    },
    getBulkJob: async (id) => getBulkJob(ctx, await principal('getBulkJob'), id),
    startBulkJob: async (id) => startBulkJob(ctx, await principal('startBulkJob'), id),
    listBulkJobs: async ({ status, limit, cursor }) =>
      listBulkJobs(ctx, await principal('listBulkJobs'), { status: status ? [status as BulkJob['status']] : undefined, limit, cursor }),
    listBulkJobResults: async (id, { status, limit, cursor }) =>
      listBulkJobResults(ctx, await principal('listBulkJobResults'), id, { status: status as BulkJobResult['status'] | undefined, limit, cursor }),
  };
}
