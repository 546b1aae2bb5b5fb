import type { ContractState } from '../domain/contract.js';
import type { PlannedEvent } from '../domain/commands/plan.js';
import { plainArray, textArray, timestampArray } from './arrayLiterals.js';
import { batchRows } from './batchInput.js';
import { Batcher, perDatabase } from './batcher.js';
import { isDatabaseUnavailable, type Database, type RunSql } from './client.js';
import { CONTRACT_COLUMNS, STATE_COLUMNS } from './contractColumns.js';
import { CONTRACT_EVENT_CONSUMERS } from './contractEventConsumers.js';
import { byOrd } from './contractRows.js';
import type { ContractRow } from './schema.js';

/**
 * How a contract change is written: one statement writes the contract row (its version moved by one per event), its
 * events, the rows of every event consumer (contractEventConsumers.ts: the webhook outbox) and, for a request that
 * came with an Idempotency-Key, its recorded result, all or nothing. It is applied only if the contract still has
 * the version the change was planned from and no other writer holds its row (SKIP LOCKED: it never waits), so
 * concurrent changes are batched into one statement (a group commit) and a change that lost is planned again. This
 * file only writes what it is given; services/changeContract.ts decides what and when.
 */

/** The Idempotency-Key claim a change answers (services/idempotency.ts): its result is recorded with the change. */
export type IdempotencyRecord = { shopId: string; keyDigest: string; requestId: string };

/** The platform's position of a mirrored contract (platform mode): its revision and when it changed there. */
export type MirrorMark = { platformRevision: string; platformUpdatedAt: Date };

/**
 * One contract's write: the row it was planned from, the state after it, its events with the contract as a client
 * sees it right after each (`rendered`, JSON: what the events' consumers get; the last one is the recorded result).
 */
export type ContractWrite = {
  before: ContractRow;
  after: ContractState;
  events: PlannedEvent[];
  rendered: string[];
  now: Date;
  mirror?: MirrorMark;
  record?: IdempotencyRecord;
  /** A bulk job's item this change carries out: marked succeeded (with its event and totals) by the same statement. */
  bulkItem?: BulkItemDone;
};

/** A bulk job's item done by a change: which job, and the contract's next order total before and after. */
export type BulkItemDone = { jobId: string; currencyCode: string; before: string; after: string };

/**
 * A list of JSON documents (the contract after each event, a request's recorded result) comes as ONE text parameter:
 * as a json[] parameter, each document would be escaped into an array literal by the driver and parsed out of it
 * again (a few kilobytes per change, on every action).
 * - `jsonList`: a JSON array of them, taken apart in SQL in its order (each document is parsed once);
 * - `textList`: the documents joined by the ASCII record separator, which JSON.stringify never leaves unescaped in
 *   its output, split without being parsed: the contracts after each event, which only a webhook delivery keeps
 *   (cast to json there), so events no endpoint wants are never parsed.
 */
const jsonList = (param: number) => `(SELECT array_agg(j ORDER BY n) FROM json_array_elements($${param}::json) WITH ORDINALITY AS t(j, n))`;
const textList = (param: number) => `string_to_array($${param}::text, chr(30))`;
const RECORD_SEPARATOR = '\x1e';

// Parameters, in this order: per contract $1 ord, $2 id, $3 version, $4 number of events, $5 updated_at,
// $6 platform revision, $7 platform updated_at, then one array per state column (contractColumns.ts); then the
// events, then the idempotency records. A change of n events moves the contract's version by n: each event has its
// own version (the one after it), which only grows, so a consumer can order and deduplicate by it.
const S = STATE_COLUMNS.length;
const state = (i: number) => 8 + i;
const EV = 8 + S;
const REC = EV + 11;
const BULK = REC + 4;

/**
 * A bulk job's items that this commit carries out (statements written for bulk jobs only): each marked succeeded
 * with the change's last event and its totals, in the change's own statement, so an item is done exactly when its
 * change is committed, and never applied twice.
 */
const bulkItems = (rows: (arrays: string[]) => string) => `, bulk_done AS MATERIALIZED (
    -- The items this commit carries out, each with its contract and the change's last event: formed first, so that
    -- the update below reaches each item by its primary key (joined in one step, the planner would pair every
    -- pending item of the job with every input).
    SELECT x.job_id, u.id AS contract_id, x.currency, x.before, x.after,
           (SELECT max(ne.id) FROM new_events ne WHERE ne.contract_id = u.id) AS event_id
      FROM ${rows([`$${BULK}::int[]`, `$${BULK + 1}::uuid[]`, `$${BULK + 2}::text[]`, `$${BULK + 3}::numeric[]`, `$${BULK + 4}::numeric[]`])}
           AS x(input_ord, job_id, currency, before, after)
      JOIN input i ON i.ord = x.input_ord
      JOIN updated u ON u.id = i.id
  ), bulk_items_done AS (
    UPDATE bulk_job_items b
       SET status = 'succeeded', event_id = d.event_id, currency_code = d.currency, total_before = d.before, total_after = d.after, lease_until = NULL
      FROM bulk_done d
     WHERE b.job_id = d.job_id AND b.contract_id = d.contract_id AND b.status = 'pending'
  )`;

