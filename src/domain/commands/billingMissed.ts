import { need } from '../permissions.js';
import { z } from 'zod';
import { nextBillingAfter, stateOf } from '../contract.js';
import { iso } from '../time.js';
import { defineCommand, oneEvent } from './command.js';
import { isTooLateToBill, unchanged } from './billingSteps.js';

/**
 * A scheduled cycle too late to bill (billingSteps.ts isTooLateToBill: svc was not running when it came due) is not
 * billed: it is recorded as billing.missed, and the schedule moves to the first date after now, keeping its anchor.
 * Nothing when the contract is not (or no longer) too late to bill.
 */
export const BillingMissedInput = z.strictObject({ maxLateMs: z.number().int().nonnegative() });
export type BillingMissedInput = z.infer<typeof BillingMissedInput>;

export const billingMissed = defineCommand({
  name: 'billing_missed',
  policy: { permission: need('billing', 'write'), actors: ['billing'] },
  input: BillingMissedInput,
  allowedFrom: ['ACTIVE'],
  allowedWhileBilling: true,
  events: ['billing.missed'],
  decide(contract, input, now) {
    if (!isTooLateToBill(contract, now, input.maxLateMs)) return unchanged(contract);
    const cycleDate = contract.nextBillingDate;
    const next = stateOf(contract);
    next.nextBillingDate = nextBillingAfter(cycleDate, contract.billingInterval, contract.billingIntervalCount, now);
    next.billingCycleDate = null;
    next.billingNextAttemptAt = null;
    return oneEvent(contract, next, 'billing.missed', {
      cycleDate: iso(cycleDate),
      previousNextBillingDate: iso(cycleDate),
      nextBillingDate: iso(next.nextBillingDate),
    });
  },
});
