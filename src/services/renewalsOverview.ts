import { billedFigures, dueFigures, type MoneyRow } from '../db/renewalsOverviewRows.js';
import type { Money } from '../domain/money.js';
import type { ServiceCall } from './context.js';

export const OVERVIEW_LIMITS = { days: { min: 1, max: 90, default: 30 }, ahead: { min: 0, max: 31, default: 7 } } as const;

export type BilledDay = {
  attempts: number;
  succeeded: number;
  failed: number;
  failedByCode: { errorCode: string; count: number }[];
  actionRequired: number;
  pending: number;
  recovered: number;
  revenue: Money[];
};
export type DueDay = { renewals: number; expectedRevenue: Money[] };
export type OverviewDay = { date: string; billed: BilledDay | null; due: DueDay | null };
export type RenewalsOverview = {
  from: string;
  today: string;
  to: string;
  days: OverviewDay[];
  totals: { billed: BilledDay; due: DueDay };
};

const DAY_MS = 86_400_000;
const dayOf = (d: Date) => d.toISOString().slice(0, 10);

/**
 * The Renewals overview of the caller's shop, by UTC day: for the last `days` days up to today, the attempts made
 * each day and what became of them (succeeded, failed by code, awaiting the customer, pending, recovered by a retry)
 * with the revenue of the successes; for the rest of today and the `ahead` days after it, the renewals due and the
 * revenue they are expected to bring. Every day of the window is listed, with zeros where nothing happened. Money is
 * summed by the database per currency and sent as decimal strings.
 */
export async function getRenewalsOverview({ ctx, input }: ServiceCall<{ shopId: string; days: number; ahead: number }>): Promise<RenewalsOverview> {
  const now = ctx.clock.now();
  const today = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
  const from = new Date(today.getTime() - (input.days - 1) * DAY_MS);
  const tomorrow = new Date(today.getTime() + DAY_MS);
  const end = new Date(tomorrow.getTime() + input.ahead * DAY_MS);
  const billed = await billedFigures(ctx.db, { shopId: input.shopId, from, to: tomorrow });
  const due = await dueFigures(ctx.db, { shopId: input.shopId, now, to: end });

  const money = (rows: MoneyRow[], day: string | null): Money[] =>
    rows.filter((r) => r.day === day).map((r) => ({ amount: r.amount, currencyCode: r.currencyCode }));
  const billedOn = (day: string | null): BilledDay => {
    const row = billed.billed.find((r) => r.day === day);
    return {
      attempts: row?.attempts ?? 0,
      succeeded: row?.succeeded ?? 0,
      failed: row?.failed ?? 0,
      failedByCode: billed.failures.filter((r) => r.day === day).map((r) => ({ errorCode: r.errorCode, count: r.count })),
      actionRequired: row?.actionRequired ?? 0,
      pending: row?.pending ?? 0,
      recovered: row?.recovered ?? 0,
      revenue: money(billed.revenue, day),
    };
  };
  const dueOn = (day: string | null): DueDay => ({
    renewals: due.due.find((r) => r.day === day)?.renewals ?? 0,
    expectedRevenue: money(due.revenue, day),
  });

  const days: OverviewDay[] = [];
  const todayText = dayOf(today);
  for (let t = from.getTime(); t < end.getTime(); t += DAY_MS) {
    const date = dayOf(new Date(t));
    days.push({ date, billed: date <= todayText ? billedOn(date) : null, due: date >= todayText ? dueOn(date) : null });
  }
  return { from: dayOf(from), today: todayText, to: days[days.length - 1].date, days, totals: { billed: billedOn(null), due: dueOn(null) } };
}
