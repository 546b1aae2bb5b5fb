import { and, desc, eq, lt, sql } from 'drizzle-orm';
import { contractEvents } from '../db/schema.js';
import { toContractEvent, type ContractEvent } from '../domain/resources.js';
import type { KeyCheck, ServiceCall } from './context.js';
import { getContract } from './getContract.js';
import { decodeCursor, encodeCursor } from './listContracts.js';

/** A contract's history, newest first, paged. Reading it first settles a due scheduled resume. */
export async function listContractEvents({
  ctx,
  input,
}: ServiceCall<{ shopId: string; contractId: string; limit?: number; cursor?: string; key?: KeyCheck }>): Promise<{
  events: ContractEvent[];
  nextCursor: string | null;
}> {
  await getContract({ ctx, input });
  const limit = input.limit ?? 50;
  const before = input.cursor ? decodeCursor(input.cursor) : null;
  const rows = await ctx.db.orm
    .select()
    .from(contractEvents)
    .where(
      and(
        eq(contractEvents.contractId, input.contractId),
        eq(contractEvents.shopId, input.shopId),
        before ? lt(contractEvents.id, before) : sql`true`,
      ),
    )
    .orderBy(desc(contractEvents.id))
    .limit(limit + 1);
  const page = rows.slice(0, limit);
  return {
    events: page.map(toContractEvent),
    nextCursor: rows.length > limit ? encodeCursor(page[page.length - 1].id) : null,
  };
}
