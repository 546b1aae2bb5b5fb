import { need } from '../permissions.js';
import { z } from 'zod';
import { stateOf, withoutDunning } from '../contract.js';
import { addInterval } from '../time.js';
import { defineCommand, SHOP_ACTORS, oneEvent } from './command.js';
import { billingChange } from './dates.js';

export const skip = defineCommand({
  name: 'skip',
  policy: { permission: need('contracts', 'write'), actors: SHOP_ACTORS },
  input: z.strictObject({}).meta({ description: 'Skip the next order: the next billing date moves one interval forward.' }),
  allowedFrom: ['ACTIVE'],
  events: ['contract.skipped'],
  decide(contract) {
    // Skipping the cycle being retried ends its dunning.
    const next = withoutDunning(stateOf(contract));
    next.nextBillingDate = addInterval(contract.nextBillingDate, contract.billingInterval, contract.billingIntervalCount);
    return oneEvent(contract, next, 'contract.skipped', billingChange(contract, next));
  },
});
