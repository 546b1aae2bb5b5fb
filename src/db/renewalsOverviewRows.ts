import type { Database } from './client.js';

/**
 * The Renewals overview's figures, read from billing_attempts and the contracts' schedules. Every sum of money is
 * numeric in SQL, returned as its decimal text: never a float. Days are UTC calendar days ('YYYY-MM-DD'); a row whose
 * `day` is null is the whole window (GROUPING SETS gives both in one statement).
 */

export type BilledRow = {
  day: string | null;
  attempts: number;
  succeeded: number;
  failed: number;
  actionRequired: number;
  pending: number;
  recovered: number;
};
export type FailureRow = { day: string | null; errorCode: string; count: number };
export type MoneyRow = { day: string | null; currencyCode: string; amount: string };
export type DueRow = { day: string | null; renewals: number };

// The attempts made in [from, to) by the shop. An attempt counts on the day it was made, with what became of it.
const BILLED = `
  SELECT to_char(b.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day,
         count(*)::int AS attempts,
         count(*) FILTER (WHERE b.status = 'succeeded')::int AS succeeded,
         count(*) FILTER (WHERE b.status = 'failed')::int AS failed,
         count(*) FILTER (WHERE b.status = 'action_required')::int AS "actionRequired",
         count(*) FILTER (WHERE b.status = 'pending')::int AS pending,
         -- Recovered: a success after an unsuccessful attempt of the same cycle (dunning worked). A cycle gets another
         -- attempt only after its previous one failed or the customer did not confirm it (a retry, or a resume of the
         -- failed contract), so a successful attempt numbered 2 or more is one. (An EXISTS over the cycle's earlier
         -- attempts said the same at five times the cost.)
         count(*) FILTER (WHERE b.status = 'succeeded' AND b.attempt > 1)::int AS recovered
    FROM billing_attempts b
   WHERE b.shop_id = $1::bigint AND b.created_at >= $2::timestamptz AND b.created_at < $3::timestamptz
   GROUP BY GROUPING SETS ((to_char(b.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')), ())`;

const FAILURES = `
  SELECT to_char(b.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, b.error_code AS "errorCode", count(*)::int AS count
    FROM billing_attempts b
   WHERE b.shop_id = $1::bigint AND b.created_at >= $2::timestamptz AND b.created_at < $3::timestamptz AND b.status = 'failed' AND b.error_code IS NOT NULL
   GROUP BY GROUPING SETS ((to_char(b.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), b.error_code), (b.error_code))
   ORDER BY 2`;

// Revenue: what the successful attempts' orders came to (the attempt's amount when an order carries none).
const REVENUE = `
  SELECT to_char(b.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, x.currency AS "currencyCode", sum(x.amount)::text AS amount
    FROM billing_attempts b
   CROSS JOIN LATERAL (
     SELECT coalesce(b."order" ->> 'currencyCode', b.currency_code) AS currency, coalesce((b."order" ->> 'amount')::numeric, b.amount) AS amount
   ) x
   WHERE b.shop_id = $1::bigint AND b.created_at >= $2::timestamptz AND b.created_at < $3::timestamptz AND b.status = 'succeeded'
   GROUP BY GROUPING SETS ((to_char(b.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), x.currency), (x.currency))
   ORDER BY 2`;

/*
 * The renewals due from $2 (now) until $3, of the shop's ACTIVE contracts: the contract's next attempt (a scheduled
 * retry, or its next billing date), then its next billing dates one interval apart. A cycle already being billed or
 * retried is not counted again; an attempt due in the past (about to be made) counts now. Dates are stepped in UTC.
 * Each renewal is expected to bill the contract's total as it stands.
 */
const UPCOMING = `
  WITH contract AS (
    SELECT c.id, c.next_billing_date, c.billing_next_attempt_at, c.billing_cycle_date,
           (c.totals ->> 'total')::numeric AS total, c.totals ->> 'currencyCode' AS currency,
           CASE c.billing_interval
             WHEN 'DAY' THEN make_interval(days => c.billing_interval_count)
             WHEN 'WEEK' THEN make_interval(weeks => c.billing_interval_count)
             WHEN 'MONTH' THEN make_interval(months => c.billing_interval_count)
             ELSE make_interval(years => c.billing_interval_count)
           END AS step
      FROM subscription_contracts c
     WHERE c.shop_id = $1::bigint AND c.status = 'ACTIVE' AND (c.next_billing_date < $3::timestamptz OR c.billing_next_attempt_at < $3::timestamptz)
  ), renewal AS (
    -- A retry of the cycle being retried.
    SELECT greatest(c.billing_next_attempt_at, $2::timestamptz) AS at, c.total, c.currency
      FROM contract c WHERE c.billing_next_attempt_at < $3::timestamptz
    UNION ALL
    -- The schedule: the first date (even if late: it is billed now), then the later ones still ahead.
    SELECT greatest(s.at AT TIME ZONE 'UTC', $2::timestamptz) AS at, c.total, c.currency
      FROM contract c
     CROSS JOIN LATERAL generate_series(c.next_billing_date AT TIME ZONE 'UTC', $3::timestamptz AT TIME ZONE 'UTC', c.step) WITH ORDINALITY AS s(at, k)
     WHERE (c.billing_cycle_date IS NULL OR s.at AT TIME ZONE 'UTC' > c.billing_cycle_date)
       AND (s.k = 1 OR s.at AT TIME ZONE 'UTC' >= $2::timestamptz)
       AND s.at AT TIME ZONE 'UTC' < $3::timestamptz
  )`;
const DUE = `${UPCOMING}
  SELECT to_char(r.at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, count(*)::int AS renewals
    FROM renewal r
   GROUP BY GROUPING SETS ((to_char(r.at AT TIME ZONE 'UTC', 'YYYY-MM-DD')), ())`;
const DUE_REVENUE = `${UPCOMING}
  SELECT to_char(r.at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, r.currency AS "currencyCode", sum(r.total)::text AS amount
    FROM renewal r
   GROUP BY GROUPING SETS ((to_char(r.at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), r.currency), (r.currency))
   ORDER BY 2`;

/** What the shop billed in [from, to): counts, failures by code and revenue, per day and in all. */
export function billedFigures(db: Database, a: { shopId: string; from: Date; to: Date }) {
  const params = [a.shopId, a.from, a.to];
  return db.withSession(async (run) => ({
    billed: await run<BilledRow>(BILLED, params),
    failures: await run<FailureRow>(FAILURES, params),
    revenue: await run<MoneyRow>(REVENUE, params),
  }));
}

/** What the shop's contracts are due to bill from `now` until `to`: renewals and expected revenue, per day and in all. */
export function dueFigures(db: Database, a: { shopId: string; now: Date; to: Date }) {
  const params = [a.shopId, a.now, a.to];
  return db.withSession(async (run) => ({
    due: await run<DueRow>(DUE, params),
    revenue: await run<MoneyRow>(DUE_REVENUE, params),
  }));
}
