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

export const formatDateTime = (iso: string | null | undefined, empty = '—') => (iso ? dateTime.format(new Date(iso)) : empty);
export const formatDate = (iso: string) => dateOnly.format(new Date(iso));

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
};

export const eventLabel = (type: string) => EVENT_LABEL[type] ?? type;

/** Who did it, in the merchant's words: which key (by fingerprint), the IDE tools, the automatic resume, or staff. */
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
    default:
      return String((actor as { type: string }).type);
  }
}

/** The details an event carries (resume date, new billing date, reason) as short readable text. */
export function eventDetails(e: ContractEvent): string[] {
  const out: string[] = [];
  const d = e.data ?? {};
  if (typeof d.resumeAt === 'string') out.push(`Resumes ${formatDateTime(d.resumeAt)}`);
  else if (e.type === 'contract.paused' || e.type === 'contract.pause_updated') {
    if ('resumeAt' in d && d.resumeAt === null) out.push('Paused until resumed');
  }
  if (typeof d.nextBillingDate === 'string') out.push(`Next billing ${formatDateTime(d.nextBillingDate)}`);
  if (typeof d.reason === 'string' && d.reason) out.push(`Reason: ${d.reason}`);
  if (e.from !== e.to) out.push(`${STATUS_LABEL[e.from] ?? e.from} → ${STATUS_LABEL[e.to] ?? e.to}`);
  return out;
}

export const intervalLabel = (interval: string, count: number) =>
  `Every ${count === 1 ? '' : `${count} `}${interval.toLowerCase()}${count === 1 ? '' : 's'}`;
