import { and, asc, eq, gt, lte, sql } from 'drizzle-orm';
import { contracts } from '../db/schema.js';
import type { ContractStatus } from '../domain/contract.js';
import { invalidRequest } from '../domain/errors.js';
import { toContract, type Contract } from '../domain/resources.js';
import { verifyKey } from './authenticateApiKey.js';
import type { KeyCheck, ServiceCall, ServiceContext } from './context.js';
import { resumeDueContracts } from './resumeDueContracts.js';

/** Cursors are opaque to clients: the last id of the page, base64url-encoded. */
export function encodeCursor(id: string): string {
  return Buffer.from(`id:${id}`).toString('base64url');
}

export function decodeCursor(cursor: string, path = 'cursor'): string {
  const text = Buffer.from(cursor, 'base64url').toString();
  const m = /^id:(\d{1,19})$/.exec(text);
  if (!m || BigInt(m[1]) > 9223372036854775807n) throw invalidRequest('The cursor is not valid; use nextCursor from a previous page.', [{ path, message: 'invalid cursor' }]);
  return m[1];
}

/** Resumes the shop's contracts whose resume moment has passed, so a list never shows them paused. */
export async function resumeDueForShop(ctx: ServiceContext, shopId: string): Promise<void> {
  const now = ctx.clock.now();
  const [due] = await ctx.db.orm
    .select({ id: contracts.id })
    .from(contracts)
    .where(and(eq(contracts.shopId, shopId), eq(contracts.status, 'PAUSED'), lte(contracts.resumeAt, now)))
    .limit(1);
  if (due) await resumeDueContracts({ ctx, input: { shopId, wait: true, limit: 1000 } });
}

/** A page of the shop's contracts in id order, optionally of one status. */
export async function listContracts({
  ctx,
  input,
}: ServiceCall<{ shopId: string; status?: ContractStatus; limit?: number; cursor?: string; key?: KeyCheck }>): Promise<{
  contracts: Contract[];
  nextCursor: string | null;
}> {
  if (input.key) await verifyKey({ ctx, input: input.key });
  const limit = input.limit ?? 50;
  const after = input.cursor ? decodeCursor(input.cursor) : null;
  await resumeDueForShop(ctx, input.shopId);
  const rows = await ctx.db.orm
    .select()
    .from(contracts)
    .where(
      and(
        eq(contracts.shopId, input.shopId),
        input.status ? eq(contracts.status, input.status) : sql`true`,
        after ? gt(contracts.id, after) : sql`true`,
      ),
    )
    .orderBy(asc(contracts.id))
    .limit(limit + 1);
  const page = rows.slice(0, limit);
  return {
    contracts: page.map(toContract),
    nextCursor: rows.length > limit ? encodeCursor(page[page.length - 1].id) : null,
  };
}
