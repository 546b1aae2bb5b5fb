import { need } from '../permissions.js';
import { z } from 'zod';
import { nextBillingAfter, stateOf, withoutDunning } from '../contract.js';
import { defineCommand, SHOP_ACTORS, oneEvent } from './command.js';
import { billingChange } from './dates.js';

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
    // A contract that dunning failed still owes the cycle it failed on: resuming bills it now, and the schedule
    // restarts from the payment. Otherwise the missed dates are not billed.
    const unpaid = contract.status === 'FAILED' && contract.billingCycleDate !== null;
    const next = withoutDunning(stateOf(contract));
    next.status = 'ACTIVE';
    next.pausedAt = null;
    next.resumeAt = null;
    next.nextBillingDate = unpaid ? now : nextBillingAfter(contract.nextBillingDate, contract.billingInterval, contract.billingIntervalCount, now);
    return oneEvent(contract, next, 'contract.resumed', billingChange(contract, next));
  },
});
