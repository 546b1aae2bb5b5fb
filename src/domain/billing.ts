import { z } from 'zod';
import type { Money } from './money.js';
import { unreachable } from './unreachable.js';

/**
 * Renewals, purely: the shapes of a billing attempt, its outcome and a shop's dunning policy, and the rules that
 * classify failures. The commands that use them are in commands/ (bill, bill_now, billing_outcome, billing_missed).
 */

export const ATTEMPT_TRIGGERS = ['schedule', 'retry', 'bill_now'] as const;
export type AttemptTrigger = (typeof ATTEMPT_TRIGGERS)[number];
export const ATTEMPT_STATUSES = ['pending', 'succeeded', 'failed', 'action_required'] as const;
export type AttemptStatus = (typeof ATTEMPT_STATUSES)[number];

/** The order a successful attempt made. */
export type BillingOrder = { id: string; name: string; amount: string; currencyCode: string };

/**
 * A failure's normalised code, whatever the gateway or platform called it:
 * - payment failures a retry may fix: insufficient_funds, card_declined, authentication_failed, processing_error;
 * - hard declines no retry fixes: expired_card, payment_method_revoked, fraud;
 * - out_of_stock: the inventory is missing, retried on its own schedule.
 */
export const ERROR_CODES = [
  'insufficient_funds',
  'card_declined',
  'authentication_failed',
  'processing_error',
  'expired_card',
  'payment_method_revoked',
  'fraud',
  'out_of_stock',
] as const;
export type BillingErrorCode = (typeof ERROR_CODES)[number];

export type FailureKind = 'payment' | 'hard' | 'inventory';

export function failureKind(code: BillingErrorCode): FailureKind {
  switch (code) {
    case 'out_of_stock':
      return 'inventory';
    case 'expired_card':
    case 'payment_method_revoked':
    case 'fraud':
      return 'hard';
    case 'insufficient_funds':
    case 'card_declined':
    case 'authentication_failed':
    case 'processing_error':
      return 'payment';
    default:
      return unreachable(code);
  }
}

/**
 * A billing attempt as the contract keeps its latest (and as clients see it, with the contract's id added): the
 * cycle it bills (named by the next billing date it was due at), its number within the cycle, what started it, and
 * where it stands. Timestamps are ISO strings: this is stored as JSON on the contract.
 */
export type AttemptState = {
  id: string;
  cycleDate: string;
  attempt: number;
  trigger: AttemptTrigger;
  status: AttemptStatus;
  errorCode: BillingErrorCode | null;
  platformErrorCode: string | null;
  errorMessage: string | null;
  nextActionUrl: string | null;
  order: BillingOrder | null;
  amount: Money;
  createdAt: string;
  completedAt: string | null;
};

/** What the gateway or platform says became of an attempt. */
export type BillingOutcome =
  | { kind: 'succeeded'; order: BillingOrder }
  | { kind: 'failed'; errorCode: BillingErrorCode; platformErrorCode: string | null; message: string | null }
  | { kind: 'action_required'; nextActionUrl: string | null };

/** What runs when dunning gives up on a cycle. */
export const FINAL_ACTIONS = ['fail', 'pause', 'cancel', 'skip'] as const;
export type FinalAction = (typeof FINAL_ACTIONS)[number];

export type BillingPolicy = {
  /** Waits before each payment retry, each counted from the previous attempt (ISO 8601 durations). */
  paymentRetries: string[];
  /** An inventory failure is retried every `every`, at most `max` times; then the cycle is skipped. */
  inventoryRetries: { every: string; max: number };
  finalAction: FinalAction;
};

export const DEFAULT_BILLING_POLICY: BillingPolicy = {
  paymentRetries: ['P1D', 'P3D', 'P7D'],
  inventoryRetries: { every: 'P1D', max: 5 },
  finalAction: 'fail',
};

export const MAX_RETRIES = 10;
const MIN_DURATION_MS = 1_000;
const MAX_DURATION_MS = 30 * 86_400_000;

/**
 * An ISO 8601 duration of weeks, days, hours, minutes and seconds (`P1D`, `PT12H`, `P1DT6H`, `PT30S`) in
 * milliseconds, or null. Years and months are refused: their length varies, and a retry waits a fixed time.
 */
export function durationMs(value: string): number | null {
  const m = /^P(?:(\d{1,4})W)?(?:(\d{1,4})D)?(?:T(?:(\d{1,5})H)?(?:(\d{1,6})M)?(?:(\d{1,7})S)?)?$/.exec(value);
  if (!m || value === 'P' || value.endsWith('T')) return null;
  const [, w, d, h, mi, s] = m.map((x) => (x === undefined ? 0 : Number(x)));
  return (((w * 7 + d) * 24 + h) * 60 + mi) * 60_000 + s * 1000;
}

const Duration = z
  .string()
  .refine((v) => {
    const ms = durationMs(v);
    return ms !== null && ms >= MIN_DURATION_MS && ms <= MAX_DURATION_MS;
  }, { message: 'must be an ISO 8601 duration from PT1S to P30D, e.g. P1D or PT12H' })
  .meta({ example: 'P1D' });

export const BillingPolicySchema = z
  .strictObject({
    paymentRetries: z
      .array(Duration)
      .max(MAX_RETRIES)
      .describe(`Waits before each retry of a failed payment, each counted from the previous attempt; at most ${MAX_RETRIES}.`),
    inventoryRetries: z
      .strictObject({
        every: Duration.describe('Wait between retries of an out-of-stock failure.'),
        max: z.number().int().min(0).max(MAX_RETRIES).describe(`Retries at most (0 to ${MAX_RETRIES}); then the cycle is skipped.`),
      })
      .describe('How an out-of-stock failure is retried.'),
    finalAction: z.enum(FINAL_ACTIONS).describe('What happens to the contract after the last failed payment retry.'),
  })
  .meta({ id: 'BillingPolicy' });

/** True while an attempt awaits its outcome: actions are then answered 409 billing_in_progress. */
export const isBillingPending = (s: { billingLastAttempt: AttemptState | null }): boolean => s.billingLastAttempt?.status === 'pending';

/** The idempotency key of an attempt: the same for the same contract, cycle and attempt number, on every instance. */
export const attemptIdempotencyKey = (contractId: string, cycleDate: string, attempt: number): string =>
  `svc-${contractId}-${Date.parse(cycleDate)}-${attempt}`;
