import { eq } from 'drizzle-orm';
import { billingPolicies } from '../db/schema.js';
import { BillingPolicySchema, DEFAULT_BILLING_POLICY, type BillingPolicy } from '../domain/billing.js';
import { invalidRequest, parseInput } from '../domain/errors.js';
import type { ShopPrincipal } from './principal.js';
import type { ServiceCall } from './context.js';

/** A shop's dunning policy: its own, or the default (payment retries after 1, 3 and 7 days; inventory daily ×5; fail). */
export async function getBillingPolicy({ ctx, input }: ServiceCall<{ principal: ShopPrincipal }>): Promise<BillingPolicy> {
  const [row] = await ctx.db.orm.select({ policy: billingPolicies.policy }).from(billingPolicies).where(eq(billingPolicies.shopId, input.principal.shopId));
  return row?.policy ?? DEFAULT_BILLING_POLICY;
}

/**
 * Replaces the shop's policy (the admin's Settings → Billing). The whole policy, validated: durations from PT1S to
 * P30D, at most 10 retries, a known final action; anything else is 400 invalid_request naming the field. It applies
 * to every outcome recorded from now on (a retry already scheduled keeps its time).
 */
export async function setBillingPolicy({ ctx, input }: ServiceCall<{ principal: ShopPrincipal; body: unknown }>): Promise<BillingPolicy> {
  if (typeof input.body !== 'object' || input.body === null || Array.isArray(input.body)) {
    throw invalidRequest('The request body must be a JSON object: the billing policy.', [{ path: '', message: 'expected a JSON object' }]);
  }
  const policy = parseInput(BillingPolicySchema, input.body) as BillingPolicy;
  const now = ctx.clock.now();
  await ctx.db.orm
    .insert(billingPolicies)
    .values({ shopId: input.principal.shopId, policy, updatedAt: now })
    .onConflictDoUpdate({ target: billingPolicies.shopId, set: { policy, updatedAt: now } });
  return policy;
}
