import { randomUUID } from 'node:crypto';
import type { ContractPlan } from '../domain/changes.js';
import { MESSAGES, ServiceError } from '../domain/errors.js';
import { toContract, type Contract } from '../domain/resources.js';
import { Batcher, perDatabase } from './batcher.js';
import { isDatabaseUnavailable, type Database, type RunSql } from './client.js';
import { CONTRACT_EVENT_CONSUMERS } from './contractEventConsumers.js';
import { byOrd, CONTRACT_COLUMNS } from './contractRows.js';
import type { ContractRow } from './schema.js';

/**
 * THE change path: the one place a contract is written. It commits a plan (domain/changes.ts) as one unit: the
 * contract row (its version bumped), its events, the rows of every event consumer (contractEventConsumers.ts: the
 * webhook outbox) and, for a request that came with an Idempotency-Key, the recorded result. Two strategies behind
 * one call:
 *
 * - optimistic: from the contract as the caller read it, one statement writes everything if the contract still has
 *   that version and no other writer holds it (SKIP LOCKED: it never waits, so it runs in microseconds and is
 *   batched with concurrent callers' writes into one statement: group commit);
 * - locked: BEGIN, the row taken FOR UPDATE, the plan made again from the row as it now is, the same statement,
 *   COMMIT. Used when the optimistic write lost (another writer got there first) and when the caller has no read.
 *
 * A change whose planning reaches outside svc (platform mode: the platform's mutation is made while planning) must
 * see one change at a time per contract, and must not hold a connection and a row lock while the platform answers:
 * it leases the contract (one statement: call_lease, migration 0007), plans and calls out with nothing held, then
 * commits with the optimistic statement, which checks the version and clears the lease. Locked writers (platform
 * sync) do not write a leased contract (ContractBusy): the lease's holder is about to write the platform's answer.
 *
 * Either way no update is lost and nothing is half written.
 */

/** The Idempotency-Key claim a change answers (services/idempotency.ts): its result is recorded with the change. */
export type IdempotencyRecord = { shopId: string; keyDigest: string; requestId: string };

export type ContractChange = {
  shopId: string;
  contractId: string;
  now: Date;
  /** Plans the change from the contract as it is; may be called twice (again under the lock). null: nothing to do. */
  plan(row: ContractRow): ContractPlan | null | Promise<ContractPlan | null>;
  /** The contract as the caller read it: the optimistic strategy starts from it. Absent: the locked strategy. */
  read?: ContractRow;
  /** false: the locked strategy only (platform sync, which writes what it read under the lock). */
  optimistic?: boolean;
  /** Planning calls outside svc (the platform): the change is made under a lease of the contract (see the top). */
  leased?: boolean;
  /** Under the locked strategy, skip a contract another writer holds instead of waiting (the resume sweep). */
  skipLocked?: boolean;
  record?: IdempotencyRecord;
};

/**
 * The contract after the change, and whether anything was written. `contract`: the contract as a client sees it
 * after the change's last event, exactly as the events' consumers and the idempotency record got it (none when the
 * change had no event).
 */
export type CommittedChange = { row: ContractRow; changed: boolean; contract?: Contract };

// Parameters: the contracts' new states ($1–$11), their events with the contract after each ($12–$21), the
// idempotency records ($22–$25), the mirror's columns ($26–$32). A change of n events moves the contract's version by n: each event has its own
// version (the one after it), which only grows, so a consumer can order and deduplicate by it.
/**
 * A list of JSON documents (the contract after each event, a request's recorded result) comes as ONE json parameter,
 * an array of them, and is taken apart in SQL in its order: as a json[] parameter, each document would be escaped
 * into an array literal by the driver and parsed out of it again (a few kilobytes per change, ~4 % of an action's
 * CPU).
 */
const jsonList = (param: number) => `(SELECT array_agg(j ORDER BY n) FROM json_array_elements($${param}::json) WITH ORDINALITY AS t(j, n))`;

