import { isResumeDue } from '../domain/contract.js';
import { toContract, type Contract } from '../domain/resources.js';
import type { KeyCheck, ServiceCall } from './context.js';
import { assertContractId, lockContract, readContract, writeTransitions } from './contractStore.js';

/**
 * One contract of the shop. A paused contract whose resume moment has passed is resumed here first (the same
 * transition the scheduler makes), so a read never shows a state the scheduler has merely not reached yet.
 */
export async function getContract({ ctx, input }: ServiceCall<{ shopId: string; contractId: string; key?: KeyCheck }>): Promise<Contract> {
  assertContractId(input.contractId);
  const now = ctx.clock.now();
  const row = await readContract(ctx, input.shopId, input.contractId, input.key);
  if (!isResumeDue(row as never, now)) return toContract(row);
  const resumed = await ctx.db.orm.transaction(async (tx) => {
    const locked = await lockContract(tx, input.shopId, input.contractId);
    return isResumeDue(locked as never, now) ? writeTransitions(tx, locked, [], now) : locked;
  });
  return toContract(resumed);
}
