import type { IdempotencyRecord } from '../db/contractWrites.js';
import { parseContractAction } from '../domain/actions.js';
import { assertContractId } from '../domain/contractId.js';
import { toContract, type Contract } from '../domain/resources.js';
import { assertMayChange, type Caller } from './caller.js';
import { changeContract } from './changeContract.js';
import type { ServiceCall } from './context.js';
import { readContract } from './readContract.js';

/**
 * Performs one action on one contract of the caller's shop. The body is validated here, so every surface gets the
 * same rules. The change goes through the one change path: actions on one contract are serialised, none is lost, and
 * the state, its events and (with `record`, an Idempotency-Key's claim) the result commit together or not at all.
 * Returns the contract after the action: with `record`, exactly what was recorded.
 */
export async function actOnContract({
  ctx,
  input,
}: ServiceCall<{ caller: Caller; contractId: string; body: unknown; record?: IdempotencyRecord }>): Promise<Contract> {
  const { caller, contractId } = input;
  assertContractId(contractId);
  assertMayChange(caller);
  const command = parseContractAction(input.body, ctx.clock.now());
  const read = await readContract(ctx, caller, contractId);
  const committed = await changeContract(ctx, {
    shopId: caller.shopId,
    contractId,
    read,
    request: { command, actor: caller.actor },
    record: input.record,
  });
  // The contract its events and its record have (rendered once, by the change path).
  return committed!.contract ?? toContract(committed!.row);
}
