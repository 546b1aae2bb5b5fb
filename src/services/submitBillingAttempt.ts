import { submittedAttempts } from '../db/billingRows.js';
import type { ContractRow } from '../db/schema.js';
import { attemptIdempotencyKey, type AttemptState } from '../domain/billing.js';
import type { ServiceContext } from './context.js';

/**
 * Hands a committed (pending) attempt to the gateway and records its reference. Called right after the commit (by
 * the worker and bill_now) and again for an attempt a crash left unsubmitted; the idempotency key makes a second call
 * harmless. Throws what the gateway throws (the attempt stays pending and unsubmitted: the worker tries again).
 */
export async function submitBillingAttempt(ctx: ServiceContext, contract: ContractRow, attempt: Pick<AttemptState, 'id' | 'cycleDate' | 'attempt' | 'amount'>): Promise<void> {
  const gateway = ctx.billing?.gateway;
  if (!gateway) return;
  const { reference } = await gateway.createAttempt({
    shopId: contract.shopId,
    contract,
    attemptId: attempt.id,
    cycleDate: new Date(attempt.cycleDate),
    attemptNumber: attempt.attempt,
    idempotencyKey: attemptIdempotencyKey(contract.id, attempt.cycleDate, attempt.attempt),
    amount: attempt.amount.amount,
    currencyCode: attempt.amount.currencyCode,
  });
  await submittedAttempts(ctx.db).load({ id: attempt.id, reference, at: ctx.clock.now() });
}
