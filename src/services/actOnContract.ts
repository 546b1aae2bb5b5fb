import { parseContractAction, type ContractAction } from '../domain/actions.js';
import { toContract, type Contract } from '../domain/resources.js';
import type { ContractRow } from '../db/schema.js';
import type { Caller, ServiceCall } from './context.js';
import { completeInTransaction, type AtomicCompletion } from './idempotencyKeys.js';
import { assertContractId, commitIfUnchanged, lockContract, planTransitions, readContract, writeTransitions } from './contractStore.js';

/**
 * Performs one action on one contract of the caller's shop. The body is validated here (so every surface gets the
 * same rules). Writes are optimistic (version check) and fall back to a row lock on conflict, so concurrent actions
 * on one contract are serialised and none is lost. The state change and its event commit together or not at all.
 */
export async function actOnContract({
  ctx,
  input,
}: ServiceCall<Caller & { contractId: string; body: unknown; completion?: AtomicCompletion<Contract> }>): Promise<Contract> {
  assertContractId(input.contractId);
  const now = ctx.clock.now();
  const action: ContractAction = parseContractAction(input.body, now);
  const steps = [{ action, actor: input.actor }];
  // Fast path: read, apply, write with a version check — two round trips, no lock held across them.
  const current = await readContract(ctx, input.shopId, input.contractId, input.key);
  const plan = planTransitions(current, steps, now);
  // A request with an Idempotency-Key has its response recorded in the commit of its effect (AtomicCompletion).
  const c = input.completion;
  const respond = c && ((row: ContractRow) => ({ keyDigest: c.keyDigest, requestId: c.requestId, body: c.body(toContract(row)) }));
  const written = plan && (await commitIfUnchanged(ctx.db, current, plan, now, respond));
  if (written) {
    if (c) c.recorded = true;
    return toContract(written);
  }
  // Someone wrote in between: redo it under a row lock, which serialises with every other writer.
  const row = await ctx.db.orm.transaction(async (tx) => {
    const locked = await lockContract(tx, input.shopId, input.contractId);
    const updated = await writeTransitions(tx, locked, steps, now);
    if (c) await completeInTransaction(tx, c, c.body(toContract(updated)));
    return updated;
  });
  if (c) c.recorded = true;
  return toContract(row);
}
