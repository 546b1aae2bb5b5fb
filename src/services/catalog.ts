import { discountCodesOf, insertDiscountCode, shopVariants, upsertVariants, variantsOf, type VariantRow } from '../db/catalog.js';
import type { Catalog } from '../domain/commands/edits/operation.js';
import type { EditOperation } from '../domain/commands/edits/index.js';
import { ServiceError } from '../domain/errors.js';
import { normalizeAmount } from '../domain/money.js';
import type { ServiceContext } from './context.js';

/**
 * Standalone mode's catalog: the shop's variants (titles and prices an edit takes) and its discount codes. In
 * platform mode the platform has both, and edits are priced by its draft.
 */

/** What a development shop sells: `products seed` and `contracts seed` make it. */
export const SEED_PRODUCTS: { id: string; title: string; price: string }[] = [
  { id: '40001', title: 'Coffee 1kg', price: '24.00' },
  { id: '40002', title: 'Espresso beans 500g', price: '14.50' },
  { id: '40003', title: 'Green tea 250g', price: '11.90' },
  { id: '40004', title: 'Oat milk 6-pack', price: '9.80' },
  { id: '40005', title: 'Dog food 12kg', price: '54.00' },
  { id: '40006', title: 'Razor blades 8-pack', price: '17.00' },
  { id: '40007', title: 'Vitamin D3 90 caps', price: '12.40' },
  { id: '40008', title: 'Protein powder 2kg', price: '49.90' },
];

/** Writes the seed catalog for a shop (kept as it is where it exists): the variants. */
export async function seedProducts(ctx: ServiceContext, shopId: string, currencyCode = 'EUR'): Promise<VariantRow[]> {
  const variants = SEED_PRODUCTS.map((p) => ({ id: p.id, title: p.title, price: normalizeAmount(p.price, currencyCode), currencyCode }));
  await ctx.db.withSession((run) => upsertVariants(run, shopId, variants));
  return variants;
}

/** At most this many variants are offered in the admin's edit form. */
export const MAX_LISTED_VARIANTS = 250;

/**
 * The shop's variants, by title, for the admin's edit form (a swap, a new line). Platform mode keeps no catalog (the
 * platform prices lines): the list is empty there, and the form takes a variant id.
 */
export async function listCatalogVariants(ctx: ServiceContext, shopId: string): Promise<{ id: string; title: string; price: { amount: string; currencyCode: string } }[]> {
  if (ctx.platform.callsOut) return [];
  const rows = await ctx.db.withSession((run) => shopVariants(run, shopId, MAX_LISTED_VARIANTS));
  return rows.map((v) => ({ id: v.id, title: v.title, price: { amount: v.price, currencyCode: v.currencyCode } }));
}

/** A discount code of the shop: a percentage off every order's lines. */
export async function createDiscountCode(ctx: ServiceContext, input: { shopId: string; code: string; percentage: number }): Promise<void> {
  if (!/^[A-Za-z0-9_-]{1,100}$/.test(input.code)) throw new ServiceError('invalid_request', 'A discount code is 1 to 100 letters, digits, "-" or "_".');
  if (!(input.percentage > 0 && input.percentage <= 100)) throw new ServiceError('invalid_request', 'The percentage must be more than 0 and at most 100.');
  const created = await ctx.db.withSession((run) =>
    insertDiscountCode(run, input.shopId, { code: input.code, title: input.code, percentage: String(input.percentage), amount: null, currencyCode: null }, ctx.clock.now()),
  );
  if (!created) throw new ServiceError('invalid_request', `The shop already has a discount code "${input.code}".`);
}

/** The part of the shop's catalog an edit names (its variants and codes), looked up once. */
export async function catalogFor(ctx: ServiceContext, shopId: string, operations: EditOperation[]): Promise<Catalog> {
  const variantIds = new Set<string>();
  const codes = new Set<string>();
  for (const o of operations) {
    if (o.op === 'add_line' || o.op === 'swap_variant') variantIds.add(o.variantId);
    if (o.op === 'apply_discount_code') codes.add(o.code.trim());
  }
  // Nothing to look up (a quantity, the frequency, the address): no connection is taken from the pool.
  const [variants, discounts] =
    variantIds.size || codes.size ? await ctx.db.withSession((run) => Promise.all([variantsOf(run, shopId, [...variantIds]), discountCodesOf(run, shopId, [...codes])])) : [[], []];
  const byId = new Map(variants.map((v) => [v.id, v]));
  const byCode = new Map(discounts.map((d) => [d.code.toLowerCase(), d]));
  return {
    variant: (id) => {
      const v = byId.get(id);
      return v && { title: v.title, price: { amount: v.price, currencyCode: v.currencyCode } };
    },
    discount: (code) => {
      const d = byCode.get(code.toLowerCase());
      if (!d) return undefined;
      const value =
        d.percentage !== null
          ? { type: 'percentage' as const, percentage: Number(d.percentage) }
          : { type: 'fixed_amount' as const, amount: { amount: d.amount!, currencyCode: d.currencyCode! } };
      return { title: d.title, code: d.code, value };
    },
  };
}
