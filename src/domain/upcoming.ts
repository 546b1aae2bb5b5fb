import type { ContractState, Line } from './contract.js';
import { nextBillingAfter } from './contract.js';
import { addInterval } from './time.js';
import type { Money } from './money.js';
import { unreachable } from './unreachable.js';

/** 9999-12-31T23:59:59.999Z: the last moment an ISO 8601 date with a four-digit year can name. */
const LAST_WRITABLE_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/** One renewal svc will make: when, whether that cycle is skipped, what it delivers and what it bills. */
export type UpcomingRenewal = { date: Date; skipped: boolean; lines: Line[]; total: Money };

/**
 * The next `count` renewals of a contract as svc will make them, from `now`: none for a contract that is ended,
 * failed, or paused with no resume date; from its resume date for one paused until then (a past next billing date
 * then moves to the first one after the resume, as the resume does); a failed payment's scheduled retry first. The
 * dates keep the schedule's anchor (month ends stay month ends). Skipped cycles are not made (a skip moves the date),
 * so none is listed as skipped.
 */
export function upcomingRenewals(s: ContractState, now: Date, count: number): UpcomingRenewal[] {
  const total: Money = { amount: s.totals.total, currencyCode: s.totals.currencyCode };
  const at = (date: Date): UpcomingRenewal => ({ date, skipped: false, lines: s.lines, total });
  let anchor: Date;
  const out: UpcomingRenewal[] = [];
  switch (s.status) {
    case 'CANCELLED':
    case 'EXPIRED':
    case 'FAILED':
      return [];
    case 'PAUSED': {
      if (!s.resumeAt) return [];
      const resume = s.resumeAt.getTime() > now.getTime() ? s.resumeAt : now;
      anchor = nextBillingAfter(s.nextBillingDate, s.billingInterval, s.billingIntervalCount, resume);
      break;
    }
    case 'ACTIVE':
      if (s.billingNextAttemptAt && s.billingCycleDate) {
        out.push(at(s.billingNextAttemptAt));
        anchor = addInterval(s.billingCycleDate, s.billingInterval, s.billingIntervalCount);
      } else anchor = s.nextBillingDate;
      break;
    default:
      return unreachable(s.status);
  }
  for (let k = 0; out.length < count; k++) {
    const date = addInterval(anchor, s.billingInterval, s.billingIntervalCount * k);
    // Past year 9999 no date can be written as the API writes them (ISO 8601, four-digit years): none is listed.
    if (date.getTime() > LAST_WRITABLE_MS || Number.isNaN(date.getTime())) break;
    out.push(at(date));
  }
  return out.slice(0, count).filter((r) => r.date.getTime() <= LAST_WRITABLE_MS);
}
