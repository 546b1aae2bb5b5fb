import { need } from '../permissions.js';
import { z } from 'zod';
import { stateOf, withoutDunning } from '../contract.js';
import { addInterval } from '../time.js';
import { defineCommand, oneEvent } from './command.js';
import { attemptData, attemptNumber, newAttempt } from './billingSteps.js';

/**
 * The bill_now action: bills the current cycle now, and the schedule restarts from this moment (the next billing
 * date is now plus one interval). The cycle is named by this moment; a failed cycle being retried is replaced by it.
 * `attemptId` is given by the service (a fresh id), never by a client.
 */
export type BillNowInput = { attemptId?: string };

export const billNow = defineCommand({
  name: 'bill_now',
  policy: {
    permission: need('billing', 'write'),
    actors: ['api_key', 'mcp', 'oauth', 'admin'],
    needs: ['attempt_id'],
    after: 'hand_to_gateway',
  },
  input: z
    .strictObject({})
    .meta({ description: 'Bill the current cycle now; the schedule restarts from now (nextBillingDate = now + one interval).' }) as unknown as z.ZodType<BillNowInput>,
  allowedFrom: ['ACTIVE'],
  events: ['billing.attempted'],
  decide(contract, input, now) {
    if (!input.attemptId) throw new Error('bill_now needs an attempt id from the service');
    const attempt = newAttempt(contract, { id: input.attemptId, cycleDate: now, attempt: attemptNumber(contract, now), trigger: 'bill_now', now });
    const next = withoutDunning(stateOf(contract));
    next.nextBillingDate = addInterval(now, contract.billingInterval, contract.billingIntervalCount);
    next.billingCycleDate = now;
    next.billingLastAttempt = attempt;
    return oneEvent(contract, next, 'billing.attempted', attemptData(attempt, contract, next));
  },
});
