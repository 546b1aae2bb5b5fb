import { parseContractAction, type ContractAction } from '../domain/actions.js';
import { toContract, type Contract } from '../domain/resources.js';
import type { Caller, ServiceCall } from './context.js';
import { assertContractId, lockContract, writeTransitions } from './contractStore.js';

/**
 * Performs one action on one contract of the caller's shop. The body is validated here (so every surface gets the
 * same rules); the row is locked for the transaction, so concurrent actions on one contract are serialised and
 * none is lost. The state change and its event commit together or not at all.
 */
export async function actOnContract({
  ctx,
  input,
}: ServiceCall<Caller & { contractId: string; body: unknown }>): Promise<Contract> {
  assertContractId(input.contractId);
  const now = ctx.clock.now();
  const action: ContractAction = parseContractAction(input.body, now);
  const row = await ctx.db.orm.transaction(async (tx) => {
    const locked = await lockContract(tx, input.shopId, input.contractId);
    return writeTransitions(tx, locked, [{ action, actor: input.actor }], now);
  });
  return toContract(row);
}
