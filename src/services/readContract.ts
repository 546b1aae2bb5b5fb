import { contractRows, contractTexts, type ContractReads } from '../db/contractRows.js';
import type { ContractText } from '../db/contractColumns.js';
import type { ContractRow } from '../db/schema.js';
import { isResumeDue } from '../domain/contract.js';
import { MESSAGES, ServiceError } from '../domain/errors.js';
import { takeConfirmation, type Caller } from './caller.js';
import { changeContract } from './changeContract.js';
import type { ServiceContext } from './context.js';

/**
 * A contract of the caller's shop, as stored (not_found otherwise). The only read that may settle a caller whose
 * confirmation is pending (see caller.ts): it reads the key's state in the same statement.
 */
export function readContract(ctx: ServiceContext, caller: Caller, contractId: string): Promise<ContractRow> {
  return readVia(contractRows(ctx.db), ctx, caller, contractId);
}

/** readContract, with the json columns as the database's text (a GET passes them on as they are). */
export function readContractText(ctx: ServiceContext, caller: Caller, contractId: string): Promise<ContractText<ContractRow>> {
  return readVia(contractTexts(ctx.db), ctx, caller, contractId);
}

async function readVia<Row>(rows: ContractReads<Row>, ctx: ServiceContext, caller: Caller, contractId: string): Promise<Row> {
  const confirmation = takeConfirmation(caller);
  let row: Row | null | undefined;
  if (confirmation) {
    const joined = await rows.withKeyState.load({ keyId: confirmation.keyId, contractId });
    await confirmation.settle(joined);
    row = joined!.contract;
  } else {
    row = await rows.ofShop.load({ shopId: caller.shopId, contractId });
  }
  if (!row) throw new ServiceError('not_found', MESSAGES.contractNotFound);
  return row;
}

/**
 * The contract as it is now: a paused contract whose resume moment has passed is resumed first, through the change
 * path (the transition the sweep makes, actor scheduler), so no read shows a state the sweep has merely not reached.
 */
export async function currentContract(ctx: ServiceContext, row: ContractRow): Promise<ContractRow> {
  if (!isResumeDue(row, ctx.clock.now())) return row;
  const resumed = await changeContract(ctx, { shopId: row.shopId, contractId: row.id, read: row, request: null });
  return resumed!.row;
}
