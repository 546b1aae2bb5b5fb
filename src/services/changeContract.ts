import { commitContractChange, type CommittedChange, type IdempotencyRecord } from '../db/commitContractChange.js';
import type { ContractRow } from '../db/schema.js';
import { planChange, type ChangeRequest } from '../domain/changes.js';
import type { ContractState } from '../domain/contract.js';
import type { ServiceContext } from './context.js';

/**
 * Every service that changes a contract comes here: the domain plans the change, the platform port carries it out
 * (nothing to do in standalone mode; the platform's mutation in platform mode), and the change path commits it with
 * its events, their consumers and the idempotency record. Returns null only with `skipLocked` (another writer held
 * the contract).
 */
type Change = { shopId: string; contractId: string; request: ChangeRequest; read?: ContractRow; record?: IdempotencyRecord; skipLocked?: boolean };

export function changeContract(ctx: ServiceContext, change: Change): Promise<CommittedChange | null> {
  const platform = ctx.platform;
  if (!platform.prepare) return commitChange(ctx, change);
  return platform.prepare(change.shopId).then(() =>
    commitChange(ctx, change).catch(async (err) => {
      if (!(await platform.prepare!(change.shopId, err)).retry) throw err;
      return commitChange(ctx, change);
    }),
  );
}

function commitChange(ctx: ServiceContext, change: Change): Promise<CommittedChange | null> {
  const now = ctx.clock.now();
  const { shopId, request } = change;
  return commitContractChange(ctx.db, {
    shopId,
    contractId: change.contractId,
    now,
    read: change.read,
    record: change.record,
    skipLocked: change.skipLocked,
    leased: ctx.platform.callsOut,
    plan: async (contract) => {
      const plan = planChange(contract as unknown as ContractState, request, now);
      return plan && ctx.platform.carryOut({ shopId, contract, plan });
    },
  });
}
