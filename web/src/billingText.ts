import type { BillingAttempt, ContractBilling, FinalAction } from './api';

/** Renewals in the merchant's words: statuses, triggers, failure codes, durations. */

export const BILLING_STATUS_LABEL: Record<ContractBilling['status'], string> = {
  ok: 'Up to date',
  retrying: 'Retrying a failed payment',
  action_required: 'Customer action required',
};
export const BILLING_STATUS_TONE: Record<ContractBilling['status'], 'success' | 'warning' | 'critical'> = {
  ok: 'success',
  retrying: 'warning',
  action_required: 'critical',
};

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
