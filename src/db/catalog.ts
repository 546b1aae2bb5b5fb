import type { RunSql } from './client.js';

/** Standalone mode's catalog and discount codes (migration 0011), as stored. */
export type VariantRow = { id: string; title: string; price: string; currencyCode: string };
export type DiscountCodeRow = { code: string; title: string; percentage: string | null; amount: string | null; currencyCode: string | null };

export function variantsOf(run: RunSql, shopId: string, ids: string[]): Promise<VariantRow[]> {
  if (!ids.length) return Promise.resolve([]);
  return run<VariantRow>(
    `SELECT id::text AS id, title, price, currency_code AS "currencyCode" FROM catalog_variants WHERE shop_id = $1 AND id = ANY($2::bigint[])`,
    [shopId, ids],
  );
}

/** The shop's variants by title, at most `limit`: what the admin offers for a swap or a new line. */
export function shopVariants(run: RunSql, shopId: string, limit: number): Promise<VariantRow[]> {
  return run<VariantRow>(
    `SELECT id::text AS id, title, price, currency_code AS "currencyCode" FROM catalog_variants WHERE shop_id = $1 ORDER BY title, id LIMIT $2`,
    [shopId, limit],
  );
}

export function discountCodesOf(run: RunSql, shopId: string, codes: string[]): Promise<DiscountCodeRow[]> {
  if (!codes.length) return Promise.resolve([]);
  return run<DiscountCodeRow>(
    `SELECT code, title, percentage::text AS percentage, amount, currency_code AS "currencyCode"
       FROM discount_codes WHERE shop_id = $1 AND lower(code) = ANY($2::text[])`,
    [shopId, codes.map((c) => c.toLowerCase())],
  );
}

export async function upsertVariants(run: RunSql, shopId: string, variants: VariantRow[]): Promise<void> {
  if (!variants.length) return;
  await run(
    `INSERT INTO catalog_variants (shop_id, id, title, price, currency_code)
     SELECT $1, x.id, x.title, x.price, x.currency_code FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[]) AS x(id, title, price, currency_code)
     ON CONFLICT (shop_id, id) DO UPDATE SET title = EXCLUDED.title, price = EXCLUDED.price, currency_code = EXCLUDED.currency_code`,
    [shopId, variants.map((v) => v.id), variants.map((v) => v.title), variants.map((v) => v.price), variants.map((v) => v.currencyCode)],
  );
}

/** Creates a discount code; false when the shop has one by that name already (codes are case-insensitive). */
export async function insertDiscountCode(run: RunSql, shopId: string, d: DiscountCodeRow, now: Date): Promise<boolean> {
  const rows = await run(
    `INSERT INTO discount_codes (shop_id, code, title, percentage, amount, currency_code, created_at)
     VALUES ($1, $2, $3, $4::numeric, $5, $6, $7) ON CONFLICT DO NOTHING RETURNING code`,
    [shopId, d.code, d.title, d.percentage, d.amount, d.currencyCode, now],
  );
  return rows.length > 0;
}
