import type { ApiKey, BulkChange, BulkEditOperation, BulkJob, BulkJobResultStatus, BulkJobStatus } from './api';
import { formatDateTime, intervalLabel } from './format';

/** Bulk jobs in the merchant's words: statuses, what a job changes, who made it, how far it got. */

export const JOB_STATUS_LABEL: Record<BulkJobStatus, string> = {
  previewing: 'Previewing',
  previewed: 'Previewed',
  queued: 'Queued',
  running: 'Running',
  completed: 'Completed',
  cancelled: 'Cancelled',
  failed: 'Failed',
  expired: 'Expired',
};

export const JOB_STATUS_TONE: Record<BulkJobStatus, 'info' | 'success' | 'attention' | 'critical' | undefined> = {
  previewing: 'info',
  previewed: 'attention',
  queued: 'info',
  running: 'info',
  completed: 'success',
  cancelled: undefined,
  failed: 'critical',
  expired: undefined,
};

/** The job's work is under way: the page follows it. */
export const isActive = (s: BulkJobStatus) => s === 'previewing' || s === 'queued' || s === 'running';
/** The job may still be cancelled (a preview discarded). */
export const isUnfinished = (s: BulkJobStatus) => isActive(s) || s === 'previewed';

/** A preview's outcomes say what would happen; a run's what did. */
export function resultLabel(status: BulkJobResultStatus, preview: boolean): string {
  switch (status) {
    case 'succeeded':
      return preview ? 'Will change' : 'Changed';
    case 'skipped':
      return 'Unchanged';
    case 'failed':
      return preview ? 'Problem' : 'Failed';
    case 'pending':
      return 'Pending';
  }
}

export const RESULT_TONE: Record<BulkJobResultStatus, 'success' | 'critical' | 'info' | undefined> = {
  succeeded: 'success',
  failed: 'critical',
  skipped: undefined,
  pending: 'info',
};

/** The part of the job that is decided, 0 to 100. */
export function progressOf(job: Pick<BulkJob, 'counts'>): number {
  const { matched, pending } = job.counts;
  return matched === 0 ? 100 : Math.floor(((matched - pending) * 100) / matched);
}

export const contractsCount = (n: number) => `${n.toLocaleString('en-US')} ${n === 1 ? 'contract' : 'contracts'}`;

const variant = (id: string) => `variant ${id}`;

function operationText(o: BulkEditOperation): string {
  switch (o.op) {
    case 'set_quantity':
      return `Set the quantity of ${variant(o.variantId)} to ${o.quantity}`;
    case 'swap_variant':
      return `Swap ${variant(o.fromVariantId)} for ${variant(o.variantId)}${o.price ? ` at ${o.price}` : ''}`;
    case 'set_price':
      return `Set the price of ${variant(o.variantId)} to ${o.price}`;
    case 'remove_variant':
      return `Remove ${variant(o.variantId)}`;
    case 'add_line':
      return `Add ${o.quantity} × ${variant(o.variantId)}${o.price ? ` at ${o.price}` : ''}`;
    case 'set_frequency':
      return `Bill ${intervalLabel(o.interval, o.intervalCount).toLowerCase()}`;
    case 'set_shipping_address':
      return `Ship to ${[o.address.address1, o.address.city, o.address.countryCode].filter(Boolean).join(', ')}`;
    case 'apply_discount_code':
      return `Apply the discount code ${o.code}`;
    default:
      return (o as { op: string }).op;
  }
}

/** What a job changes, in one line. */
export function changeText(change: unknown): string {
  const c = change as BulkChange;
  if (!c || typeof c !== 'object') return '—';
  if ('operations' in c) return c.operations.map(operationText).join('; ');
  switch (c.action) {
    case 'pause':
      return c.resumeAt ? `Pause until ${formatDateTime(c.resumeAt)}` : 'Pause until resumed';
    case 'resume':
      return 'Resume';
    case 'cancel':
      return c.reason ? `Cancel (reason: ${c.reason})` : 'Cancel';
    case 'skip':
      return 'Skip the next order';
    case 'reschedule':
      return `Move the next billing date to ${formatDateTime(c.nextBillingDate)}`;
    default:
      return (c as { action: string }).action;
  }
}

/** Who made the job: the admin, or a key (by its name when the page knows it). */
export function createdByText(createdBy: BulkJob['createdBy'], keys: Map<string, ApiKey>): string {
  const key = createdBy.keyId ? keys.get(createdBy.keyId) : undefined;
  const keyName = key ? ` ${key.name ? `“${key.name}”` : key.fingerprint}` : '';
  switch (createdBy.type) {
    case 'admin':
      return 'Admin';
    case 'api_key':
      return `API key${keyName}`;
    case 'mcp':
      return `MCP (IDE tools)${keyName ? `, key${keyName}` : ''}`;
    case 'oauth':
      return 'Connected app';
    default:
      return createdBy.type;
  }
}
