import { and, eq } from 'drizzle-orm';
import type { Orm } from '../db/client.js';
import { contractEvents, contracts, type ContractRow } from '../db/schema.js';
import type { ContractAction } from '../domain/actions.js';
import { applyAction, isResumeDue, type ContractState } from '../domain/contract.js';
import { MESSAGES, ServiceError } from '../domain/errors.js';
import type { Actor } from '../domain/resources.js';

/** Shared by the contract services: loading within the shop's scope and writing a transition with its event. */

const INT8_MAX = 9223372036854775807n;

/** A path id the database could hold; ids past int8 cannot exist, so they are simply not found. */
export function assertContractId(id: string): void {
  if (!/^\d{1,19}$/.test(id)) throw new ServiceError('invalid_request', 'contract_id must be a string of 1 to 19 digits.', { details: [{ path: 'contract_id', message: 'must be 1 to 19 digits' }] });
  if (BigInt(id) > INT8_MAX) throw new ServiceError('not_found', MESSAGES.contractNotFound);
}

type Tx = Parameters<Parameters<Orm['transaction']>[0]>[0];
export type Executor = Orm | Tx;

export const SCHEDULER: Actor = { type: 'scheduler' };

/** Loads a contract of the shop with a row lock (FOR UPDATE), or throws not_found. */
export async function lockContract(tx: Executor, shopId: string, id: string): Promise<ContractRow> {
  const [row] = await tx
    .select()
    .from(contracts)
    .where(and(eq(contracts.id, id), eq(contracts.shopId, shopId)))
    .for('update');
  if (!row) throw new ServiceError('not_found', MESSAGES.contractNotFound);
  return row;
}

/**
 * Applies actions in order to a locked row and persists the final state with one event per action.
 * A due scheduled resume is applied first (actor `scheduler`), so no action ever sees a contract that should
 * already be active.
 */
export async function writeTransitions(
  tx: Executor,
  row: ContractRow,
  steps: { action: ContractAction; actor: Actor }[],
  now: Date,
): Promise<ContractRow> {
  let state: ContractState = row as unknown as ContractState;
  const all = isResumeDue(state, now) ? [{ action: { action: 'resume' } as ContractAction, actor: SCHEDULER }, ...steps] : steps;
  if (all.length === 0) return row;
  const events: (typeof contractEvents.$inferInsert)[] = [];
  for (const step of all) {
    const t = applyAction(state, step.action, now);
    state = t.state;
    events.push({
      contractId: row.id,
      shopId: row.shopId,
      type: t.event.type,
      at: now,
      actorType: step.actor.type,
      actorKeyFingerprint: step.actor.keyFingerprint ?? null,
      fromStatus: t.event.from,
      toStatus: t.event.to,
      data: t.event.data,
    });
  }
  const [updated] = await tx
    .update(contracts)
    .set({
      status: state.status,
      nextBillingDate: state.nextBillingDate,
      pausedAt: state.pausedAt,
      resumeAt: state.resumeAt,
      cancelledAt: state.cancelledAt,
      cancellationReason: state.cancellationReason,
      updatedAt: now,
    })
    .where(eq(contracts.id, row.id))
    .returning();
  await tx.insert(contractEvents).values(events);
  return updated;
}
