import { and, eq } from 'drizzle-orm';
import { contracts } from '../db/schema.js';
import { isResumeDue } from '../domain/contract.js';
import { MESSAGES, ServiceError } from '../domain/errors.js';
import { toContract, type Contract } from '../domain/resources.js';
import type { ServiceCall } from './context.js';
import { assertContractId, lockContract, writeTransitions } from './contractStore.js';

/**
 * One contract of the shop. A paused contract whose resume moment has passed is resumed here first (the same
 * transition the scheduler makes), so a read never shows a state the scheduler has merely not reached yet.
 */
export async function getContract({ ctx, input }: ServiceCall<{ shopId: string; contractId: string }>): Promise<Contract> {
  assertContractId(input.contractId);
  const now = ctx.clock.now();
  const [row] = await ctx.db.orm
    .select()
    .from(contracts)
    .where(and(eq(contracts.id, input.contractId), eq(contracts.shopId, input.shopId)));
  if (!row) throw new ServiceError('not_found', MESSAGES.contractNotFound);
  if (!isResumeDue(row as never, now)) return toContract(row);
  const resumed = await ctx.db.orm.transaction(async (tx) => {
    const locked = await lockContract(tx, input.shopId, input.contractId);
    return isResumeDue(locked as never, now) ? writeTransitions(tx, locked, [], now) : locked;
  });
  return toContract(resumed);
}
