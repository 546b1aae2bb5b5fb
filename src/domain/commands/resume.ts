import { need } from '../permissions.js';
import { z } from 'zod';
import { nextBillingAfter, stateOf, withoutDunning, type ContractState } from '../contract.js';
import { defineCommand, SHOP_ACTORS, oneEvent } from './command.js';
import { billingChange } from './dates.js';

/**
 * When a resumed contract is next billed. A contract that dunning failed still owes the cycle it failed on (its
 * billing says `retrying` or `action_required`): resuming bills it at once (`billsNow`, the next billing date becomes
 * the moment of the resume and the billing worker takes it within a minute), and the schedule restarts from that
 * payment. Any other (paused, or failed on the platform with nothing owed) is billed on its next billing date, moved
 * past now by whole intervals when it has passed: the missed dates are not billed.
 */
export function resumedBilling(contract: ContractState, now: Date): { billsNow: boolean; nextBillingDate: Date } {
  if (contract.status === 'FAILED' && contract.billingCycleDate !== null) return { billsNow: true, nextBillingDate: now };
  return { billsNow: false, nextBillingDate: nextBillingAfter(contract.nextBillingDate, contract.billingInterval, contract.billingIntervalCount, now) };
}

export const resume = defineCommand({
  name: 'resume',
  policy: { permission: need('contracts', 'write'), actors: SHOP_ACTORS },
  input: z.strictObject({}).meta({
    description:
      'Resume now; a past next billing date moves to the first one after now. A contract that failed because its ' +
      'payments failed is billed for that cycle now.',
  }),
  allowedFrom: ['PAUSED', 'FAILED'],
  events: ['contract.resumed'],
  decide(contract, _input, now) {
    const next = withoutDunning(stateOf(contract));
    next.status = 'ACTIVE';
    next.pausedAt = null;
    next.resumeAt = null;
    next.nextBillingDate = resumedBilling(contract, now).nextBillingDate;
    return oneEvent(contract, next, 'contract.resumed', billingChange(contract, next));
  },
});
