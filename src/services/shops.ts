import { asc, eq, sql } from 'drizzle-orm';
import { shops, type ShopRow } from '../db/schema.js';
import { apiAccess, PLANS, SHOP_DOMAIN, type ApiAccess } from '../domain/access.js';
import { invalidRequest, ServiceError } from '../domain/errors.js';
import type { ServiceCall } from './context.js';

export type Shop = { id: string; domain: string; plan: string; createdAt: Date };

function assertDomain(domain: string): void {
  if (!SHOP_DOMAIN.test(domain)) {
    throw invalidRequest(`"${domain.slice(0, 100)}" is not a shop domain (expected something like my-shop.myshopify.com).`);
  }
}

const shopOf = (r: ShopRow): Shop => ({ id: r.id, domain: r.domain, plan: r.plan, createdAt: r.createdAt });

/** Returns the shop, creating it with plan `basic` the first time it is seen (app install). */
export async function provisionShop({ ctx, input }: ServiceCall<{ domain: string }>): Promise<Shop> {
  assertDomain(input.domain);
  const [row] = await ctx.db.orm
    .insert(shops)
    .values({ domain: input.domain, plan: 'basic' })
    .onConflictDoUpdate({ target: shops.domain, set: { domain: sql`excluded.domain` } })
    .returning();
  return shopOf(row);
}

export async function getShop({ ctx, input }: ServiceCall<{ shopId: string }>): Promise<Shop> {
  const [row] = await ctx.db.orm.select().from(shops).where(eq(shops.id, input.shopId));
  if (!row) throw new ServiceError('not_found', 'Shop not found.');
  return shopOf(row);
}

export async function findShopByDomain({ ctx, input }: ServiceCall<{ domain: string }>): Promise<Shop | null> {
  const [row] = await ctx.db.orm.select().from(shops).where(eq(shops.domain, input.domain));
  return row ? shopOf(row) : null;
}

export async function listShops({ ctx }: ServiceCall<Record<string, never>>): Promise<Shop[]> {
  return (await ctx.db.orm.select().from(shops).orderBy(asc(shops.id))).map(shopOf);
}

/** Sets a shop's plan, creating the shop if needed. Keys survive any plan change; access follows the plan. */
export async function setShopPlan({ ctx, input }: ServiceCall<{ domain: string; plan: string }>): Promise<Shop> {
  assertDomain(input.domain);
  const plan = input.plan.trim().toLowerCase();
  // A typo must not quietly take a shop's API access away: only the plans svc knows are accepted.
  if (!(PLANS as readonly string[]).includes(plan)) {
    throw invalidRequest(`"${input.plan.slice(0, 100)}" is not a plan; the plans are ${PLANS.map((p) => `"${p}"`).join(' and ')}.`);
  }
  const [row] = await ctx.db.orm
    .insert(shops)
    .values({ domain: input.domain, plan })
    .onConflictDoUpdate({ target: shops.domain, set: { plan, updatedAt: ctx.clock.now() } })
    .returning();
  return shopOf(row);
}

export function shopApiAccess(ctx: ServiceCall<unknown>['ctx'], plan: string): ApiAccess {
  return apiAccess(plan, ctx.clock.now(), ctx.freeUntil);
}
