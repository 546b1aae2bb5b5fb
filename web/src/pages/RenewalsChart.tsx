import { useId } from 'react';
import type { Money, RenewalsDay, RenewalsOverview } from '../api';
import { errorLabel } from '../billingText';
import { formatMoney } from '../money';

/** The segments of a day's bar, bottom up, with their colours (the legend lists those present). */
export const SERIES = {
  succeeded: { label: 'Succeeded', colour: '#29845a' },
  recovered: { label: 'Recovered by a retry', colour: '#2c6ecb' },
  failed: { label: 'Failed', colour: '#e22c38' },
  actionRequired: { label: 'Customer action required', colour: '#ffb800' },
  pending: { label: 'Pending', colour: '#8a8a8a' },
  due: { label: 'Due (expected)', colour: '#b5b5b5' },
  revenue: { label: 'Revenue', colour: '#4a4a4a' },
} as const;
/** Failures by code: shades of red and orange, in the order the codes first appear. */
const FAILURE_SHADES = ['#e22c38', '#b3001c', '#ff6d6d', '#c4450c', '#ff8f4d', '#8e1f0b', '#f5a3a3', '#6b0f1a'];

const dayLabel = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' });
export const formatDay = (date: string) => dayLabel.format(new Date(`${date}T00:00:00Z`));

/** A scale's top: 1, 2 or 5 times a power of ten, at least `max`. */
function niceTop(max: number): number {
  if (max <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(max));
  return [1, 2, 5, 10].map((m) => m * p).find((v) => v >= max)!;
}

/** The currency the revenue line follows: the one with the most revenue in the window (billed and expected). */
export function chartCurrency(o: RenewalsOverview): string | null {
  const all = [...o.totals.billed.revenue, ...o.totals.due.expectedRevenue];
  if (!all.length) return null;
  const sum = new Map<string, number>();
  // Only to choose a currency and place points: the amounts shown anywhere are the server's decimal strings.
  for (const m of all) sum.set(m.currencyCode, (sum.get(m.currencyCode) ?? 0) + Number(m.amount));
  return [...sum.entries()].sort((a, b) => b[1] - a[1])[0][0];
}
const amountIn = (list: Money[], currency: string) => list.find((m) => m.currencyCode === currency)?.amount ?? null;

/** What a day's bar says in words: its tooltip, and the same figures as the table's row. */
export function daySummary(d: RenewalsDay): string {
  const parts: string[] = [formatDay(d.date)];
  if (d.billed) {
    const b = d.billed;
    parts.push(`${b.attempts} attempts: ${b.succeeded} succeeded (${b.recovered} recovered), ${b.failed} failed`);
    if (b.failedByCode.length) parts.push(`failed: ${b.failedByCode.map((f) => `${errorLabel(f.errorCode)} ${f.count}`).join(', ')}`);
    if (b.actionRequired) parts.push(`${b.actionRequired} awaiting the customer`);
    if (b.pending) parts.push(`${b.pending} pending`);
    if (b.revenue.length) parts.push(`revenue ${b.revenue.map((m) => formatMoney(m.amount, m.currencyCode)).join(' + ')}`);
  }
  if (d.due) {
    parts.push(`${d.due.renewals} renewals due`);
    if (d.due.expectedRevenue.length) parts.push(`expected ${d.due.expectedRevenue.map((m) => formatMoney(m.amount, m.currencyCode)).join(' + ')}`);
  }
  return parts.join('; ');
}

type Segment = { key: string; value: number; colour: string };

/**
 * The Renewals overview as a chart drawn here in SVG: per day, a bar of the attempts made (succeeded, recovered,
 * failed by code, awaiting the customer, pending) and, from today, a lighter bar of the renewals due; a mark of the
 * revenue in one currency (filled: billed, hollow: expected). Each day's figures are its tooltip; the table below the
 * chart holds every figure, so the chart is described, not read out.
 */