const COMMIT = `
  WITH input AS (
    -- One write per contract: a second write to the same contract in one batch matches no row and is redone under
    -- the lock, after this one (never two writes computed from one version).
    SELECT DISTINCT ON (id) *
      FROM unnest($1::int[], $2::bigint[], $3::int[], $4::int[], $5::text[], $6::timestamptz[], $7::timestamptz[],
                  $8::timestamptz[], $9::timestamptz[], $10::text[], $11::timestamptz[],
                  $26::numeric[], $27::timestamptz[], $28::jsonb[], $29::text[], $30::int[], $31::text[], $32::text[])
           AS x(ord, id, version, n_events, status, next_billing_date, paused_at, resume_at, cancelled_at,
                cancellation_reason, updated_at, m_revision, m_updated_at, m_lines, m_interval, m_interval_count,
                m_customer_id, m_customer_email)
     ORDER BY id, ord
  ), locked AS (
    -- Per input, by primary key (a locking subquery is never flattened into a join). A row this transaction
    -- already holds (the locked strategy) is not skipped.
    SELECT c.id FROM input i CROSS JOIN LATERAL (
      SELECT id FROM subscription_contracts WHERE id = i.id AND version = i.version FOR UPDATE SKIP LOCKED
    ) c
  ), updated AS (
    UPDATE subscription_contracts c
       SET status = i.status, next_billing_date = i.next_billing_date, paused_at = i.paused_at,
           resume_at = i.resume_at, cancelled_at = i.cancelled_at, cancellation_reason = i.cancellation_reason,
           updated_at = i.updated_at, version = c.version + i.n_events, call_lease = NULL, call_lease_until = NULL,
           -- The mirror's own columns (platform mode), where the plan sets them (null: as they are).
           platform_revision = COALESCE(i.m_revision, c.platform_revision),
           platform_updated_at = COALESCE(i.m_updated_at, c.platform_updated_at), lines = COALESCE(i.m_lines, c.lines),
           billing_interval = COALESCE(i.m_interval, c.billing_interval),
           billing_interval_count = COALESCE(i.m_interval_count, c.billing_interval_count),
           customer_id = COALESCE(i.m_customer_id, c.customer_id), customer_email = COALESCE(i.m_customer_email, c.customer_email)
      FROM input i JOIN locked l ON l.id = i.id
     WHERE c.id = i.id
    RETURNING c.id, c.shop_id, c.version
  ), planned_events AS (
    SELECT e.*, i.id AS contract_id, i.version + e.step AS contract_version
      FROM unnest($12::int[], $13::int[], $14::text[], $15::timestamptz[], $16::text[], $17::text[], $18::text[],
                  $19::text[], $20::jsonb[], ${jsonList(21)})
           WITH ORDINALITY AS e(input_ord, step, type, at, actor_type, actor_key_fingerprint, from_status, to_status, data, contract, n)
      JOIN input i ON i.ord = e.input_ord
  ), new_events AS (
    INSERT INTO contract_events (contract_id, shop_id, type, at, actor_type, actor_key_fingerprint, from_status, to_status, data, contract_version)
    SELECT u.id, u.shop_id, p.type, p.at, p.actor_type, p.actor_key_fingerprint, p.from_status, p.to_status, p.data, p.contract_version
      FROM planned_events p JOIN updated u ON u.id = p.contract_id
     ORDER BY p.n
    RETURNING id, contract_id, shop_id, type, at, contract_version
  ), committed_events AS (
    -- What event consumers read (contractEventConsumers.ts): each committed event with the contract after it.
    SELECT ne.id, ne.contract_id, ne.shop_id, ne.type, ne.at, ne.contract_version, p.contract
      FROM new_events ne JOIN planned_events p ON p.contract_id = ne.contract_id AND p.contract_version = ne.contract_version
  ), recorded AS (
    -- The result of a request that came with an Idempotency-Key, kept in the same commit as its effect.
    UPDATE idempotency_keys k
       SET state = 'completed', status_code = 200, result = r.result
      FROM unnest($22::int[], $23::text[], $24::text[], ${jsonList(25)}) AS r(input_ord, key_digest, owner_request_id, result)
      JOIN input i ON i.ord = r.input_ord
      JOIN updated u ON u.id = i.id
     WHERE k.shop_id = u.shop_id AND k.key_digest = r.key_digest AND k.owner_request_id = r.owner_request_id
       AND k.state = 'in_progress'
  )${CONTRACT_EVENT_CONSUMERS.map((cte) => `, ${cte}`).join('')}
  SELECT i.ord FROM updated u JOIN input i ON i.id = u.id`;

