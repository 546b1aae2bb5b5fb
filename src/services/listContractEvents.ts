import { and, desc, eq, lt, sql } from 'drizzle-orm';
import { contractEvents } from '../db/schema.js';
import { decodeCursor, PAGE_LIMIT, toPage } from '../domain/paging.js';
import { toContractEvent, type ContractEvent } from '../domain/resources.js';
import type { ShopPrincipal } from './principal.js';
import type { ServiceCall } from './context.js';
import { getContract } from './getContract.js';

/** A contract's history, newest first, paged. Reading it first settles a due scheduled resume (and not_found). */
export async function listContractEvents({
  ctx,
  input,
}: ServiceCall<{ principal: ShopPrincipal; contractId: string; limit?: number; cursor?: string }>): Promise<{
  events: ContractEvent[];
  nextCursor: string | null;
}> {
  await getContract({ ctx, input });
  const limit = input.limit ?? PAGE_LIMIT.default;
  const before = input.cursor ? decodeCursor(input.cursor) : null;
  const rows = await ctx.db.orm
    .select()
    .from(contractEvents)
    .where(
      and(
        eq(contractEvents.contractId, input.contractId),
        eq(contractEvents.shopId, input.principal.shopId),
        before ? lt(contractEvents.id, before) : sql`true`,
      ),
    )
    .orderBy(desc(contractEvents.id))
    .limit(limit + 1);
  const { items, nextCursor } = toPage(rows, limit, toContractEvent);
  return { events: items, nextCursor };
}