const commitStatement = (rows: (arrays: string[]) => string, withBulkItems = false) => `
  WITH input AS (
    -- One write per contract: a second write to the same contract in one batch matches no row and is planned again,
    -- after this one (never two writes computed from one version).
    SELECT DISTINCT ON (id) *
      FROM ${rows(['$1::int[]', '$2::bigint[]', '$3::int[]', '$4::int[]', '$5::timestamptz[]', '$6::numeric[]', '$7::timestamptz[]', ...STATE_COLUMNS.map((c, i) => `$${state(i)}::${c.type}[]`)])}
           AS x(ord, id, version, n_events, updated_at, m_revision, m_updated_at, ${STATE_COLUMNS.map((c) => c.column).join(', ')})
     ORDER BY id, ord
  ), locked AS (
    -- Per input, by primary key (a locking subquery is never flattened into a join). A row this transaction
    -- already holds (a write under the lock) is not skipped.
    SELECT c.id FROM input i CROSS JOIN LATERAL (
      SELECT id FROM subscription_contracts WHERE id = i.id AND version = i.version FOR UPDATE SKIP LOCKED
    ) c
  ), updated AS (
    UPDATE subscription_contracts c
       SET ${STATE_COLUMNS.map((col) => (col.json ? `${col.column} = COALESCE(i.${col.column}, c.${col.column})` : `${col.column} = i.${col.column}`)).join(',\n           ')},
           updated_at = i.updated_at, version = c.version + i.n_events, call_lease = NULL, call_lease_until = NULL,
           platform_revision = COALESCE(i.m_revision, c.platform_revision),
           platform_updated_at = COALESCE(i.m_updated_at, c.platform_updated_at)
      FROM input i JOIN locked l ON l.id = i.id
     WHERE c.id = i.id
    RETURNING c.id, c.shop_id, c.version
  ), planned_events AS (
    SELECT e.*, i.id AS contract_id, i.version + e.step AS contract_version
      FROM ${rows([`$${EV}::int[]`, `$${EV + 1}::int[]`, `$${EV + 2}::text[]`, `$${EV + 3}::timestamptz[]`, `$${EV + 4}::text[]`, `$${EV + 5}::text[]`, `$${EV + 6}::text[]`, `$${EV + 7}::text[]`, `$${EV + 8}::text[]`, `$${EV + 9}::jsonb[]`, textList(EV + 10)])}
           WITH ORDINALITY AS e(input_ord, step, type, at, actor_type, actor_key_fingerprint, actor_id, from_status, to_status, data, contract, n)
      JOIN input i ON i.ord = e.input_ord
  ), new_events AS (
    INSERT INTO contract_events (contract_id, shop_id, type, at, actor_type, actor_key_fingerprint, actor_id, from_status, to_status, data, contract_version)
    SELECT u.id, u.shop_id, p.type, p.at, p.actor_type, p.actor_key_fingerprint, p.actor_id, p.from_status, p.to_status, p.data, p.contract_version
      FROM planned_events p JOIN updated u ON u.id = p.contract_id
     ORDER BY p.n
    RETURNING id, contract_id, shop_id, type, at, contract_version
  ), committed_events AS (
    -- What event consumers read (contractEventConsumers.ts): each committed event with the contract after it.
    SELECT ne.id, ne.contract_id, ne.shop_id, ne.type, ne.at, ne.contract_version, p.contract, p.data
      FROM new_events ne JOIN planned_events p ON p.contract_id = ne.contract_id AND p.contract_version = ne.contract_version
  ), recorded AS (
    -- The result of a request that came with an Idempotency-Key, kept in the same commit as its effect.
    UPDATE idempotency_keys k
       SET state = 'completed', status_code = 200, result = r.result
      FROM ${rows([`$${REC}::int[]`, `$${REC + 1}::text[]`, `$${REC + 2}::text[]`, jsonList(REC + 3)])} AS r(input_ord, key_digest, owner_request_id, result)
      JOIN input i ON i.ord = r.input_ord
      JOIN updated u ON u.id = i.id
     WHERE k.shop_id = u.shop_id AND k.key_digest = r.key_digest AND k.owner_request_id = r.owner_request_id
       AND k.state = 'in_progress'
  )${CONTRACT_EVENT_CONSUMERS.map((cte) => `, ${cte}`).join('')}${withBulkItems ? bulkItems(rows) : ''}
  SELECT i.ord FROM updated u JOIN input i ON i.id = u.id`;

