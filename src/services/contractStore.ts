import { and, eq, sql } from 'drizzle-orm';
import type { Database, Orm } from '../db/client.js';
import { apiKeys, contractEvents, contracts, shops, type ContractRow } from '../db/schema.js';
import type { ContractAction } from '../domain/actions.js';
import { applyAction, isResumeDue, type ContractState } from '../domain/contract.js';
import { MESSAGES, ServiceError } from '../domain/errors.js';
import type { Actor } from '../domain/resources.js';
import { assertKeyUsable } from './authenticateApiKey.js';
import type { KeyCheck, ServiceContext } from './context.js';

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

/**
 * Prepared once per database: the hot reads skip query building in JS and parse/plan in PostgreSQL (named
 * statements, cached per connection by the driver).
 */
const prepared = new WeakMap<Orm, ReturnType<typeof prepareReads>>();
function prepareReads(orm: Orm) {
  return {
    contract: orm
      .select()
      .from(contracts)
      .where(and(eq(contracts.id, sql.placeholder('id')), eq(contracts.shopId, sql.placeholder('shopId'))))
      .prepare('svc_read_contract'),
    // The same read, confirming the caller's key in the same statement: one round trip authenticates and reads.
    contractAsKey: orm
      .select({ revokedAt: apiKeys.revokedAt, plan: shops.plan, contract: contracts })
      .from(apiKeys)
      .innerJoin(shops, eq(shops.id, apiKeys.shopId))
      .leftJoin(contracts, and(eq(contracts.id, sql.placeholder('id')), eq(contracts.shopId, apiKeys.shopId)))
      .where(eq(apiKeys.id, sql.placeholder('keyId')))
      .prepare('svc_read_contract_as_key'),
  };
}
export function reads(orm: Orm) {
  let p = prepared.get(orm);
  if (!p) prepared.set(orm, (p = prepareReads(orm)));
  return p;
}

/**
 * Loads a contract of the shop without a lock, or throws not_found. With an unverified key (KeyCheck), the same
 * statement confirms the key first (AuthError when it is no longer usable).
 */
export async function readContract(ctx: ServiceContext, shopId: string, id: string, key?: KeyCheck): Promise<ContractRow> {
  let row: ContractRow | null | undefined;
  if (key && !key.verified) {
    const [joined] = await reads(ctx.db.orm).contractAsKey.execute({ id, keyId: key.keyId });
    assertKeyUsable(ctx, joined);
    key.verified = true;
    // The key's shop is the caller's shop: the cache that gave shopId holds only what never changes of a key.
    row = joined.contract;
  } else {
    [row] = await reads(ctx.db.orm).contract.execute({ id, shopId });
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

const iso = (d: Date | null) => (d ? d.toISOString() : null);

// NOWAIT: this statement never waits on another writer's row lock (that writer goes first; we retry under a lock).
// So it runs in microseconds, and a client that vanishes mid-request leaves the same tiny window as a COMMIT does:
// no action is applied long after its caller got 503. Prepared by name: parsed and planned once per connection.
const COMMIT_IF_UNCHANGED = `
    WITH locked AS (
      SELECT id FROM subscription_contracts WHERE id = $1::bigint AND version = $2::integer
         FOR UPDATE NOWAIT
    ), updated AS (
      UPDATE subscription_contracts
         SET status = $3::text, next_billing_date = $4::timestamptz,
             paused_at = $5::timestamptz, resume_at = $6::timestamptz,
             cancelled_at = $7::timestamptz, cancellation_reason = $8::text,
             updated_at = $9::timestamptz, version = version + 1
        FROM locked WHERE subscription_contracts.id = locked.id
       RETURNING subscription_contracts.id, subscription_contracts.shop_id, subscription_contracts.version
    ), inserted AS (
      INSERT INTO contract_events (contract_id, shop_id, type, at, actor_type, actor_key_fingerprint, from_status, to_status, data)
      SELECT u.id, u.shop_id, e.type, e.at, e.actor_type, e.actor_key_fingerprint, e.from_status, e.to_status, e.data
        FROM updated u,
             ROWS FROM (jsonb_to_recordset($10::jsonb) AS (type text, at timestamptz, actor_type text,
               actor_key_fingerprint text, from_status text, to_status text, data jsonb)) WITH ORDINALITY
               AS e(type, at, actor_type, actor_key_fingerprint, from_status, to_status, data, ord)
       ORDER BY e.ord
    )
    SELECT version FROM updated`;

/**
 * Writes a planned change in ONE statement, only if nobody changed the contract since `row` was read (same
 * version): the update and its events commit together, or neither does. Returns the new row, or null when the
 * version moved on (the caller then retries under a row lock). No explicit transaction: one round trip.
 */
export async function commitIfUnchanged(
  db: Database,
  row: ContractRow,
  plan: { state: ContractState; events: EventInsert[] },
  now: Date,
): Promise<ContractRow | null> {
  const st = plan.state;
  const events = plan.events.map((e) => ({
    type: e.type,
    at: now.toISOString(),
    actor_type: e.actorType,
    actor_key_fingerprint: e.actorKeyFingerprint ?? null,
    from_status: e.fromStatus,
    to_status: e.toStatus,
    data: e.data,
  }));
  const params = [
    row.id,
    row.version,
    st.status,
    iso(st.nextBillingDate),
    iso(st.pausedAt),
    iso(st.resumeAt),
    iso(st.cancelledAt),
    st.cancellationReason,
    now.toISOString(),
    JSON.stringify(events),
  ];
  const rows = await db.prepared<{ version: number }>('svc_commit_if_unchanged', COMMIT_IF_UNCHANGED, params).catch((err) => {
    if (hasCode(err, '55P03')) return null; // lock_not_available: another writer holds the row
    throw err;
  });
  if (!rows || rows.length === 0) return null;
  return { ...row, ...stateColumns(st, now), version: Number(rows[0].version) };
}

function hasCode(err: unknown, code: string): boolean {
  for (let e: any = err, depth = 0; e && depth < 5; e = e.cause, depth++) if (e.code === code) return true;
  return false;
}
