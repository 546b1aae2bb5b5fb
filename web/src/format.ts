import type { ContractEvent, ContractStatus } from './api';

/** Dates in the merchant's locale and time zone, with the zone named so a resume time is never ambiguous. */
const dateTime = new Intl.DateTimeFormat(undefined, {
  year: 'numeric',
  month: 'short',
  day: 'numeric',
  hour: 'numeric',
  minute: '2-digit',
  timeZoneName: 'short',
});
const dateOnly = new Intl.DateTimeFormat(undefined, { dateStyle: 'long' });
const day = new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'short', day: 'numeric' });
const time = new Intl.DateTimeFormat(undefined, { hour: 'numeric', minute: '2-digit', timeZoneName: 'short' });

export const formatDateTime = (iso: string | null | undefined, empty = '—') => (iso ? dateTime.format(new Date(iso)) : empty);
export const formatDate = (iso: string) => dateOnly.format(new Date(iso));
/** A moment in two parts, for a table cell that shows them on two lines: the day, and the time with its zone. */
export const formatDayAndTime = (iso: string) => ({ day: day.format(new Date(iso)), time: time.format(new Date(iso)) });

export const STATUS_LABEL: Record<ContractStatus, string> = {
  ACTIVE: 'Active',
  PAUSED: 'Paused',
  CANCELLED: 'Cancelled',
  EXPIRED: 'Expired',
  FAILED: 'Failed',
};

export const STATUS_TONE: Record<ContractStatus, 'success' | 'attention' | 'critical' | undefined> = {
  ACTIVE: 'success',
  PAUSED: 'attention',
  CANCELLED: undefined,
  EXPIRED: undefined,
  FAILED: 'critical',
};

const EVENT_LABEL: Record<string, string> = {
  'contract.paused': 'Paused',
  'contract.pause_updated': 'Pause updated',
  'contract.resumed': 'Resumed',
  'contract.cancelled': 'Cancelled',
  'contract.skipped': 'Next order skipped',
  'contract.rescheduled': 'Next billing date changed',
  // Platform mode: changes made on the platform, outside svc (docs/product.md, "Platform mode").
  'contract.created': 'Created',
  'contract.updated': 'Updated',
  'contract.expired': 'Expired',
  'contract.failed': 'Failed',
  // Renewals: each billing attempt and its outcome.
  'billing.attempted': 'Billing attempt made',
  'billing.succeeded': 'Billed',
  'billing.failed': 'Billing failed',
  'billing.action_required': 'Billing needs the customer',
  'billing.missed': 'Billing missed (too late)',
};

const CHANGED_FIELD: Record<string, string> = {
  nextBillingDate: 'next billing date',
  lines: 'products',
  billingPolicy: 'billing frequency',
  customer: 'customer',
};

export const eventLabel = (type: string) => EVENT_LABEL[type] ?? type;

/**
 * Who did it, in the merchant's words: which key (by fingerprint), the IDE tools, the automatic resume, staff, or
 * the platform (a change made in Shopify itself: the Shopify admin, the customer's account, another app).
 */
export function actorLabel(actor: ContractEvent['actor']): string {
  const fp = actor.keyFingerprint ? ` ${actor.keyFingerprint}` : '';
  switch (actor.type) {
    case 'api_key':
      return `API key${fp}`;
    case 'mcp':
      return `MCP (IDE tools)${fp ? `, key${fp}` : ''}`;
    case 'scheduler':
      return 'Scheduler (automatic resume)';
    case 'admin':
      return 'Admin';
    case 'platform':
      return 'Platform (changed in Shopify, not through this app)';
    case 'billing':
      return 'Billing (automatic renewal)';
    case 'bulk_job':
      return `Bulk job${actor.id ? ` ${actor.id.slice(0, 8)}` : ''}`;
    case 'oauth':
      return 'Connected app';
    default:
      return String((actor as { type: string }).type);
  }
}

/** The details an event carries (resume date, new billing date, reason) as short readable text. */
export function eventDetails(e: ContractEvent): string[] {
  const out: string[] = [];
  const d = e.data ?? {};
  // A change on the platform names what changed; the next billing date has its own detail below.
  const changed = Array.isArray(d.changed) ? d.changed.map(String).filter((f) => f !== 'nextBillingDate' || typeof d.nextBillingDate !== 'string') : [];
  if (changed.length) out.push(`Changed: ${changed.map((f) => CHANGED_FIELD[f] ?? f).join(', ')}`);
  if (typeof d.resumeAt === 'string') out.push(`Resumes ${formatDateTime(d.resumeAt)}`);
  else if (e.type === 'contract.paused' || e.type === 'contract.pause_updated') {
    if ('resumeAt' in d && d.resumeAt === null) out.push('Paused until resumed');
  }
  // A resume keeps a next billing date still ahead: no change worth a line.
  if (typeof d.nextBillingDate === 'string' && d.nextBillingDate !== d.previousNextBillingDate) {
    const before = typeof d.previousNextBillingDate === 'string' ? `${formatDateTime(d.previousNextBillingDate)} → ` : '';
    out.push(`Next billing ${before}${formatDateTime(d.nextBillingDate)}`);
  }
  if (typeof d.reason === 'string' && d.reason) out.push(`Reason: ${d.reason}`);
  if (e.from !== e.to) out.push(`${STATUS_LABEL[e.from] ?? e.from} → ${STATUS_LABEL[e.to] ?? e.to}`);
  return out;
}

export const intervalLabel = (interval: string, count: number) =>
  `Every ${count === 1 ? '' : `${count} `}${interval.toLowerCase()}${count === 1 ? '' : 's'}`;
