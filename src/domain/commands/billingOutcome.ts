import { need } from '../permissions.js';
import { z } from 'zod';
import { BillingPolicySchema, durationMs, ERROR_CODES, failureKind, type AttemptState, type BillingOutcome, type BillingPolicy } from '../billing.js';
import { ContractStatus, stateOf, withoutDunning, type ContractState } from '../contract.js';
import { iso, isoString } from '../time.js';
import { unreachable } from '../unreachable.js';
import { defineCommand, type Decision, type EventDraft } from './command.js';
import { afterCycle, attemptData, unchanged } from './billingSteps.js';

/**
 * What became of an attempt, from whichever source tells it (the test gateway, the platform's webhooks, a poll):
 * - succeeded: the cycle is paid; the next billing date moves one interval past the cycle; dunning is over.
 * - failed / action_required: the shop's policy decides. An out-of-stock failure is retried every
 *   `inventoryRetries.every`, at most `max` times, then the cycle is skipped. A hard decline (expired card, revoked
 *   payment method, fraud) gets one more attempt at most. Any other failure, and a customer who must authenticate,
 *   is retried after each of `paymentRetries` in turn (each counted from this outcome). When none is left, the
 *   final action runs: fail (FAILED), pause, cancel or skip (the cycle), each with its own event, actor billing.
 * Only the contract's latest attempt counts, and only once: a late, repeated or unknown outcome changes nothing
 * (an action_required attempt may still succeed or fail, once the customer came back).
 */
const nullableText = z.string().nullable();

/** What a gateway or the platform says became of an attempt (domain/billing.ts BillingOutcome), as it is checked. */
const Outcome = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('succeeded'),
    order: z.strictObject({ id: z.string(), name: z.string(), amount: z.string(), currencyCode: z.string() }),
  }),
  z.strictObject({ kind: z.literal('failed'), errorCode: z.enum(ERROR_CODES), platformErrorCode: nullableText, message: nullableText }),
  z.strictObject({ kind: z.literal('action_required'), nextActionUrl: nullableText }),
]) satisfies z.ZodType<BillingOutcome>;

export const BillingOutcomeInput = z.strictObject({
  attemptId: z.uuid(),
  outcome: Outcome,
  policy: BillingPolicySchema satisfies z.ZodType<BillingPolicy>,
});
export type BillingOutcomeInput = z.infer<typeof BillingOutcomeInput>;

const CANCELLATION_REASON = 'Payment failed after every retry.';

export const billingOutcome = defineCommand({
  name: 'billing_outcome',
  policy: { permission: need('billing', 'write'), actors: ['billing'] },
  input: BillingOutcomeInput,
  // Every status, on purpose: an attempt is made while ACTIVE, but its outcome may come after the platform ended or
  // paused the contract (a sync), or after a merchant paused or cancelled one whose customer had to authenticate.
  allowedFrom: ContractStatus.options,
  allowedWhileBilling: true,
  events: ['billing.succeeded', 'billing.failed', 'billing.action_required', 'contract.failed', 'contract.paused', 'contract.cancelled', 'contract.skipped'],
  decide(contract, { attemptId, outcome, policy }, now) {
    const last = contract.billingLastAttempt;
    if (!last || last.id !== attemptId) return unchanged(contract);
    const open = last.status === 'pending' || (last.status === 'action_required' && outcome.kind !== 'action_required');
    if (!open) return unchanged(contract);
    const at = isoString(now);
    const cycleDate = new Date(last.cycleDate);
    switch (outcome.kind) {
      case 'succeeded': {
        const attempt: AttemptState = { ...last, status: 'succeeded', order: outcome.order, errorCode: null, platformErrorCode: null, errorMessage: null, nextActionUrl: null, completedAt: at };
        const next = withoutDunning(stateOf(contract));
        next.billingLastAttempt = attempt;
        next.nextBillingDate = afterCycle(contract, cycleDate);
        return { contract: next, events: [{ type: 'billing.succeeded', from: contract.status, to: next.status, data: attemptData(attempt, contract, next), after: next }] };
      }
      case 'failed':
      case 'action_required': {
        const failed = outcome.kind === 'failed';
        const attempt: AttemptState = failed
          ? { ...last, status: 'failed', errorCode: outcome.errorCode, platformErrorCode: outcome.platformErrorCode, errorMessage: outcome.message, completedAt: at }
          : { ...last, status: 'action_required', nextActionUrl: outcome.nextActionUrl, completedAt: at };
        const type = failed ? 'billing.failed' : 'billing.action_required';
        const recorded = stateOf(contract);
        recorded.billingLastAttempt = attempt;
        recorded.billingFailedAttempts = contract.billingFailedAttempts + 1;
        // Only an ACTIVE contract is retried: one paused or ended meanwhile (on the platform) keeps the outcome alone.
        // A FAILED one still owes the cycle (a resume bills it): its billing says so.
        if (contract.status !== 'ACTIVE') {
          recorded.billingNextAttemptAt = null;
          if (contract.status === 'FAILED') recorded.billingStatus = owedStatus(outcome.kind);
          return { contract: recorded, events: [{ type, from: contract.status, to: contract.status, data: attemptData(attempt), after: recorded }] };
        }
        const kind = failed ? failureKind(outcome.errorCode) : 'payment';
        const wait = retryWait(kind, contract.billingFailedAttempts, policy);
        if (wait !== null) {
          recorded.billingStatus = failed ? 'retrying' : 'action_required';
          recorded.billingNextAttemptAt = new Date(now.getTime() + wait);
          const data = { ...attemptData(attempt), nextAttemptAt: iso(recorded.billingNextAttemptAt), finalAction: null };
          return { contract: recorded, events: [{ type, from: contract.status, to: contract.status, data, after: recorded }] };
        }
        const action = kind === 'inventory' ? 'skip' : policy.finalAction;
        recorded.billingNextAttemptAt = null;
        const first: EventDraft = { type, from: contract.status, to: contract.status, data: { ...attemptData(attempt), nextAttemptAt: null, finalAction: action }, after: recorded };
        return finalAction(recorded, cycleDate, action, first, now);
      }
      default:
        return unreachable(outcome);
    }
  },
});

