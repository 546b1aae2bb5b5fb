import { and, desc, eq, lt, or } from 'drizzle-orm';
import { billingAttempts, type BillingAttemptRow } from '../db/schema.js';
import type { BillingErrorCode } from '../domain/billing.js';
import { assertContractId } from '../domain/contractId.js';
import { invalidRequest } from '../domain/errors.js';
import type { BillingAttempt } from '../domain/resources.js';
import type { Caller } from './caller.js';
import type { ServiceCall } from './context.js';
import { readContract } from './readContract.js';

/** An attempt row as clients see it. */
export function attemptFromRow(r: BillingAttemptRow): BillingAttempt {
  return {
    id: r.id,
    contractId: r.contractId,
    cycleDate: r.cycleDate.toISOString(),
    attempt: r.attempt,
    trigger: r.trigger,
    status: r.status,
    errorCode: r.errorCode as BillingErrorCode | null,
    platformErrorCode: r.platformErrorCode,
    errorMessage: r.errorMessage,
    nextActionUrl: r.nextActionUrl,
    order: r.order ?? null,
    amount: { amount: r.amount, currencyCode: r.currencyCode },
    createdAt: r.createdAt.toISOString(),
    completedAt: r.completedAt?.toISOString() ?? null,
  };
}

// Attempts are ordered by when they were made, then by id: the cursor carries both of the page's last attempt.
const encode = (r: BillingAttemptRow) => Buffer.from(`at:${r.createdAt.toISOString()}|${r.id}`).toString('base64url');
function decode(cursor: string): { at: Date; id: string } {
  const m = /^at:(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)\|([0-9a-f-]{36})$/.exec(Buffer.from(cursor, 'base64url').toString());
  const at = m ? new Date(m[1]) : null;
  if (!m || !at || Number.isNaN(at.getTime())) {
    throw invalidRequest('The cursor is not valid; use nextCursor from a previous page.', [{ path: 'cursor', message: 'invalid cursor' }]);
  }
  return { at, id: m[2] };
}

/**
 * One contract's billing attempts (of the caller's shop; not_found otherwise), newest first, a page at a time: every
 * attempt of every cycle with its outcome, as the contract page lists them.
 */
export async function listContractBillingAttempts({
  ctx,
  input,
}: ServiceCall<{ caller: Caller; contractId: string; limit: number; cursor?: string }>): Promise<{ attempts: BillingAttempt[]; nextCursor: string | null }> {
  assertContractId(input.contractId);
  const after = input.cursor ? decode(input.cursor) : null;
  const contract = await readContract(ctx, input.caller, input.contractId);
  const rows = await ctx.db.orm
    .select()
    .from(billingAttempts)
    .where(
      and(
        eq(billingAttempts.shopId, contract.shopId),
        eq(billingAttempts.contractId, contract.id),
        after ? or(lt(billingAttempts.createdAt, after.at), and(eq(billingAttempts.createdAt, after.at), lt(billingAttempts.id, after.id))) : undefined,
      ),
    )
    .orderBy(desc(billingAttempts.createdAt), desc(billingAttempts.id))
    .limit(input.limit + 1);
  const page = rows.slice(0, input.limit);
  return { attempts: page.map(attemptFromRow), nextCursor: rows.length > input.limit ? encode(page[page.length - 1]) : null };
}
