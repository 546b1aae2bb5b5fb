import { need } from '../permissions.js';
import { z } from 'zod';
import { stateOf, withoutDunning } from '../contract.js';
import { parseUtcTimestamp } from '../time.js';
import { defineCommand, SHOP_ACTORS, oneEvent } from './command.js';
import { billingChange, FutureTimestamp, futureTimestamps } from './dates.js';

export const reschedule = defineCommand({
  name: 'reschedule',
  policy: { permission: need('contracts', 'write'), actors: SHOP_ACTORS },
  input: z
    .strictObject({ nextBillingDate: FutureTimestamp('The new next billing date') })
    .meta({ description: 'Set the next billing date.' }),
  allowedFrom: ['ACTIVE', 'PAUSED'],
  events: ['contract.rescheduled'],
  check: (input, now) => futureTimestamps(input, ['nextBillingDate'], now),
  decide(contract, input) {
    // A new date for the next order replaces the cycle being retried.
    const next = withoutDunning(stateOf(contract));
    next.nextBillingDate = parseUtcTimestamp(input.nextBillingDate)!;
    return oneEvent(contract, next, 'contract.rescheduled', billingChange(contract, next));
  },
});