const COMMIT_NAME = 'svc_commit_contract_change';

const LOCK = (skip: boolean) => `
  SELECT ${CONTRACT_COLUMNS}, c.call_lease::text AS "callLease", c.call_lease_until AS "callLeaseUntil"
    FROM subscription_contracts c
   WHERE c.id = $1 AND c.shop_id = $2 FOR UPDATE${skip ? ' SKIP LOCKED' : ''}`;

// A lease is taken when there is none or the last one lapsed (x.now), in one statement of its own transaction, for
// every change that asks at once. Two asking for one contract: one gets it (an UPDATE changes a row once).
//
// Taking or giving back a lease commits without waiting for the WAL to reach the disk (synchronous_commit off, for
// that transaction alone): other transactions see it at once, which is all a lease is for, and the action's latency
// loses a disk flush. A lease lost with a crash of the database is what a lapsed lease already is: the commit that
// follows checks the contract's version, and a platform change whose commit was lost is retried safely (the retry
// finds the platform already there).
const ASYNC_COMMIT = `(SELECT set_config('synchronous_commit', 'off', true)) AS async_commit`;
const TAKE_LEASES = `
  UPDATE subscription_contracts c SET call_lease = x.lease, call_lease_until = x.until
    FROM unnest($1::int[], $2::bigint[], $3::bigint[], $4::uuid[], $5::timestamptz[], $6::timestamptz[]) AS x(ord, id, shop_id, lease, until, now)
         CROSS JOIN ${ASYNC_COMMIT}
   WHERE c.id = x.id AND c.shop_id = x.shop_id AND (c.call_lease_until IS NULL OR c.call_lease_until <= x.now)
  RETURNING x.ord::int AS ord, ${CONTRACT_COLUMNS}`;

type LeaseAsk = { contractId: string; shopId: string; lease: string; until: Date; now: Date };

/** The lease statement of one database, batched over concurrent changes: the contract where its lease was taken. */
const leases = perDatabase(
  (db: Database) =>
    new Batcher<LeaseAsk, ContractRow | undefined>(
      async (asks) => {
        const col = <T>(f: (a: LeaseAsk, i: number) => T) => asks.map(f);
        const rows = await db.prepared<ContractRow & { ord: number }>('svc_take_call_leases', TAKE_LEASES, [
          col((_, i) => i + 1),
          col((a) => a.contractId),
          col((a) => a.shopId),
          col((a) => a.lease),
          col((a) => a.until),
          col((a) => a.now),
        ]);
        return byOrd(rows, asks.length);
      },
      { failsEveryInput: isDatabaseUnavailable },
    ),
);
const LEASE_HOLDER = `SELECT call_lease_until AS "until" FROM subscription_contracts WHERE id = $1 AND shop_id = $2`;
const RELEASE = `UPDATE subscription_contracts c SET call_lease = NULL, call_lease_until = NULL FROM ${ASYNC_COMMIT} WHERE c.id = $1 AND c.call_lease = $2`;

/**
 * How long a lease holds a contract: longer than any change takes on the platform (its calls time out, and
 * throttling gives up, in seconds), so it lapses only when its holder died.
 */
export const CALL_LEASE_MS = 60_000;
/** A change that finds the contract leased looks again this often, for at most this long. */
const LEASE_POLL_MS = 15;
const LEASE_WAIT_MS = 15_000;

type Lease = { callLease: string | null; callLeaseUntil: Date | null };

/** Another change is being made on the platform: a locked writer leaves the contract to it and tries later. */
export class ContractBusy extends ServiceError {
  constructor() {
    super('platform_unavailable', 'Another change of this contract is being made on the platform; try again in a moment.', { headers: { 'retry-after': '1' } });
  }
}

/**
 * One contract's write as the statement takes it: the row after the change, the version it was planned from, and the
 * contract as a client sees it right after each event (what the events' consumers get; the last one is the service's
 * result, which an Idempotency-Key records).
 */
type Write = { after: ContractRow; fromVersion: number; plan: ContractPlan; now: Date; record?: IdempotencyRecord; contracts: string[]; last?: Contract };

