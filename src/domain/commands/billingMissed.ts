import { need } from '../permissions.js';
import { z } from 'zod';
import { isBillingPending } from '../billing.js';
import { nextBillingAfter, stateOf } from '../contract.js';
import { iso } from '../time.js';
import { defineCommand, oneEvent } from './command.js';
import { unchanged } from './billingSteps.js';

/**
 * A scheduled cycle more than `maxLateMs` late (svc was not running when it came due) is not billed: it is recorded
 * as billing.missed, and the schedule moves to the first date after now, keeping its anchor. Nothing when the
 * contract is not ACTIVE, has an attempt in flight or a failed cycle being retried, or is not that late (any more).
 */
export type BillingMissedInput = { maxLateMs: number };

export const billingMissed = defineCommand({
  name: 'billing_missed',
  policy: { permission: need('billing', 'write'), actors: ['billing'] },
  input: z.custom<BillingMissedInput>(),
  allowedFrom: ['ACTIVE', 'PAUSED', 'CANCELLED', 'EXPIRED', 'FAILED'],
  allowedWhileBilling: true,
  events: ['billing.missed'],
  decide(contract, input, now) {
    if (contract.status !== 'ACTIVE' || isBillingPending(contract) || contract.billingNextAttemptAt !== null) return unchanged(contract);
    const cycleDate = contract.nextBillingDate;
    if (now.getTime() - cycleDate.getTime() <= input.maxLateMs) return unchanged(contract);
    const next = stateOf(contract);
    next.nextBillingDate = nextBillingAfter(cycleDate, contract.billingInterval, contract.billingIntervalCount, now);
    next.billingCycleDate = null;
    return oneEvent(contract, next, 'billing.missed', {
      cycleDate: iso(cycleDate),
      previousNextBillingDate: iso(cycleDate),
      nextBillingDate: iso(next.nextBillingDate),
    });
  },
});
