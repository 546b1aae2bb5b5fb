import { eq, sql } from 'drizzle-orm';
import { billingPolicies } from '../db/schema.js';
import { BillingPolicySchema, DEFAULT_BILLING_POLICY, type BillingPolicy } from '../domain/billing.js';
import { parseInput } from '../domain/errors.js';
import type { ServiceCall } from './context.js';

/** A shop's dunning policy as the admin shows it: the policy, and when it was last saved (null: the default). */
export type ShopBillingPolicy = { policy: BillingPolicy; updatedAt: string | null };

/** The shop's dunning policy; a shop that never saved one has the default. */
export async function getShopBillingPolicy({ ctx, input }: ServiceCall<{ shopId: string }>): Promise<ShopBillingPolicy> {
  const [row] = await ctx.db.orm.select().from(billingPolicies).where(eq(billingPolicies.shopId, input.shopId));
  return row ? { policy: row.policy, updatedAt: row.updatedAt.toISOString() } : { policy: DEFAULT_BILLING_POLICY, updatedAt: null };
}

/**
 * Replaces the shop's dunning policy with `body`, validated whole (invalid_request naming each bad field, e.g.
 * `paymentRetries.1`); nothing is saved when any field is wrong. Stored as validated, so the billing worker reads
 * exactly what the merchant saw.
 */
export async function setShopBillingPolicy({ ctx, input }: ServiceCall<{ shopId: string; body: unknown }>): Promise<ShopBillingPolicy> {
  const policy: BillingPolicy = parseInput(BillingPolicySchema, input.body);
  const now = ctx.clock.now();
  const [row] = await ctx.db.orm
    .insert(billingPolicies)
    .values({ shopId: input.shopId, policy, updatedAt: now })
    .onConflictDoUpdate({ target: billingPolicies.shopId, set: { policy: sql`excluded.policy`, updatedAt: sql`excluded.updated_at` } })
    .returning();
  return { policy: row.policy, updatedAt: row.updatedAt.toISOString() };
}
