import { and, asc, eq, gt, lte } from 'drizzle-orm';
import { matching } from '../db/contractFilterSql.js';
import { CONTRACT_ROW, contracts } from '../db/schema.js';
import type { ContractStatus } from '../domain/contract.js';
import { criteriaOf, type ContractFilter } from '../domain/contractFilter.js';
import { decodeCursor, PAGE_LIMIT, toPage } from '../domain/paging.js';
import { toContract, type Contract } from '../domain/resources.js';
import type { ShopPrincipal } from './principal.js';
import type { ServiceCall, ServiceContext } from './context.js';
import { resumeDueContracts } from './resumeDueContracts.js';

/**
 * A page of the principal's shop's contracts in id order, optionally only those a filter matches (statuses, a
 * customer, a variant, next billing dates: domain/contractFilter.ts); none shown paused past its resume.
 */
export async function listContracts({
  ctx,
  input,
}: ServiceCall<{ principal: ShopPrincipal; status?: ContractStatus | ContractStatus[]; limit?: number; cursor?: string } & Omit<ContractFilter, 'status'>>): Promise<{
  contracts: Contract[];
  nextCursor: string | null;
}> {
  const shopId = input.principal.shopId;
  const limit = input.limit ?? PAGE_LIMIT.default;
  const after = input.cursor ? decodeCursor(input.cursor) : null;
  await resumeDueOfShop(ctx, shopId);
  const rows = await ctx.db.orm
    .select(CONTRACT_ROW)
    .from(contracts)
    .where(and(matching(shopId, criteriaOf({ ...input, status: typeof input.status === 'string' ? [input.status] : input.status })), after ? gt(contracts.id, after) : undefined))
    .orderBy(asc(contracts.id))
    .limit(limit + 1);
  const { items, nextCursor } = toPage(rows, limit, (row) => toContract(row));
  return { contracts: items, nextCursor };
}

/** Before a list of a shop's contracts: none may show paused past its resume moment, so due resumes happen first. */
export async function resumeDueOfShop(ctx: ServiceContext, shopId: string): Promise<void> {
  const [due] = await ctx.db.orm
    .select({ id: contracts.id })
    .from(contracts)
    .where(and(eq(contracts.shopId, shopId), eq(contracts.status, 'PAUSED'), lte(contracts.resumeAt, ctx.clock.now())))
    .limit(1);
  if (due) await resumeDueContracts({ ctx, input: { shopId, wait: true, limit: 1000 } });
}
