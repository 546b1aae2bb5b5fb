import type { ContractState } from '../domain/contract.js';
import type { WithJsonText } from '../domain/resources.js';

/**
 * The columns of a contract's state, once: the reads select them under the domain's names, and the change path's
 * statement writes them from arrays of this list's order. A new field of the state is a column here and in a
 * migration; no statement is written by hand again.
 *
 * `json` columns are written only when the command changed them (a new object: commands never mutate one they
 * read), SQL NULL standing for "as it is": a pause does not send the lines back to the database.
 */
export type StateColumn = { readonly column: string; readonly key: keyof ContractState; readonly type: 'text' | 'int' | 'timestamptz' | 'json' | 'jsonb'; readonly json?: true };

export const STATE_COLUMNS: readonly StateColumn[] = [
  { column: 'status', key: 'status', type: 'text' },
  { column: 'customer_id', key: 'customerId', type: 'text' },
  { column: 'customer_email', key: 'customerEmail', type: 'text' },
  { column: 'billing_interval', key: 'billingInterval', type: 'text' },
  { column: 'billing_interval_count', key: 'billingIntervalCount', type: 'int' },
  { column: 'delivery_interval', key: 'deliveryInterval', type: 'text' },
  { column: 'delivery_interval_count', key: 'deliveryIntervalCount', type: 'int' },
  { column: 'next_billing_date', key: 'nextBillingDate', type: 'timestamptz' },
  { column: 'paused_at', key: 'pausedAt', type: 'timestamptz' },
  { column: 'resume_at', key: 'resumeAt', type: 'timestamptz' },
  { column: 'cancelled_at', key: 'cancelledAt', type: 'timestamptz' },
  { column: 'cancellation_reason', key: 'cancellationReason', type: 'text' },
  { column: 'lines', key: 'lines', type: 'json', json: true },
  { column: 'shipping_address', key: 'shippingAddress', type: 'json', json: true },
  { column: 'delivery_price', key: 'deliveryPrice', type: 'json', json: true },
  { column: 'discounts', key: 'discounts', type: 'json', json: true },
  { column: 'totals', key: 'totals', type: 'json', json: true },
  { column: 'billing_status', key: 'billingStatus', type: 'text' },
  { column: 'billing_failed_attempts', key: 'billingFailedAttempts', type: 'int' },
  { column: 'billing_next_attempt_at', key: 'billingNextAttemptAt', type: 'timestamptz' },
  { column: 'billing_cycle_date', key: 'billingCycleDate', type: 'timestamptz' },
  { column: 'billing_last_attempt', key: 'billingLastAttempt', type: 'jsonb', json: true },
];

/**
 * The select list of a contract row (alias `c`): every column under the name the row type gives it. `jsonAsText`:
 * the json columns as PostgreSQL writes them, unparsed (a ContractText), for a read that only passes them on.
 */
function contractColumns(jsonAsText: boolean): string {
  const state = STATE_COLUMNS.map((c) => `c.${c.column}${jsonAsText && c.json ? '::text' : ''} AS "${c.key}"`).join(', ');
  return `
  c.id::text AS id, c.shop_id::text AS "shopId", ${state},
  c.created_at AS "createdAt", c.updated_at AS "updatedAt", c.version,
  c.platform_revision::text AS "platformRevision", c.platform_updated_at AS "platformUpdatedAt"`;
}

export const CONTRACT_COLUMNS = contractColumns(false);
export const CONTRACT_TEXT_COLUMNS = contractColumns(true);

/** A contract row whose json columns are still the database's JSON text (null stays null). */
export type ContractText<Row> = WithJsonText<Row>;
