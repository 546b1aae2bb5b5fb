import { z } from 'zod';
import { stateOf } from '../contract.js';
import { parseUtcTimestamp } from '../time.js';
import { defineCommand, oneEvent } from './command.js';
import { billingChange, FutureTimestamp, futureTimestamps } from './dates.js';

export const reschedule = defineCommand({
  name: 'reschedule',
  input: z
    .strictObject({ nextBillingDate: FutureTimestamp('The new next billing date') })
    .meta({ description: 'Set the next billing date.' }),
  allowedFrom: ['ACTIVE', 'PAUSED'],
  events: ['contract.rescheduled'],
  check: (input, now) => futureTimestamps(input, ['nextBillingDate'], now),
  decide(contract, input) {
    const next = stateOf(contract);
    next.nextBillingDate = parseUtcTimestamp(input.nextBillingDate)!;
    return oneEvent(contract, next, 'contract.rescheduled', billingChange(contract, next));
  },
});
