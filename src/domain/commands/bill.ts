import { need } from '../permissions.js';
import { z } from 'zod';
import { stateOf } from '../contract.js';
import { defineCommand, oneEvent } from './command.js';
import { attemptData, attemptNumber, cycleToBill, isBillingDue, isTooLateToBill, newAttempt, unchanged } from './billingSteps.js';

/**
 * The billing worker's step: the contract's due cycle gets an attempt (trigger `schedule`), or its failed cycle the
 * next one (`retry`), recorded as billing.attempted with the attempt pending. The attempt is handed to the gateway or
 * platform only after this commits. Nothing when the contract is not due any more (an action committed first wins),
 * or when it is too late to bill its scheduled cycle (billingSteps.ts isTooLateToBill): that cycle is
 * billing_missed's.
 */
export const BillInput = z.strictObject({
  /** svc's id of the attempt this creates (a fresh UUID from the worker). */
  attemptId: z.uuid(),
  /** How late a scheduled cycle may be and still be billed (BILLING_MAX_LATE). */
  maxLateMs: z.number().int().nonnegative(),
});
export type BillInput = z.infer<typeof BillInput>;

export const bill = defineCommand({
  name: 'bill',
  policy: { permission: need('billing', 'write'), actors: ['billing'], after: 'hand_to_gateway' },
  input: BillInput,
  // Only an ACTIVE contract is billed; one that stopped being ACTIVE after the worker read it is refused (409).
  allowedFrom: ['ACTIVE'],
  allowedWhileBilling: true,
  events: ['billing.attempted'],
  decide(contract, input, now) {
    if (!isBillingDue(contract, now) || isTooLateToBill(contract, now, input.maxLateMs)) return unchanged(contract);
    const { cycleDate } = cycleToBill(contract);
    const number = attemptNumber(contract, cycleDate);
    const attempt = newAttempt(contract, { id: input.attemptId, cycleDate, attempt: number, trigger: number > 1 ? 'retry' : 'schedule', now });
    const next = stateOf(contract);
    next.billingLastAttempt = attempt;
    next.billingCycleDate = cycleDate;
    next.billingNextAttemptAt = null;
    return oneEvent(contract, next, 'billing.attempted', attemptData(attempt));
  },
});