/** How long until the next retry after a failure of `kind` with `failedBefore` failures of the cycle before it; null: none. */
function retryWait(kind: 'payment' | 'hard' | 'inventory', failedBefore: number, policy: BillingPolicy): number | null {
  switch (kind) {
    case 'inventory':
      return failedBefore < policy.inventoryRetries.max ? durationMs(policy.inventoryRetries.every) : null;
    case 'hard':
      return failedBefore === 0 && policy.paymentRetries.length ? durationMs(policy.paymentRetries[0]) : null;
    case 'payment':
      return failedBefore < policy.paymentRetries.length ? durationMs(policy.paymentRetries[failedBefore]) : null;
    default:
      return unreachable(kind);
  }
}

/**
 * Where the billing of a FAILED contract that still owes its cycle stands: `retrying` after a failed payment (the
 * cycle is billed again when the contract is resumed; no retry is scheduled), `action_required` while the customer
 * must still authenticate. Never `ok`: that says nothing is owed (docs/renewals.md).
 */
function owedStatus(kind: 'failed' | 'action_required'): ContractState['billingStatus'] {
  return kind === 'failed' ? 'retrying' : 'action_required';
}

/** Dunning gives up on the cycle: the failure's event, then the final action's. */
function finalAction(s: ContractState, cycleDate: Date, action: BillingPolicy['finalAction'], first: EventDraft, now: Date): Decision {
  switch (action) {
    case 'fail': {
      // The unpaid cycle stays named (billingCycleDate): a resume bills it. Until then the billing summary keeps
      // saying that a payment failed (retrying, with no retry scheduled) or that the customer must authenticate.
      const next: ContractState = { ...s, status: 'FAILED', billingStatus: owedStatus(s.billingLastAttempt?.status === 'action_required' ? 'action_required' : 'failed'), billingNextAttemptAt: null };
      return { contract: next, events: [first, { type: 'contract.failed', from: s.status, to: 'FAILED', data: { reason: 'billing' }, after: next }] };
    }
    case 'pause': {
      const next: ContractState = { ...withoutDunning(s), status: 'PAUSED', pausedAt: now, resumeAt: null };
      return { contract: next, events: [first, { type: 'contract.paused', from: s.status, to: 'PAUSED', data: { resumeAt: null, reason: 'billing' }, after: next }] };
    }
    case 'cancel': {
      const next: ContractState = { ...withoutDunning(s), status: 'CANCELLED', cancelledAt: now, cancellationReason: CANCELLATION_REASON, pausedAt: null, resumeAt: null };
      return { contract: next, events: [first, { type: 'contract.cancelled', from: s.status, to: 'CANCELLED', data: { reason: CANCELLATION_REASON }, after: next }] };
    }
    case 'skip': {
      const next: ContractState = { ...withoutDunning(s), nextBillingDate: afterCycle(s, cycleDate) };
      const data = { previousNextBillingDate: iso(s.nextBillingDate), nextBillingDate: iso(next.nextBillingDate), cycleDate: iso(cycleDate), reason: 'billing' };
      return { contract: next, events: [first, { type: 'contract.skipped', from: s.status, to: s.status, data, after: next }] };
    }
    default:
      return unreachable(action);
  }
}