/**
 * The statement in two texts, by the batch's size. A small batch (a request's change, most often alone) reads its
 * input through svc_rows (batchInput.ts), so PostgreSQL keeps one plan for it: planned at each run, planning was most
 * of what a lone change cost the database. A large one (a billing round's hundred) reads it through unnest, planned
 * for its batches or kept as PostgreSQL chooses: through svc_rows, a storm's large batches cost PostgreSQL more per
 * contract (docs/performance-log.md, "Figures behind the shape of the code").
 */
const SMALL_BATCH = 10;
const COMMIT_SMALL = { name: 'svc_write_contracts', text: commitStatement(batchRows) };
const COMMIT_LARGE = { name: 'svc_write_contracts_large', text: commitStatement((arrays) => `unnest(${arrays.join(', ')})`) };
const COMMIT_BULK = { name: 'svc_write_contracts_bulk', text: commitStatement((arrays) => `unnest(${arrays.join(', ')})`, true) };
const commitFor = (writes: ContractWrite[]) => (writes.some((w) => w.bulkItem) ? COMMIT_BULK : writes.length < SMALL_BATCH ? COMMIT_SMALL : COMMIT_LARGE);

/** A state column's values as its array literal (arrayLiterals.ts): a json column's only when the change made it anew. */
function columnArrays(writes: ContractWrite[]): string[] {
  return STATE_COLUMNS.map((c) => {
    const k = c.key;
    if (c.json) return textArray(writes, (w) => (w.after[k] === w.before[k] ? null : JSON.stringify(w.after[k])));
    if (c.type === 'timestamptz') return timestampArray(writes, (w) => w.after[k] as Date | null);
    if (c.type === 'int') return plainArray(writes, (w) => w.after[k] as number | null);
    return textArray(writes, (w) => w.after[k] as string | null);
  });
}

/** The statement's parameters, every array as its literal (arrayLiterals.ts). */
function parameters(writes: ContractWrite[]): unknown[] {
  const events = writes.flatMap((w, i) => w.events.map((e, k) => ({ ord: i + 1, step: k + 1, at: w.now, contract: w.rendered[k], ...e })));
  const records = writes.flatMap((w, i) => (w.record ? [{ ord: i + 1, record: w.record, result: w.rendered[w.rendered.length - 1] }] : []));
  return [
    plainArray(writes, (_, i) => i + 1),
    plainArray(writes, (w) => w.before.id),
    plainArray(writes, (w) => w.before.version),
    plainArray(writes, (w) => w.events.length),
    timestampArray(writes, (w) => (w.events.length ? w.now : w.before.updatedAt)),
    plainArray(writes, (w) => w.mirror?.platformRevision ?? null),
    timestampArray(writes, (w) => w.mirror?.platformUpdatedAt ?? null),
    ...columnArrays(writes),
    plainArray(events, (e) => e.ord),
    plainArray(events, (e) => e.step),
    textArray(events, (e) => e.type),
    timestampArray(events, (e) => e.at),
    textArray(events, (e) => e.actor.type),
    textArray(events, (e) => e.actor.keyFingerprint ?? null),
    textArray(events, (e) => e.actor.id ?? null),
    textArray(events, (e) => e.from),
    textArray(events, (e) => e.to),
    textArray(events, (e) => JSON.stringify(e.data)),
    // One event (an action's, most often): its contract as it is, not a copy made by join.
    events.length === 1 ? events[0].contract : events.map((e) => e.contract).join(RECORD_SEPARATOR),
    plainArray(records, (r) => r.ord),
    textArray(records, (r) => r.record.keyDigest),
    textArray(records, (r) => r.record.requestId),
    `[${records.map((r) => r.result).join(',')}]`,
    ...(writes.some((w) => w.bulkItem) ? bulkParameters(writes) : []),
  ];
}

function bulkParameters(writes: ContractWrite[]): unknown[] {
  const items = writes.flatMap((w, i) => (w.bulkItem ? [{ ord: i + 1, item: w.bulkItem }] : []));
  return [
    plainArray(items, (x) => x.ord),
    textArray(items, (x) => x.item.jobId),
    textArray(items, (x) => x.item.currencyCode),
    plainArray(items, (x) => x.item.before),
    plainArray(items, (x) => x.item.after),
  ];
}

const writtenOrds = (rows: { ord: number }[], n: number) => {
  const out = new Array<boolean>(n).fill(false);
  for (const r of rows) out[r.ord - 1] = true;
  return out;
};

