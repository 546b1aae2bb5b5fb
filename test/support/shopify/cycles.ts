import type { Contract, Interval } from './store.js';

/**
 * Billing cycles, computed as the platform does from the contract's billing policy: cycle 1 starts at the
 * contract's first billing date, cycle i at first + (i-1) × intervalCount intervals (months keep the anchor's day,
 * clamped to the month's last day). A cycle runs from its billing date (`cycleStartAt` =
 * `billingAttemptExpectedDate`) to the next one (`cycleEndAt`). `nextBillingDate` is app-managed and separate:
 * setting it does not move the cycles, and skipping a cycle does not change it.
 */
export type BillingCycle = {
  contract: Contract;
  index: number;
  startAt: Date;
  endAt: Date;
  skipped: boolean;
  /**
   * BILLED once an attempt billed it; UNBILLED while its attempts failed. A cycle with no attempt is BILLED once its
   * date has passed (billed outside what the stand-in was asked).
   */
  status: 'BILLED' | 'UNBILLED';
};

const MAX_CYCLES = 100_000;

export function addIntervals(anchor: Date, interval: Interval, count: number): Date {
  const d = new Date(anchor.getTime());
  if (interval === 'DAY') return new Date(d.getTime() + count * 86_400_000);
  if (interval === 'WEEK') return new Date(d.getTime() + count * 7 * 86_400_000);
  const months = interval === 'YEAR' ? count * 12 : count;
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth() + months;
  const targetYear = y + Math.floor(m / 12);
  const targetMonth = ((m % 12) + 12) % 12;
  const lastDay = new Date(Date.UTC(targetYear, targetMonth + 1, 0)).getUTCDate();
  return new Date(
    Date.UTC(targetYear, targetMonth, Math.min(d.getUTCDate(), lastDay), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds()),
  );
}

export function cycleStart(contract: Contract, index: number): Date {
  const { interval, intervalCount } = contract.billingPolicy;
  return addIntervals(contract.firstBillingDate, interval, intervalCount * (index - 1));
}

export function billingCycle(contract: Contract, index: number, now: Date): BillingCycle {
  const startAt = cycleStart(contract, index);
  return {
    contract,
    index,
    startAt,
    endAt: cycleStart(contract, index + 1),
    skipped: contract.skippedCycles.has(index),
    status: billedStatus(contract.cycleBilling?.get(index), startAt, now),
  };
}

/** The index of the cycle a date falls in (a date before the first cycle selects the first). */
export function cycleIndexAt(contract: Contract, date: Date): number {
  let i = 1;
  while (i < MAX_CYCLES && cycleStart(contract, i + 1).getTime() <= date.getTime()) i++;
  return i;
}

/** Cycles selected by an index range or a date range (billing date within [start, end]), in index order. */
export function cyclesInRange(
  contract: Contract,
  now: Date,
  range: { startIndex: number; endIndex: number } | { startDate: Date; endDate: Date },
): BillingCycle[] {
  const out: BillingCycle[] = [];
  if ('startIndex' in range) {
    for (let i = Math.max(1, range.startIndex); i <= range.endIndex && out.length < MAX_CYCLES; i++) out.push(billingCycle(contract, i, now));
    return out;
  }
  for (let i = cycleIndexAt(contract, range.startDate); i < MAX_CYCLES; i++) {
    const cycle = billingCycle(contract, i, now);
    if (cycle.startAt.getTime() > range.endDate.getTime()) break;
    if (cycle.startAt.getTime() >= range.startDate.getTime()) out.push(cycle);
  }
  return out;
}

function billedStatus(billing: 'billed' | 'failed' | undefined, startAt: Date, now: Date): 'BILLED' | 'UNBILLED' {
  if (billing) return billing === 'billed' ? 'BILLED' : 'UNBILLED';
  return startAt.getTime() <= now.getTime() ? 'BILLED' : 'UNBILLED';
}