function newWrite(row: ContractRow, plan: ContractPlan, change: Pick<ContractChange, 'now' | 'record'>): Write {
  const after = rowAfter(row, plan, change.now);
  let last: Contract | undefined;
  const contracts = plan.events.map((e) => JSON.stringify((last = toContract(after, e.after))));
  return { after, fromVersion: row.version, plan, now: change.now, record: change.record, contracts, last };
}

/** What a committed write answers: the row after it, and the contract as its last event and its record have it. */
const committedBy = (w: Write, changed: boolean): CommittedChange => ({ row: w.after, changed, contract: w.last });

function parameters(writes: Write[]): unknown[] {
  const col = (f: (w: Write, i: number) => unknown) => writes.map(f);
  const events = writes.flatMap((w, i) => w.plan.events.map((e, k) => ({ ord: i + 1, step: k + 1, at: w.now, contract: w.contracts[k], ...e })));
  const ev = (f: (e: (typeof events)[number]) => unknown) => events.map(f);
  const records = writes.flatMap((w, i) => (w.record ? [{ ord: i + 1, record: w.record, result: events.findLast((e) => e.ord === i + 1)!.contract }] : []));
  const rec = (f: (r: (typeof records)[number]) => unknown) => records.map(f);
  return [
    col((_, i) => i + 1),
    col((w) => w.after.id),
    col((w) => w.fromVersion),
    col((w) => w.plan.events.length),
    col((w) => w.after.status),
    col((w) => w.after.nextBillingDate),
    col((w) => w.after.pausedAt),
    col((w) => w.after.resumeAt),
    col((w) => w.after.cancelledAt),
    col((w) => w.after.cancellationReason),
    col((w) => w.after.updatedAt),
    ev((e) => e.ord),
    ev((e) => e.step),
    ev((e) => e.type),
    ev((e) => e.at),
    ev((e) => e.actor.type),
    ev((e) => e.actor.keyFingerprint ?? null),
    ev((e) => e.from),
    ev((e) => e.to),
    ev((e) => JSON.stringify(e.data)),
    `[${ev((e) => e.contract).join(',')}]`,
    rec((r) => r.ord),
    rec((r) => r.record.keyDigest),
    rec((r) => r.record.requestId),
    `[${rec((r) => r.result).join(',')}]`,
    col((w) => w.plan.mirror?.platformRevision ?? null),
    col((w) => w.plan.mirror?.platformUpdatedAt ?? null),
    col((w) => (w.plan.mirror?.lines === undefined ? null : JSON.stringify(w.plan.mirror.lines))),
    col((w) => w.plan.mirror?.billingInterval ?? null),
    col((w) => w.plan.mirror?.billingIntervalCount ?? null),
    col((w) => w.plan.mirror?.customerId ?? null),
    col((w) => w.plan.mirror?.customerEmail ?? null),
  ];
}

/** The contract row as the statement leaves it: the plan's state and mirror, the version moved by one per event. */
function rowAfter(row: ContractRow, plan: ContractPlan, now: Date): ContractRow {
  const s = plan.state;
  const m = plan.mirror;
  // Field by field (not spread): this runs for every change, and copying a whole row by spread is several times
  // slower.
  return {
    id: row.id,
    shopId: row.shopId,
    status: s.status,
    customerId: m?.customerId ?? row.customerId,
    customerEmail: m?.customerEmail ?? row.customerEmail,
    billingInterval: m?.billingInterval ?? row.billingInterval,
    billingIntervalCount: m?.billingIntervalCount ?? row.billingIntervalCount,
    nextBillingDate: s.nextBillingDate,
    lines: m?.lines ?? row.lines,
    pausedAt: s.pausedAt,
    resumeAt: s.resumeAt,
    cancelledAt: s.cancelledAt,
    cancellationReason: s.cancellationReason,
    createdAt: row.createdAt,
    updatedAt: plan.events.length ? now : row.updatedAt,
    version: row.version + plan.events.length,
    platformRevision: m?.platformRevision ?? row.platformRevision,
    platformUpdatedAt: m?.platformUpdatedAt ?? row.platformUpdatedAt,
    callLease: null,
    callLeaseUntil: null,
  };
}

const writtenOrds = (rows: { ord: number }[], n: number) => {
  const out = new Array<boolean>(n).fill(false);
  for (const r of rows) out[r.ord - 1] = true;
  return out;
};

