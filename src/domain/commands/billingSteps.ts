import type { AttemptState, AttemptTrigger } from '../billing.js';
import { isBillingPending } from '../billing.js';
import type { ContractState } from '../contract.js';
import { ServiceError } from '../errors.js';
import { addInterval, iso, isoString } from '../time.js';
import type { Decision } from './command.js';

/** What the billing commands share: when a contract is due, a new attempt, and where a paid cycle leaves the schedule. */

/** Nothing to record: the contract is not (or no longer) in the state the command was asked from. */
export const unchanged = (contract: ContractState): Decision => ({ contract, events: [] });

/**
 * When a contract is next billed ("due"): an ACTIVE contract with no attempt awaiting its outcome, at its scheduled
 * retry while a failed cycle is being retried, else at its next billing date; null for any other. The one definition
 * of "due" in the code; the database keeps the same as the generated column `billing_due_at` (migration 0015), which
 * the billing worker's claim reads, and test/billing.due.test.ts holds the two to one answer.
 */
export function billingDueAt(s: ContractState): Date | null {
  if (s.status !== 'ACTIVE' || isBillingPending(s)) return null;
  return s.billingNextAttemptAt ?? s.nextBillingDate;
}

/** Whether the contract is due (billingDueAt) at `now`. */
export function isBillingDue(s: ContractState, now: Date): boolean {
  const due = billingDueAt(s);
  return due !== null && due.getTime() <= now.getTime();
}

/**
 * The cycle a due contract's next attempt bills: the failed cycle being retried (`retry`), else the scheduled one at
 * its next billing date.
 */
export function cycleToBill(s: ContractState): { cycleDate: Date; retry: boolean } {
  return s.billingNextAttemptAt !== null && s.billingCycleDate !== null ? { cycleDate: s.billingCycleDate, retry: true } : { cycleDate: s.nextBillingDate, retry: false };
}

/**
 * "Too late to bill": the contract is due for a scheduled cycle (not a retry) that came due more than `maxLateMs`
 * ago, while svc was not running. Such a cycle is not billed but recorded as missed (billing_missed). The one
 * definition, for the billing worker choosing the command and for both commands.
 */
export function isTooLateToBill(s: ContractState, now: Date, maxLateMs: number): boolean {
  if (!isBillingDue(s, now)) return false;
  const { cycleDate, retry } = cycleToBill(s);
  return !retry && now.getTime() - cycleDate.getTime() > maxLateMs;
}

/**
 * A cycle's next attempt number: one more than the contract's latest attempt of the same cycle, else 1. A cycle whose
 * latest attempt succeeded is paid, and no attempt of it is ever made again (a bill_now in the very millisecond the
 * schedule billed names the same cycle): 409 invalid_state.
 */
export function attemptNumber(s: ContractState, cycleDate: Date): number {
  const last = s.billingLastAttempt;
  if (!last || Date.parse(last.cycleDate) !== cycleDate.getTime()) return 1;
  if (last.status === 'succeeded') throw new ServiceError('invalid_state', `The cycle due at ${isoString(cycleDate)} is already paid.`);
  return last.attempt + 1;
}

/** A pending attempt of `cycleDate` for the contract's total as it is now. */
export function newAttempt(s: ContractState, a: { id: string; cycleDate: Date; attempt: number; trigger: AttemptTrigger; now: Date }): AttemptState {
  return {
    id: a.id,
    cycleDate: isoString(a.cycleDate),
    attempt: a.attempt,
    trigger: a.trigger,
    status: 'pending',
    errorCode: null,
    platformErrorCode: null,
    errorMessage: null,
    nextActionUrl: null,
    order: null,
    amount: { amount: s.totals.total, currencyCode: s.totals.currencyCode },
    createdAt: isoString(a.now),
    completedAt: null,
  };
}

/**
 * The next billing date once cycle `cycleDate` is paid (or skipped): one interval after the cycle, so the schedule
 * keeps its anchor, unless the date already moved past the cycle (bill_now restarts the schedule when it bills).
 */
export function afterCycle(s: ContractState, cycleDate: Date): Date {
  if (s.nextBillingDate.getTime() > cycleDate.getTime()) return s.nextBillingDate;
  return addInterval(cycleDate, s.billingInterval, s.billingIntervalCount);
}

/** The data of a billing event: the attempt (as the contract keeps it) and, when the schedule moved, the dates. */
export function attemptData(attempt: AttemptState, before?: ContractState, after?: ContractState): Record<string, unknown> {
  const data: Record<string, unknown> = { attempt };
  if (before && after && before.nextBillingDate.getTime() !== after.nextBillingDate.getTime()) {
    data.previousNextBillingDate = iso(before.nextBillingDate);
    data.nextBillingDate = iso(after.nextBillingDate);
  }
  return data;
}
