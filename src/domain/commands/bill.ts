import { need } from '../permissions.js';
import { z } from 'zod';
import { stateOf } from '../contract.js';
import { defineCommand, oneEvent } from './command.js';
import { attemptData, attemptNumber, isBillingDue, newAttempt, unchanged } from './billingSteps.js';

/**
 * The billing worker's step: the contract's due cycle gets an attempt (trigger `schedule`), or its failed cycle the
 * next one (`retry`), recorded as billing.attempted with the attempt pending. The attempt is handed to the gateway or
 * platform only after this commits. Nothing when the contract is not due any more (an action committed first wins),
 * or when a scheduled cycle is more than `maxLateMs` late: that cycle is billing_missed's.
 */
export type BillInput = { attemptId: string; maxLateMs: number };

export const bill = defineCommand({
  name: 'bill',
  policy: { permission: need('billing', 'write'), actors: ['billing'], after: 'hand_to_gateway' },
  input: z.custom<BillInput>(),
  allowedFrom: ['ACTIVE', 'PAUSED', 'CANCELLED', 'EXPIRED', 'FAILED'],
  allowedWhileBilling: true,
  events: ['billing.attempted'],
  decide(contract, input, now) {
    if (!isBillingDue(contract, now)) return unchanged(contract);
    const retrying = contract.billingNextAttemptAt !== null && contract.billingCycleDate !== null;
    const cycleDate = retrying ? contract.billingCycleDate! : contract.nextBillingDate;
    if (!retrying && now.getTime() - cycleDate.getTime() > input.maxLateMs) return unchanged(contract);
    const number = attemptNumber(contract, cycleDate);
    const attempt = newAttempt(contract, { id: input.attemptId, cycleDate, attempt: number, trigger: number > 1 ? 'retry' : 'schedule', now });
    const next = stateOf(contract);
    next.billingLastAttempt = attempt;
    next.billingCycleDate = cycleDate;
    next.billingNextAttemptAt = null;
    return oneEvent(contract, next, 'billing.attempted', attemptData(attempt));
  },
});