/**
 * The optimistic statement of one database, batched over concurrent callers: true where the write was made. One batch
 * at the database at a time: each is a commit (a WAL flush), and while one commits the next gathers every change that
 * arrives meanwhile, so under load the commits grow with the load instead of two half-size ones contending (paired
 * bench runs: ~10 % more actions per second, ~12 % less PostgreSQL CPU per action than with two). A lone change still
 * goes out at once.
 */
export const optimisticWrites = perDatabase(
  (db: Database) =>
    new Batcher<Write, boolean>(
      async (writes) => writtenOrds(await db.prepared<{ ord: number }>(COMMIT_NAME, COMMIT, parameters(writes)), writes.length),
      { failsEveryInput: isDatabaseUnavailable, maxInFlight: 1 },
    ),
);

/**
 * Under the contract's row lock: the change planned from the row as it now is, and the write that commits it (null:
 * nothing to write). ContractBusy while another change holds the contract's lease; `lease`, the change's own (its
 * fallback after an optimistic write that lost), does not stop it. Throws what planning throws.
 */
async function planLocked(row: ContractRow & Lease, change: ContractChange, lease?: string): Promise<{ done: CommittedChange; write: Write | null }> {
  row.version = Number(row.version);
  if (row.callLeaseUntil && row.callLeaseUntil.getTime() > change.now.getTime() && row.callLease !== lease) throw new ContractBusy();
  const plan = await change.plan(row);
  if (!plan) return { done: { row, changed: false }, write: null };
  const write = newWrite(row, plan, change);
  return { done: committedBy(write, plan.events.length > 0), write: plan.events.length || plan.mirror ? write : null };
}

async function commitLocked(db: Database, change: ContractChange, lease?: string): Promise<CommittedChange | null> {
  return db.transaction((run: RunSql) => lockedIn(run, change, lease));
}

/**
 * The locked strategy inside a transaction the caller holds, for a change that must commit with what the caller
 * writes in it (a contract row inserted and its contract.created event: platform sync). Nothing is committed here.
 */
export function commitContractChangeIn(run: RunSql, change: ContractChange): Promise<CommittedChange | null> {
  return lockedIn(run, change);
}

async function lockedIn(run: RunSql, change: ContractChange, lease?: string): Promise<CommittedChange | null> {
  const skip = !!change.skipLocked;
  const [row] = await run<ContractRow & Lease>(LOCK(skip), [change.contractId, change.shopId], { name: skip ? 'svc_lock_contract_skip' : 'svc_lock_contract' });
  if (!row) {
    if (change.skipLocked) return null;
    throw new ServiceError('not_found', MESSAGES.contractNotFound);
  }
  let planned: Awaited<ReturnType<typeof planLocked>>;
  try {
    planned = await planLocked(row, change, lease);
  } catch (err) {
    if (change.skipLocked && err instanceof ContractBusy) return null;
    throw err;
  }
  if (planned.write) await run(COMMIT, parameters([planned.write]), { name: COMMIT_NAME });
  return planned.done;
}

const LOCK_MANY = `
  SELECT ${CONTRACT_COLUMNS}, c.call_lease::text AS "callLease", c.call_lease_until AS "callLeaseUntil"
    FROM unnest($1::bigint[], $2::bigint[]) AS q(id, shop_id)
    JOIN subscription_contracts c ON c.id = q.id AND c.shop_id = q.shop_id
   ORDER BY c.id FOR UPDATE OF c`;

/**
 * The locked strategy for the changes of several distinct contracts at once, in one transaction: their rows locked
 * (in id order, so two such batches never deadlock), each planned from its row as commitLocked does, and one write
 * of them all. For a writer that has many contracts to bring up to date together (platform sync of what the inbox
 * read in one call): one commit instead of one per contract. Answers, per change, what commitContractChange would
 * have: its result, or the ServiceError it would have thrown (not_found, ContractBusy, what planning threw); any
 * other error fails them all, nothing written.
 */
