import { z } from 'zod';
import { nextBillingAfter, stateOf } from '../contract.js';
import { defineCommand, oneEvent } from './command.js';
import { billingChange } from './dates.js';

export const resume = defineCommand({
  name: 'resume',
  input: z.strictObject({}).meta({ description: 'Resume now; a past next billing date moves to the first one after now.' }),
  allowedFrom: ['PAUSED', 'FAILED'],
  events: ['contract.resumed'],
  decide(contract, _input, now) {
    const next = stateOf(contract);
    next.status = 'ACTIVE';
    next.pausedAt = null;
    next.resumeAt = null;
    next.nextBillingDate = nextBillingAfter(contract.nextBillingDate, contract.billingInterval, contract.billingIntervalCount, now);
    return oneEvent(contract, next, 'contract.resumed', billingChange(contract, next));
  },
});
