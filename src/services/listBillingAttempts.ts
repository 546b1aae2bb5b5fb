import { and, desc, eq, gte, lt, or, sql, type SQL } from 'drizzle-orm';
import { billingAttempts, type BillingAttemptRow } from '../db/schema.js';
import type { AttemptStatus } from '../domain/billing.js';
import { assertContractId } from '../domain/contractId.js';
import { invalidRequest } from '../domain/errors.js';
import { isUuid } from '../domain/ids.js';
import { PAGE_LIMIT } from '../domain/paging.js';
import { BillingAttempt } from '../domain/resources.js';
import { isoString, parseUtcTimestamp } from '../domain/time.js';
import type { ShopPrincipal } from './principal.js';
import type { ServiceCall } from './context.js';
import { getContract } from './getContract.js';

/** Billing attempts, newest first: one contract's, or the shop's (by status, created since a moment), paged. */

type Page = { limit?: number; cursor?: string };
export type AttemptPage = { billingAttempts: BillingAttempt[]; nextCursor: string | null };

/** The attempts of one contract of the caller's shop (not_found for another shop's). */
export async function listContractBillingAttempts({ ctx, input }: ServiceCall<{ principal: ShopPrincipal; contractId: string } & Page>): Promise<AttemptPage> {
  assertContractId(input.contractId);
  await getContract({ ctx, input });
  return page(ctx, input, and(eq(billingAttempts.shopId, input.principal.shopId), eq(billingAttempts.contractId, input.contractId))!);
}

/** The shop's attempts: optionally only those with `status`, or created at or after `since` (ISO 8601 UTC). */
export async function listBillingAttempts({ ctx, input }: ServiceCall<{ principal: ShopPrincipal; status?: AttemptStatus; since?: string } & Page>): Promise<AttemptPage> {
  const since = input.since === undefined ? null : parseUtcTimestamp(input.since);
  if (input.since !== undefined && !since) throw invalidRequest('Invalid request: since must be an ISO 8601 timestamp in UTC ending in Z.', [{ path: 'since', message: 'must be an ISO 8601 timestamp in UTC ending in Z' }]);
  const shopId = input.principal.shopId;
  return page(
    ctx,
    input,
    and(eq(billingAttempts.shopId, shopId), input.status ? eq(billingAttempts.status, input.status) : sql`true`, since ? gte(billingAttempts.createdAt, since) : sql`true`)!,
  );
}

async function page(ctx: ServiceCall<unknown>['ctx'], input: Page, where: SQL): Promise<AttemptPage> {
  const limit = input.limit ?? PAGE_LIMIT.default;
  const after = input.cursor ? decodeAttemptCursor(input.cursor) : null;
  const rows = await ctx.db.orm
    .select()
    .from(billingAttempts)
    .where(
      and(
        where,
        after ? or(lt(billingAttempts.createdAt, after.createdAt), and(eq(billingAttempts.createdAt, after.createdAt), lt(billingAttempts.id, after.id))) : sql`true`,
      ),
    )
    .orderBy(desc(billingAttempts.createdAt), desc(billingAttempts.id))
    .limit(limit + 1);
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  return { billingAttempts: items.map(toAttempt), nextCursor: rows.length > limit ? encodeAttemptCursor(last) : null };
}

/** An attempt row as clients see it (the same shape as the contract's billing.lastAttempt). */
export function toAttempt(r: BillingAttemptRow): BillingAttempt {
  return {
    id: r.id,
    contractId: r.contractId,
    cycleDate: isoString(r.cycleDate),
    attempt: r.attempt,
    trigger: r.trigger,
    status: r.status,
    errorCode: r.errorCode as BillingAttempt['errorCode'],
    platformErrorCode: r.platformErrorCode,
    errorMessage: r.errorMessage,
    nextActionUrl: r.nextActionUrl,
    order: r.order ?? null,
    amount: { amount: r.amount, currencyCode: r.currencyCode },
    createdAt: isoString(r.createdAt),
    completedAt: r.completedAt ? isoString(r.completedAt) : null,
  };
}

// Cursors are opaque: the creation time and id of the page's last attempt.
const encodeAttemptCursor = (r: BillingAttemptRow) => Buffer.from(`at:${r.createdAt.getTime()}:${r.id}`).toString('base64url');

function decodeAttemptCursor(cursor: string): { createdAt: Date; id: string } {
  const m = /^at:(\d{1,15}):([0-9a-f-]{36})$/.exec(Buffer.from(cursor, 'base64url').toString());
  // The id goes to a uuid column: anything else that long is no cursor of ours.
  if (!m || !isUuid(m[2])) throw invalidRequest('The cursor is not valid; use nextCursor from a previous page.', [{ path: 'cursor', message: 'invalid cursor' }]);
  return { createdAt: new Date(Number(m[1])), id: m[2] };
}