export async function commitContractChanges(db: Database, changes: ContractChange[]): Promise<(CommittedChange | ServiceError)[]> {
  if (!changes.length) return [];
  if (new Set(changes.map((c) => c.contractId)).size !== changes.length) throw new Error('commitContractChanges: one change per contract');
  return db.transaction(async (run: RunSql) => {
    const rows = await run<ContractRow & Lease>(LOCK_MANY, [changes.map((c) => c.contractId), changes.map((c) => c.shopId)], { name: 'svc_lock_contracts' });
    const byId = new Map(rows.map((r) => [r.id, r]));
    const writes: Write[] = [];
    const out: (CommittedChange | ServiceError)[] = [];
    for (const change of changes) {
      const row = byId.get(change.contractId);
      if (!row) {
        out.push(new ServiceError('not_found', MESSAGES.contractNotFound));
        continue;
      }
      try {
        const { done, write } = await planLocked(row, change);
        if (write) writes.push(write);
        out.push(done);
      } catch (err) {
        if (!(err instanceof ServiceError)) throw err;
        out.push(err);
      }
    }
    if (writes.length) await run(COMMIT, parameters(writes), { name: COMMIT_NAME });
    return out;
  });
}

/**
 * Commits one contract change (see the top of this file). Throws what planning throws (invalid_state), not_found
 * when the contract is not the shop's, and database errors; null only with `skipLocked`, when another writer held
 * the contract.
 */
export async function commitContractChange(db: Database, change: ContractChange): Promise<CommittedChange | null> {
  if (change.leased) return commitLeased(db, change);
  const read = change.read;
  if (read && change.optimistic !== false) {
    const plan = await change.plan(read);
    if (!plan) return { row: read, changed: false };
    const write = newWrite(read, plan, change);
    if (await optimisticWrites(db).load(write)) return committedBy(write, true);
  }
  return commitLocked(db, change);
}

/** The leased strategy (see the top): lease, plan (the platform is called), the optimistic statement. */
async function commitLeased(db: Database, change: ContractChange): Promise<CommittedChange | null> {
  const lease = randomUUID();
  const row = await takeLease(db, change, lease);
  if (!row) return null;
  let plan: ContractPlan | null;
  try {
    plan = await change.plan(row);
  } catch (err) {
    await release(db, row.id, lease);
    throw err;
  }
  if (!plan) {
    await release(db, row.id, lease);
    return { row, changed: false };
  }
  const write = newWrite(row, plan, change);
  try {
    if (await optimisticWrites(db).load(write)) return committedBy(write, true);
    // Not written: a locked writer had the row for a moment (SKIP LOCKED), or the lease lapsed and another change
    // was made. Under the lock: the same write if the contract is as planned; else plan again (and call again).
    const same = await db.transaction(async (run: RunSql) => {
      const [now] = await run<ContractRow & Lease>(LOCK(false), [change.contractId, change.shopId], { name: 'svc_lock_contract' });
      if (!now || Number(now.version) !== row.version || now.callLease !== lease) return false;
      await run(COMMIT, parameters([write]), { name: COMMIT_NAME });
      return true;
    });
    if (same) return committedBy(write, true);
    const done = await commitLocked(db, change, lease);
    // Nothing written (nothing left to do, or another writer held the row): the lease is still ours to give back.
    if (!done?.changed) await release(db, row.id, lease);
    return done;
  } catch (err) {
    await release(db, row.id, lease);
    throw err;
  }
}

/** Takes the contract's lease, waiting while another change holds it; null with skipLocked when one does. */
async function takeLease(db: Database, change: ContractChange, lease: string): Promise<ContractRow | null> {
  const deadline = Date.now() + LEASE_WAIT_MS;
  const until = new Date(change.now.getTime() + CALL_LEASE_MS);
  for (;;) {
    const row = await leases(db).load({ contractId: change.contractId, shopId: change.shopId, lease, until, now: change.now });
    if (row) return { ...row, version: Number(row.version) };
    const [held] = await db.prepared<{ until: Date | null }>('svc_call_lease_holder', LEASE_HOLDER, [change.contractId, change.shopId]);
    if (!held) throw new ServiceError('not_found', MESSAGES.contractNotFound);
    if (change.skipLocked) return null;
    if (Date.now() > deadline) throw new ContractBusy();
    await new Promise((r) => setTimeout(r, LEASE_POLL_MS));
  }
}

/** Gives the lease back (a change that failed or had nothing to do); never fails the change for it. */
async function release(db: Database, contractId: string, lease: string): Promise<void> {
  await db.prepared('svc_release_call_lease', RELEASE, [contractId, lease]).catch(() => {});
}