export function RenewalsChart({ overview: o, narrow }: { overview: RenewalsOverview; narrow: boolean }) {
  const id = useId();
  const W = narrow ? 360 : 800;
  const H = narrow ? 220 : 260;
  const pad = { left: 32, right: narrow ? 52 : 72, top: 12, bottom: 28 };
  const plotW = W - pad.left - pad.right;
  const plotH = H - pad.top - pad.bottom;
  const band = plotW / o.days.length;
  const codes = [...new Set(o.days.flatMap((d) => d.billed?.failedByCode.map((f) => f.errorCode) ?? []))];
  const shade = (code: string) => FAILURE_SHADES[codes.indexOf(code) % FAILURE_SHADES.length];

  // At least 2, so the middle line of the grid is a whole number of attempts.
  const countTop = Math.max(2, niceTop(Math.max(...o.days.map((d) => Math.max(d.billed?.attempts ?? 0, d.due?.renewals ?? 0)))));
  const y = (v: number) => pad.top + plotH - (v / countTop) * plotH;
  const currency = chartCurrency(o);
  const revenueOf = (d: RenewalsDay) => (currency && d.billed ? Number(amountIn(d.billed.revenue, currency) ?? 0) : null);
  const expectedOf = (d: RenewalsDay) => (currency && d.due ? Number(amountIn(d.due.expectedRevenue, currency) ?? 0) : null);
  const moneyTop = niceTop(Math.max(0, ...o.days.flatMap((d) => [revenueOf(d) ?? 0, expectedOf(d) ?? 0])));
  const yMoney = (v: number) => pad.top + plotH - (v / moneyTop) * plotH;
  const x = (i: number) => pad.left + i * band;

  const segments = (d: RenewalsDay): Segment[] => {
    const b = d.billed;
    if (!b) return [];
    const failed = b.failedByCode.map((f) => ({ key: `failed-${f.errorCode}`, value: f.count, colour: shade(f.errorCode) }));
    const uncoded = b.failed - b.failedByCode.reduce((n, f) => n + f.count, 0);
    return [
      { key: 'succeeded', value: b.succeeded - b.recovered, colour: SERIES.succeeded.colour },
      { key: 'recovered', value: b.recovered, colour: SERIES.recovered.colour },
      ...failed,
      ...(uncoded > 0 ? [{ key: 'failed', value: uncoded, colour: SERIES.failed.colour }] : []),
      { key: 'action', value: b.actionRequired, colour: SERIES.actionRequired.colour },
      { key: 'pending', value: b.pending, colour: SERIES.pending.colour },
    ].filter((s) => s.value > 0);
  };

  // Revenue as a mark per day that has some: filled for what was billed, hollow for what is expected.
  const marks = (values: (number | null)[], expected: boolean) =>
    values.map((v, i) =>
      v ? (
        <circle
          key={`${expected ? 'e' : 'b'}-${i}`}
          cx={x(i) + band / 2 + (expected && o.days[i].billed ? band / 4 : 0)}
          cy={yMoney(v)}
          r={narrow ? 2.5 : 3.5}
          fill={expected ? '#ffffff' : SERIES.revenue.colour}
          stroke={SERIES.revenue.colour}
          strokeWidth={1.5}
          data-series={expected ? 'expected-revenue' : 'revenue'}
        />
      ) : null,
    );
  const labelEvery = narrow ? 9 : 7;
  const todayIndex = o.days.findIndex((d) => d.date === o.today);
  // Day labels every week, and Today; a weekly label too close to Today would overlap it.
  const labelled = (i: number) => i === todayIndex || (i % labelEvery === 0 && Math.abs(i - todayIndex) > (narrow ? 4 : 3));
  const billedDays = o.days.filter((d) => d.billed).length;
  const dueDays = o.days.filter((d) => d.due).length - 1;

  return (
    <svg
      viewBox={`0 0 ${W} ${H}`}
      width="100%"
      role="img"
      aria-labelledby={`${id}-title ${id}-desc`}
      style={{ display: 'block', maxWidth: '100%', height: 'auto', fontFamily: 'inherit' }}
      data-testid="renewals-chart"
    >
      <title id={`${id}-title`}>Renewals per day</title>
      <desc id={`${id}-desc`}>
        {`Attempts of the last ${billedDays} days by outcome and renewals due in the next ${dueDays} days, with ${currency ? `revenue in ${currency}` : 'no revenue yet'}. ` +
          `In all: ${o.totals.billed.attempts} attempts, ${o.totals.billed.succeeded} succeeded, ${o.totals.billed.recovered} recovered, ${o.totals.billed.failed} failed; ` +
          `${o.totals.due.renewals} renewals due. The table below lists every day.`}
      </desc>
      {/* Grid and the two scales: counts on the left, money on the right. */}
      {[0, 0.5, 1].map((f) => (
        <g key={f}>
          <line x1={pad.left} x2={W - pad.right} y1={y(countTop * f)} y2={y(countTop * f)} stroke="#e3e3e3" />
          <text x={pad.left - 4} y={y(countTop * f) + 4} textAnchor="end" fontSize={10} fill="#616161">
            {Math.round(countTop * f)}
          </text>
          {currency && (
            <text x={W - pad.right + 4} y={yMoney(moneyTop * f) + 4} fontSize={10} fill="#616161">
              {formatMoney(String(moneyTop * f), currency)}
            </text>
          )}
        </g>
      ))}
      {todayIndex >= 0 && <rect x={x(todayIndex)} y={pad.top} width={band} height={plotH} fill="#f1f1f1" />}
      {o.days.map((d, i) => {
        let top = y(0);
        const both = d.billed && d.due;
        const w = Math.max(1, (both ? band / 2 : band) * 0.7);
        const bx = x(i) + (both ? band * 0.05 : band * 0.15);
        return (
          <g key={d.date} data-date={d.date}>
            <title>{daySummary(d)}</title>
            {/* The whole band answers the pointer, so a day with nothing still shows its tooltip. */}
            <rect x={x(i)} y={pad.top} width={band} height={plotH} fill="transparent" />
            {segments(d).map((s) => {
              const h = y(0) - y(s.value);
              top -= h;
              return <rect key={s.key} x={bx} y={top} width={w} height={h} fill={s.colour} data-series={s.key} />;
            })}
            {d.due && d.due.renewals > 0 && (
              <rect
                x={both ? x(i) + band * 0.5 : bx}
                y={y(d.due.renewals)}
                width={w}
                height={y(0) - y(d.due.renewals)}
                fill={SERIES.due.colour}
                fillOpacity={0.5}
                stroke="#8a8a8a"
                strokeDasharray="3 2"
                data-series="due"
              />
            )}
            {labelled(i) && (
              <text x={x(i) + band / 2} y={H - pad.bottom + 14} textAnchor="middle" fontSize={10} fill={i === todayIndex ? '#303030' : '#616161'} fontWeight={i === todayIndex ? 600 : 400}>
                {i === todayIndex ? 'Today' : formatDay(d.date)}
              </text>
            )}
          </g>
        );
      })}
      {marks(o.days.map(revenueOf), false)}
      {marks(o.days.map(expectedOf), true)}
      <line x1={pad.left} x2={W - pad.right} y1={y(0)} y2={y(0)} stroke="#8a8a8a" />
    </svg>
  );
}

/** The colours of the chart in words, for the segments present (failures by code each have their own). */
export function legendOf(o: RenewalsOverview): { label: string; colour: string; dashed?: boolean }[] {
  const codes = [...new Set(o.days.flatMap((d) => d.billed?.failedByCode.map((f) => f.errorCode) ?? []))];
  const t = o.totals.billed;
  return [
    { label: SERIES.succeeded.label, colour: SERIES.succeeded.colour },
    ...(t.recovered ? [{ label: SERIES.recovered.label, colour: SERIES.recovered.colour }] : []),
    ...codes.map((c, i) => ({ label: `Failed: ${errorLabel(c)}`, colour: FAILURE_SHADES[i % FAILURE_SHADES.length] })),
    ...(t.actionRequired ? [{ label: SERIES.actionRequired.label, colour: SERIES.actionRequired.colour }] : []),
    ...(t.pending ? [{ label: SERIES.pending.label, colour: SERIES.pending.colour }] : []),
    { label: SERIES.due.label, colour: SERIES.due.colour, dashed: true },
    ...(chartCurrency(o) ? [{ label: `${SERIES.revenue.label} in ${chartCurrency(o)} (hollow: expected)`, colour: SERIES.revenue.colour }] : []),
  ];
}
