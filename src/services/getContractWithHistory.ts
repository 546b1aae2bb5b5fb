import { ACTION_NAMES, ALLOWED_FROM, type ActionName } from '../domain/commands/registry.js';
import type { Contract, ContractEvent } from '../domain/resources.js';
import type { ShopPrincipal } from './principal.js';
import type { ServiceCall } from './context.js';
import { getContract } from './getContract.js';
import { listContractEvents } from './listContractEvents.js';

export type ContractWithHistory = {
  contract: Contract;
  /** The actions the contract's status allows now, so a screen offers only those. */
  allowedActions: ActionName[];
  /** Whether the contract's status allows an edit (lines, frequency, address, discounts). */
  editable: boolean;
  /** The newest page of its events, newest first. */
  events: ContractEvent[];
  eventsNextCursor: string | null;
};

/**
 * One contract of the caller's shop with its history, for the admin's contract page. The history is read first (it
 * settles a due scheduled resume and not_found), so the contract is never older than its newest event.
 */
export async function getContractWithHistory({ ctx, input }: ServiceCall<{ principal: ShopPrincipal; contractId: string }>): Promise<ContractWithHistory> {
  const { events, nextCursor } = await listContractEvents({ ctx, input });
  const contract = await getContract({ ctx, input });
  return { contract, allowedActions: allowedActions(contract.status), editable: ALLOWED_FROM.edit.includes(contract.status), events, eventsNextCursor: nextCursor };
}

/** The actions allowed from a status, in the order the API lists them (the command registry's). */
export function allowedActions(status: Contract['status']): ActionName[] {
  return ACTION_NAMES.filter((action) => (ALLOWED_FROM[action] as readonly string[]).includes(status));
}
