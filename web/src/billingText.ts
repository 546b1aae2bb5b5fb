import type { BillingAttempt, BillingStatus, ContractBilling, ContractStatus, FinalAction } from './api';

/** Renewals in the merchant's words: statuses, triggers, failure codes, durations. */

export type BillingBadge = { label: string; tone: 'success' | 'warning' | 'critical' };

/**
 * Where a contract's billing stands (docs/renewals.md): billing.status says whether a cycle is owed. `ok`: nothing
 * is. `retrying`: a payment failed; an active contract is retried on the shop's schedule, any other is not retried
 * (a failed one is billed when it is resumed). `action_required`: the customer must confirm the payment.
 */
export function billingBadge(c: { status: ContractStatus; billing?: ContractBilling | null }): BillingBadge | null {
  const b = c.billing;
  if (!b) return null;
  switch (b.status) {
    case 'ok':
      return { label: 'Up to date', tone: 'success' };
    case 'retrying':
      return c.status === 'ACTIVE' ? { label: 'Retrying a failed payment', tone: 'warning' } : { label: 'Payment failed', tone: 'critical' };
    case 'action_required':
      return { label: 'Customer action required', tone: 'critical' };
    default:
      return { label: String(b.status), tone: 'warning' };
  }
}

/** The contracts table's flag: a contract with payment trouble (a cycle owed), else nothing. */
export const paymentTrouble = (c: { status: ContractStatus; billing?: ContractBilling | null }): BillingBadge | null =>
  c.billing && c.billing.status !== 'ok' ? billingBadge(c) : null;

/** The contracts list's billing filter: its value in the address, and the billing statuses the server is asked for. */
export const BILLING_FILTERS: { label: string; value: string; statuses: BillingStatus[] }[] = [
  { label: 'Any billing', value: '', statuses: [] },
  { label: 'Payment trouble', value: 'trouble', statuses: ['retrying', 'action_required'] },
  { label: 'A payment failed', value: 'retrying', statuses: ['retrying'] },
  { label: 'Customer action required', value: 'action_required', statuses: ['action_required'] },
  { label: 'Up to date', value: 'ok', statuses: ['ok'] },
];

export const ATTEMPT_STATUS_LABEL: Record<BillingAttempt['status'], string> = {
  pending: 'Pending',
  succeeded: 'Succeeded',
  failed: 'Failed',
  action_required: 'Action required',
};
export const ATTEMPT_STATUS_TONE: Record<BillingAttempt['status'], 'info' | 'success' | 'critical' | 'warning'> = {
  pending: 'info',
  succeeded: 'success',
  failed: 'critical',
  action_required: 'warning',
};

export const TRIGGER_LABEL: Record<BillingAttempt['trigger'], string> = {
  schedule: 'Scheduled',
  retry: 'Retry',
  bill_now: 'Bill now',
};

const ERROR_LABEL: Record<string, string> = {
  insufficient_funds: 'Insufficient funds',
  card_declined: 'Card declined',
  authentication_failed: 'Authentication failed',
  processing_error: 'Processing error',
  expired_card: 'Expired card',
  payment_method_revoked: 'Payment method revoked',
  fraud: 'Suspected fraud',
  out_of_stock: 'Out of stock',
};
/** A failure code as the merchant reads it; a code the page does not know is shown as sent. */
export const errorLabel = (code: string) => ERROR_LABEL[code] ?? code;

export const FINAL_ACTION_LABEL: Record<FinalAction, string> = {
  fail: 'Mark the contract as failed',
  pause: 'Pause the contract',
  cancel: 'Cancel the contract',
  skip: 'Skip the order and bill the next one',
};

const UNITS: [string, string][] = [
  ['W', 'week'],
  ['D', 'day'],
  ['H', 'hour'],
  ['M', 'minute'],
  ['S', 'second'],
];

/** An ISO 8601 duration of weeks to seconds in words ("P1DT6H" → "1 day 6 hours"), or null when it is not one. */
export function durationLabel(value: string): string | null {
  const m = /^P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$/.exec(value.trim().toUpperCase());
  if (!m || value.trim().length <= 1 || value.trim().toUpperCase().endsWith('T')) return null;
  const parts = m.slice(1).flatMap((n, i) => (n && Number(n) > 0 ? [`${Number(n)} ${UNITS[i][1]}${Number(n) === 1 ? '' : 's'}`] : []));
  return parts.length ? parts.join(' ') : null;
}
