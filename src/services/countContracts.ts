import { sql } from 'drizzle-orm';
import { matching } from '../db/contractFilterSql.js';
import { contracts } from '../db/schema.js';
import { MAX_BULK_CONTRACTS } from '../domain/bulkJobs.js';
import type { ContractStatus } from '../domain/contract.js';
import { criteriaOf, type ContractFilter } from '../domain/contractFilter.js';
import type { ServiceCall } from './context.js';
import { resumeDueOfShop } from './listContracts.js';
import type { ShopPrincipal } from './principal.js';

/**
 * How many of the shop's contracts a filter matches (domain/contractFilter.ts), as a bulk job made with it would
 * count them now: what the admin offers to change ("Change 1,204 contracts…"). Counted up to one past the most a
 * job takes, so a filter over a huge shop costs no more than a job would, and `more` says the job would be refused.
 */
export async function countContracts({
  ctx,
  input,
}: ServiceCall<{ principal: ShopPrincipal; status?: ContractStatus | ContractStatus[] } & Omit<ContractFilter, 'status'>>): Promise<{ count: number; more: boolean }> {
  const shopId = input.principal.shopId;
  await resumeDueOfShop(ctx, shopId);
  const cap = MAX_BULK_CONTRACTS + 1;
  const where = matching(shopId, criteriaOf({ ...input, status: typeof input.status === 'string' ? [input.status] : input.status }));
  const limited = ctx.db.orm.select({ one: sql`1` }).from(contracts).where(where).limit(cap).as('limited');
  const [row] = await ctx.db.orm.select({ n: sql<number>`count(*)::int` }).from(limited);
  const n = Number(row?.n ?? 0);
  return { count: Math.min(n, MAX_BULK_CONTRACTS), more: n > MAX_BULK_CONTRACTS };
}
