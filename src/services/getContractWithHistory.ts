import { lastSucceededAttempt } from '../db/billingRows.js';
import { ACTION_NAMES, ALLOWED_FROM, type ActionName } from '../domain/commands/registry.js';
import { resumedBilling } from '../domain/commands/resume.js';
import { assertContractId } from '../domain/contractId.js';
import { toContract, type Contract, type ContractEvent } from '../domain/resources.js';
import { isoString } from '../domain/time.js';
import type { ShopPrincipal } from './principal.js';
import type { ServiceCall } from './context.js';
import { listContractEvents } from './listContractEvents.js';
import { currentContract, readContract } from './readContract.js';

export type ContractWithHistory = {
  contract: Contract;
  /** The actions the contract's status allows now, so a screen offers only those. */
  allowedActions: ActionName[];
  /** Whether the contract's status allows an edit (lines, frequency, address, discounts). */
  editable: boolean;
  /** The newest page of its events, newest first. */
  events: ContractEvent[];
  eventsNextCursor: string | null;
  /** When the contract last billed (its latest attempt that succeeded), so Bill now can say it; null: never. */
  lastBilled: { at: string; trigger: 'schedule' | 'retry' | 'bill_now'; orderName: string | null } | null;
  /**
   * What a resume now would do to billing, when resume is allowed: `billsNow`, the unpaid cycle is billed at once;
   * otherwise the contract is next billed at `nextBillingDate`.
   */
  resume: { billsNow: boolean; nextBillingDate: string } | null;
};

/**
 * One contract of the caller's shop with its history, for the admin's contract page. The history is read first (it
 * settles a due scheduled resume and not_found), so the contract is never older than its newest event.
 */
export async function getContractWithHistory({ ctx, input }: ServiceCall<{ principal: ShopPrincipal; contractId: string }>): Promise<ContractWithHistory> {
  const { events, nextCursor } = await listContractEvents({ ctx, input });
  assertContractId(input.contractId);
  const row = await currentContract(ctx, await readContract(ctx, input.principal, input.contractId));
  const contract = toContract(row);
  const allowed = allowedActions(contract.status);
  const billed = await lastSucceededAttempt(ctx.db, { shopId: input.principal.shopId, contractId: row.id });
  const resume = allowed.includes('resume') ? resumedBilling(row, ctx.clock.now()) : null;
  return {
    contract,
    allowedActions: allowed,
    editable: ALLOWED_FROM.edit.includes(contract.status),
    events,
    eventsNextCursor: nextCursor,
    lastBilled: billed ? { at: isoString(billed.at), trigger: billed.trigger, orderName: billed.orderName } : null,
    resume: resume ? { billsNow: resume.billsNow, nextBillingDate: isoString(resume.nextBillingDate) } : null,
  };
}

/** The actions allowed from a status, in the order the API lists them (the command registry's). */
export function allowedActions(status: Contract['status']): ActionName[] {
  return ACTION_NAMES.filter((action) => (ALLOWED_FROM[action] as readonly string[]).includes(status));
}
