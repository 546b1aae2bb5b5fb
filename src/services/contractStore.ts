import { and, eq, sql } from 'drizzle-orm';
import type { Database, Orm } from '../db/client.js';
import { contractEvents, contracts, type ContractRow } from '../db/schema.js';
import type { ContractAction } from '../domain/actions.js';
import { applyAction, isResumeDue, type ContractState } from '../domain/contract.js';
import { MESSAGES, ServiceError } from '../domain/errors.js';
import type { Actor } from '../domain/resources.js';
import { assertKeyUsable } from './authenticateApiKey.js';
import type { KeyCheck, ServiceContext } from './context.js';
import { hotStatements, type CommitInput } from './hotStatements.js';

/** Shared by the contract services: loading within the shop's scope and writing a transition with its event. */

const INT8_MAX = 9223372036854775807n;

/** A path id the database could hold; ids past int8 cannot exist, so they are simply not found. */
export function assertContractId(id: string): void {
  if (!/^\d{1,19}$/.test(id)) throw new ServiceError('invalid_request', 'contract_id must be a string of 1 to 19 digits.', { details: [{ path: 'contract_id', message: 'must be 1 to 19 digits' }] });
  if (id.length === 19 && BigInt(id) > INT8_MAX) throw new ServiceError('not_found', MESSAGES.contractNotFound);
}

type Tx = Parameters<Parameters<Orm['transaction']>[0]>[0];
export type Executor = Orm | Tx;

export const SCHEDULER: Actor = { type: 'scheduler' };

/**
 * Loads a contract of the shop without a lock, or throws not_found. With a key (KeyCheck), the same statement
 * confirms the key (AuthError when it is no longer usable) and looks the contract up in the key's own shop.
 */
export async function readContract(ctx: ServiceContext, shopId: string, id: string, key?: KeyCheck): Promise<ContractRow> {
  const statements = hotStatements(ctx.db);
  let row: ContractRow | null | undefined;
  if (key) {
    const joined = await statements.contractsAsKeys.load({ keyId: key.keyId, contractId: id });
    assertKeyUsable(ctx, joined);
    key.verified = true;
    row = joined!.contract;
  } else {
    row = await statements.contractsOfShops.load({ shopId, contractId: id });
  }
  if (!row) throw new ServiceError('not_found', MESSAGES.contractNotFound);
  return row;
}

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

type EventInsert = typeof contractEvents.$inferInsert;
type Step = { action: ContractAction; actor: Actor };

/**
 * The outcome of applying steps to a row, not yet written. A due scheduled resume is applied first (actor
 * `scheduler`), so no action ever sees a contract that should already be active. Throws invalid_state.
 */
export function planTransitions(row: ContractRow, steps: Step[], now: Date): { state: ContractState; events: EventInsert[] } | null {
  let state: ContractState = row as unknown as ContractState;
  const all = isResumeDue(state, now) ? [{ action: { action: 'resume' } as ContractAction, actor: SCHEDULER }, ...steps] : steps;
  if (all.length === 0) return null;
  const events: EventInsert[] = [];
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
  return { state, events };
}

const stateColumns = (state: ContractState, now: Date) => ({
  status: state.status,
  nextBillingDate: state.nextBillingDate,
  pausedAt: state.pausedAt,
  resumeAt: state.resumeAt,
  cancelledAt: state.cancelledAt,
  cancellationReason: state.cancellationReason,
  updatedAt: now,
});

/** Applies steps to a row locked by the caller's transaction and writes the state with one event per step. */
export async function writeTransitions(tx: Executor, row: ContractRow, steps: Step[], now: Date): Promise<ContractRow> {
  const plan = planTransitions(row, steps, now);
  if (!plan) return row;
  const [updated] = await tx
    .update(contracts)
    .set({ ...stateColumns(plan.state, now), version: sql`${contracts.version} + 1` })
    .where(eq(contracts.id, row.id))
    .returning();
  await tx.insert(contractEvents).values(plan.events);
  return updated;
}

/**
 * Writes a planned change only if nobody changed the contract since `row` was read (same version): the update and
 * its events commit together, or neither does, in one statement (batched with concurrent callers' writes). Returns
 * the new row, or null when the version moved on or another writer holds the row (the caller then retries under a
 * row lock).
 */
export async function commitIfUnchanged(
  db: Database,
  row: ContractRow,
  plan: { state: ContractState; events: EventInsert[] },
  now: Date,
  /** For a request with an Idempotency-Key: the response to record in the same statement, from the written row. */
  respond?: (written: ContractRow) => CommitInput['response'],
): Promise<ContractRow | null> {
  // The row as it will be once written (the statement bumps the version by one): what the response shows.
  const written = { ...row, ...stateColumns(plan.state, now), version: row.version + 1 };
  const version = await hotStatements(db).commitsIfUnchanged.load({
    id: row.id,
    version: row.version,
    state: plan.state,
    updatedAt: now,
    events: plan.events.map((e) => ({
      type: e.type,
      at: now,
      actorType: e.actorType,
      actorKeyFingerprint: e.actorKeyFingerprint ?? null,
      fromStatus: e.fromStatus,
      toStatus: e.toStatus,
      data: e.data,
    })),
    response: respond?.(written),
  });
  return version === null ? null : written;
}
