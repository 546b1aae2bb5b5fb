import type { ContractEvent, ContractStatus, Discount, Money } from './api';
import { formatPrice } from './money';

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
const shortThisYear = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit' });
const shortOtherYear = new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'short', day: 'numeric' });
/** A moment in few words, for a button: the day and time this year ("Nov 22, 10:00 AM"), the day in another. */
export const formatShortDateTime = (iso: string) => {
  const d = new Date(iso);
  return (d.getFullYear() === new Date().getFullYear() ? shortThisYear : shortOtherYear).format(d);
};
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

type Rec = Record<string, unknown>;
const rec = (v: unknown): Rec | null => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Rec) : null);
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const num = (v: unknown): number | null => (typeof v === 'number' ? v : null);
const money = (v: unknown): string | null => {
  const m = rec(v);
  return m && typeof m.amount === 'string' && typeof m.currencyCode === 'string' ? formatPrice(m as Money) : null;
};
const policy = (v: unknown): string | null => {
  const p = rec(v);
  return p && typeof p.interval === 'string' && typeof p.intervalCount === 'number' ? intervalLabel(p.interval, p.intervalCount).toLowerCase() : null;
};
/** A line's product as a change names it: its title, or its variant's id. */
const product = (v: Rec | null): string => {
  const title = str(v?.title);
  return title ? `“${title}”` : `variant ${str(v?.variantId) ?? '?'}`;
};
const discountText = (v: unknown): string => {
  const d = rec(v) as Partial<Discount> | null;
  if (!d) return 'a discount';
  const name = d.code ?? d.title ?? 'a discount';
  const value = d.value?.type === 'percentage' ? `${d.value.percentage}% off` : d.value?.type === 'fixed_amount' ? `${formatPrice(d.value.amount)} off` : null;
  return value ? `${name} (${value})` : name;
};

/**
 * What an edit changed (a `contract.updated` event's `data.changes`: each operation with its before and after), one
 * line per change in the merchant's words. `lineTitle` names a line by its id from the contract as it is now (a
 * quantity's change carries the line's id only); a line gone since is "a line".
 */
export function eventChanges(e: ContractEvent, lineTitle: (lineId: string) => string | undefined = () => undefined): string[] {
  const changes = Array.isArray(e.data?.changes) ? e.data.changes : [];
  const out: string[] = [];
  for (const raw of changes) {
    const c = rec(raw);
    if (!c) continue;
    const before = rec(c.before);
    const after = rec(c.after);
    const lineId = str(c.lineId);
    const title = (lineId && lineTitle(lineId)) || null;
    const line = title ? `“${title}”` : 'a line';
    switch (c.op) {
      case 'set_quantity':
        out.push(`Quantity of ${line}: ${num(before?.quantity) ?? '?'} → ${num(after?.quantity) ?? '?'}`);
        break;
      case 'set_price':
        out.push(`Price of ${line}: ${money(before?.price) ?? '?'} → ${money(after?.price) ?? '?'}`);
        break;
      case 'swap_variant': {
        const price = money(after?.price);
        out.push(`Swapped ${product(before)} for ${product(after)}${price ? ` at ${price}` : ''}`);
        break;
      }
      case 'add_line': {
        const price = money(after?.price);
        out.push(`Added ${num(after?.quantity) ?? 1} × ${product(after)}${price ? ` at ${price}` : ''}`);
        break;
      }
      case 'remove_line': {
        const quantity = num(before?.quantity);
        out.push(`Removed ${quantity !== null ? `${quantity} × ` : ''}${product(before)}`);
        break;
      }
      case 'set_frequency': {
        const from = policy(before?.billingPolicy);
        const to = policy(after?.billingPolicy);
        out.push(`Frequency: ${from ?? '?'} → ${to ?? '?'}`);
        const nextBefore = str(before?.nextBillingDate);
        const nextAfter = str(after?.nextBillingDate);
        if (nextAfter && nextAfter !== nextBefore) out.push(`Next billing ${nextBefore ? `${formatDateTime(nextBefore)} → ` : ''}${formatDateTime(nextAfter)}`);
        break;
      }
      case 'set_shipping_address':
        // The event keeps no address (it is personal data): only that it changed.
        out.push('Shipping address changed');
        break;
      case 'apply_discount_code':
        out.push(`Discount applied: ${discountText(after)}`);
        break;
      case 'remove_discount':
        out.push(`Discount removed: ${discountText(before)}`);
        break;
      default:
        out.push(`Changed: ${String(c.op).replace(/_/g, ' ')}`);
    }
  }
  return out;
}

export const intervalLabel = (interval: string, count: number) =>
  `Every ${count === 1 ? '' : `${count} `}${interval.toLowerCase()}${count === 1 ? '' : 's'}`;
