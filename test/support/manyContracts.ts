import type { RunSql } from '../../src/db/client.js';
import type { TestDatabase } from './db.js';

export const MANY_STATUSES = ['ACTIVE', 'ACTIVE', 'ACTIVE', 'PAUSED', 'CANCELLED'] as const;

/**
 * Thousands of contracts for a shop in one statement (a paged screen needs many; one insert takes a moment where
 * inserting them one by one takes seconds). Contract `i` (1-based) is `MANY_STATUSES[i % 5]`, belongs to
 * `customer<i, five digits>@example.com` and bills `i` hours after `now`, monthly, one line of "Coffee 1kg". The
 * ids are returned in `i` order, so the last is the newest.
 */
export async function insertManyContracts(
  t: { database: TestDatabase; clock: { now(): Date } },
  shopId: string,
  count: number,
  opts: { emailDomain?: string; ids?: boolean } = {},
): Promise<string[]> {
  const returning = opts.ids === false ? '' : 'RETURNING id::text AS id';
  const now = t.clock.now();
  const insert = (run: RunSql) =>
    run<{ id: string }>(
      `INSERT INTO subscription_contracts (shop_id, status, customer_id, customer_email, billing_interval, billing_interval_count,
       delivery_interval, delivery_interval_count, next_billing_date, lines, totals, paused_at, cancelled_at, created_at, updated_at)
     SELECT $1::bigint, s.status, (8000000 + i)::text, format('customer%s@%s', lpad(i::text, 5, '0'), $5::text), 'MONTH', 1, 'MONTH', 1,
       $2::timestamptz + i * interval '1 hour',
       -- Compact, as svc writes them (JSON.stringify): the columns keep their text as it is given.
       format('[{"id":"%s","title":"Coffee 1kg","variantId":"51","quantity":%s,"price":{"amount":"24.00","currencyCode":"EUR"}}]',
         gen_random_uuid(), 1 + i % 3)::json,
       format('{"subtotal":"%1$s","discounts":"0.00","shipping":"0.00","total":"%1$s","currencyCode":"EUR"}',
         to_char(24 * (1 + i % 3), 'FM990.00'))::json,
       CASE WHEN s.status = 'PAUSED' THEN $2::timestamptz END, CASE WHEN s.status = 'CANCELLED' THEN $2::timestamptz END,
       $2::timestamptz, $2::timestamptz
     FROM generate_series(1, $3::int) AS i
     CROSS JOIN LATERAL (SELECT ($4::text[])[1 + i % 5] AS status) s
     ORDER BY i
     ${returning}`,
      [shopId, now.toISOString(), count, [...MANY_STATUSES], opts.emailDomain ?? 'example.com'],
    );
  const rows = await t.database.db.withSession(insert);
  return rows.map((r) => r.id).sort((a, b) => Number(BigInt(a) - BigInt(b)));
}
