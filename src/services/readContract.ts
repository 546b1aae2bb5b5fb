import { contractRows } from '../db/contractRows.js';
import type { ContractRow } from '../db/schema.js';
import { isResumeDue } from '../domain/contract.js';
import { MESSAGES, ServiceError } from '../domain/errors.js';
import type { ServiceContext } from './context.js';
import type { ShopPrincipal } from './principal.js';
import { SYSTEM } from './principal.js';
import { runCommand } from './runner.js';

/** A contract of the principal's shop, as stored (not_found otherwise). */
export async function readContract(ctx: ServiceContext, principal: ShopPrincipal, contractId: string): Promise<ContractRow> {
  const row = await contractRows(ctx.db).ofShop.load({ shopId: principal.shopId, contractId });
  if (!row) throw new ServiceError('not_found', MESSAGES.contractNotFound);
  return row;
}

/**
 * The contract as it is now: a paused contract whose resume moment has passed is resumed first, through the runner
 * (the transition the sweep makes, actor scheduler), so no read shows a state the sweep has merely not reached.
 */
export async function currentContract(ctx: ServiceContext, row: ContractRow): Promise<ContractRow> {
  if (!isResumeDue(row, ctx.clock.now())) return row;
  const resumed = await runCommand(ctx, SYSTEM.scheduler, { shopId: row.shopId, contractId: row.id, read: row }, null);
  return resumed!.row;
}
