import type { ContractStatus } from '../domain/contract.js';
import type { AttemptStatus } from '../domain/billing.js';
import type { BillingAttempt, Contract, ContractEvent } from '../domain/resources.js';
import { listBillingAttempts, listContractBillingAttempts } from '../services/listBillingAttempts.js';
import { getUpcomingRenewals, type UpcomingRenewalOut } from '../services/upcomingRenewals.js';
import { actOnContract } from '../services/actOnContract.js';
import { editContract } from '../services/editContract.js';
import type { Caller } from '../services/caller.js';
import type { ServiceContext } from '../services/context.js';
import { getContract, getContractJson } from '../services/getContract.js';
import { listContractEvents } from '../services/listContractEvents.js';
import { listContracts } from '../services/listContracts.js';

export type Page = { limit?: number; cursor?: string };

/**
 * What the MCP tools can do to one shop's contracts. Two implementations: the services themselves (the /mcp
 * endpoint) and the HTTP API as a client sees it (`svc mcp-stdio`). Failures are ServiceErrors either way.
 */
export type ContractOperations = {
  getContract(contractId: string): Promise<Contract>;
  /** getContract as its JSON text, where it can be had without building the object (the services: the API's GET). */
  getContractJson?(contractId: string): Promise<string>;
  listContracts(query: Page & { status?: ContractStatus }): Promise<{ contracts: Contract[]; nextCursor: string | null }>;
  /** `body` is an action body exactly as the API takes it; the service validates it. */
  actOnContract(contractId: string, body: Record<string, unknown>): Promise<Contract>;
  listContractEvents(contractId: string, query: Page): Promise<{ events: ContractEvent[]; nextCursor: string | null }>;
  /** `body` is an edit body exactly as the API takes it (`operations`, `preview`); the service validates it. */
  editContract(contractId: string, body: Record<string, unknown>): Promise<{ contract: Contract; preview: boolean }>;
  /** One contract's attempts (with `contractId`), else the shop's (by status, created since). */
  listBillingAttempts(query: Page & { contractId?: string; status?: AttemptStatus; since?: string }): Promise<{ billingAttempts: BillingAttempt[]; nextCursor: string | null }>;
  getUpcomingRenewals(contractId: string, count?: number): Promise<{ upcoming: UpcomingRenewalOut[] }>;
};

/** The services, for one authenticated caller: the same functions the HTTP routes call. */
export function serviceOperations(ctx: ServiceContext, caller: Caller): ContractOperations {
  return {
    getContract: (contractId) => getContract({ ctx, input: { caller, contractId } }),
    getContractJson: (contractId) => getContractJson({ ctx, input: { caller, contractId } }),
    listContracts: ({ status, limit, cursor }) => listContracts({ ctx, input: { caller, status, limit, cursor } }),
    actOnContract: (contractId, body) => actOnContract({ ctx, input: { caller, contractId, body } }),
    listContractEvents: (contractId, { limit, cursor }) => listContractEvents({ ctx, input: { caller, contractId, limit, cursor } }),
    editContract: (contractId, body) => editContract({ ctx, input: { caller, contractId, body } }),
    listBillingAttempts: ({ contractId, status, since, limit, cursor }) =>
      contractId
        ? listContractBillingAttempts({ ctx, input: { caller, contractId, limit, cursor } })
        : listBillingAttempts({ ctx, input: { caller, status, since, limit, cursor } }),
    getUpcomingRenewals: (contractId, count) => getUpcomingRenewals({ ctx, input: { caller, contractId, count } }),
  };
}