/**
 * The statement of one database, batched over concurrent callers: true where the write was made (false: the contract
 * moved on, or another writer held its row). One batch at the database at a time: each is a commit (a WAL flush),
 * and while one commits the next gathers every change that arrives meanwhile, so under load the commits grow with
 * the load instead of two half-size ones contending (more actions a second, and less of PostgreSQL per action, than
 * with two in paired benchmark runs). A lone change still goes out at once.
 */
export const contractWrites = perDatabase((db: Database) => writeBatcher(db));

/**
 * The same for changes no client waits on (billing's outcomes): their own group commit, so that during a billing
 * storm a request's change goes out with the other requests' changes, not behind a batch of a hundred outcomes.
 */
export const backgroundContractWrites = perDatabase((db: Database) => writeBatcher(db));

function writeBatcher(db: Database): Batcher<ContractWrite, boolean> {
  return new Batcher<ContractWrite, boolean>(
    async (writes) => {
      const statement = commitFor(writes);
      return writtenOrds(await db.prepared<{ ord: number }>(statement.name, statement.text, parameters(writes)), writes.length);
    },
    { failsEveryInput: isDatabaseUnavailable, maxInFlight: 1 },
  );
}

/** The same statement inside a transaction the caller holds (rows it locked): true where each write was made. */
export async function writeContractsIn(run: RunSql, writes: ContractWrite[]): Promise<boolean[]> {
  if (!writes.length) return [];
  const statement = commitFor(writes);
  return writtenOrds(await run<{ ord: number }>(statement.text, parameters(writes), { name: statement.name }), writes.length);
}

/** A contract row as a writer under the lock sees it: with whether a change on the platform holds it now. */
export type LockedContract = ContractRow & { callLease: string | null; callLeaseUntil: Date | null };

const LOCK = (skip: boolean) => `
  SELECT ${CONTRACT_COLUMNS}, c.call_lease::text AS "callLease", c.call_lease_until AS "callLeaseUntil"
    FROM subscription_contracts c
   WHERE c.id = $1 AND c.shop_id = $2 FOR UPDATE${skip ? ' SKIP LOCKED' : ''}`;

/** The contract's row, locked for this transaction (waiting for another writer, or null with `skipLocked`). */
export async function lockContract(run: RunSql, shopId: string, contractId: string, opts: { skipLocked?: boolean } = {}): Promise<LockedContract | null> {
  const skip = !!opts.skipLocked;
  const [row] = await run<LockedContract>(LOCK(skip), [contractId, shopId], { name: skip ? 'svc_lock_contract_skip' : 'svc_lock_contract' });
  if (!row) return null;
  row.version = Number(row.version);
  return row;
}

const LOCK_MANY = `
  SELECT ${CONTRACT_COLUMNS}, c.call_lease::text AS "callLease", c.call_lease_until AS "callLeaseUntil"
    FROM unnest($1::bigint[], $2::bigint[]) AS q(id, shop_id)
    JOIN subscription_contracts c ON c.id = q.id AND c.shop_id = q.shop_id
   ORDER BY c.id FOR UPDATE OF c`;

const MANY_OF_SHOP = (lock: '' | ' FOR UPDATE SKIP LOCKED') => `
  SELECT ${CONTRACT_COLUMNS}, c.call_lease::text AS "callLease", c.call_lease_until AS "callLeaseUntil"
    FROM subscription_contracts c
   WHERE c.shop_id = $1 AND c.id = ANY ($2::bigint[])
   ORDER BY c.id${lock}`;

/**
 * A shop's contracts of `ids`, by id: locked for this transaction in id order, skipping those another writer holds
 * (`lock: 'skip'`: they are not in the answer), or as they are, unlocked.
 */
export async function contractsOfShop(run: RunSql, shopId: string, ids: string[], lock: 'skip' | 'none'): Promise<Map<string, LockedContract>> {
  const rows = await run<LockedContract>(MANY_OF_SHOP(lock === 'skip' ? ' FOR UPDATE SKIP LOCKED' : ''), [shopId, ids], {
    name: lock === 'skip' ? 'svc_lock_contracts_of_shop_skip' : 'svc_contracts_of_shop',
  });
  for (const r of rows) r.version = Number(r.version);
  return new Map(rows.map((r) => [r.id, r]));
}

/** Several contracts' rows locked for this transaction, in id order (two such locks never deadlock), by id. */
export async function lockContracts(run: RunSql, shopId: string, ids: string[]): Promise<Map<string, LockedContract>> {
  const rows = await run<LockedContract>(LOCK_MANY, [ids, ids.map(() => shopId)], { name: 'svc_lock_contracts' });
  for (const r of rows) r.version = Number(r.version);
  return new Map(rows.map((r) => [r.id, r]));
}

export { CONTRACT_COLUMNS, byOrd };
