import { Batcher } from '../db/batcher.js';
import { isDatabaseUnavailable, type Database } from '../db/client.js';
import type { ContractRow } from '../db/schema.js';

/**
 * The statements every API and MCP request runs (key lookups, contract reads, the optimistic action write), each
 * batched over concurrent callers (see Batcher) and prepared by name (parsed and planned once per connection).
 * Raw SQL rather than the query builder: a batch is an `unnest` of arrays, which the builder cannot express, and
 * these run thousands of times a second. Ids leave as text, so both drivers give the same row.
 */

const CONTRACT_COLUMNS = `
  c.id::text AS id, c.shop_id::text AS "shopId", c.status, c.customer_id AS "customerId",
  c.customer_email AS "customerEmail", c.billing_interval AS "billingInterval",
  c.billing_interval_count AS "billingIntervalCount", c.next_billing_date AS "nextBillingDate", c.lines,
  c.paused_at AS "pausedAt", c.resume_at AS "resumeAt", c.cancelled_at AS "cancelledAt",
  c.cancellation_reason AS "cancellationReason", c.created_at AS "createdAt", c.updated_at AS "updatedAt", c.version`;

/** An API key's row as authentication needs it: what never changes (ids) and what decides access now. */
export type KeyRow = { keyId: string; shopId: string; revokedAt: Date | null; lastUsedAt: Date | null; plan: string };
/** A key's access state, and the contract it asked for (null: none of the key's shop has that id). */
export type ContractAsKeyRow = { revokedAt: Date | null; plan: string; contract: ContractRow | null };

const KEYS_BY_DIGEST = `
  SELECT q.ord::int AS ord, k.id::text AS "keyId", k.shop_id::text AS "shopId", k.revoked_at AS "revokedAt",
         k.last_used_at AS "lastUsedAt", s.plan
    FROM unnest($1::text[]) WITH ORDINALITY AS q(digest, ord)
    JOIN api_keys k ON k.digest = q.digest
    JOIN shops s ON s.id = k.shop_id`;

const KEY_STATES = `
  SELECT q.ord::int AS ord, k.revoked_at AS "revokedAt", s.plan
    FROM unnest($1::uuid[]) WITH ORDINALITY AS q(key_id, ord)
    JOIN api_keys k ON k.id = q.key_id
    JOIN shops s ON s.id = k.shop_id`;

// The key's state and the contract in one statement: a request authenticates and reads in one round trip. The
// contract is joined by its primary key alone (a plan that cannot go wrong, statistics or not) and counts only if
// it belongs to the key's own shop (checked in contractOf), so a key can never read another shop's contract.
const CONTRACTS_AS_KEYS = `
  SELECT q.ord::int AS ord, k.revoked_at AS "revokedAt", s.plan, k.shop_id::text AS "keyShopId", ${CONTRACT_COLUMNS}
    FROM unnest($1::uuid[], $2::bigint[]) WITH ORDINALITY AS q(key_id, contract_id, ord)
    JOIN api_keys k ON k.id = q.key_id
    JOIN shops s ON s.id = k.shop_id
    LEFT JOIN subscription_contracts c ON c.id = q.contract_id`;

const CONTRACTS_OF_SHOPS = `
  SELECT q.ord::int AS ord, ${CONTRACT_COLUMNS}
    FROM unnest($1::bigint[], $2::bigint[]) WITH ORDINALITY AS q(shop_id, contract_id, ord)
    JOIN subscription_contracts c ON c.id = q.contract_id AND c.shop_id = q.shop_id`;

// Each input: a contract's new state and the version it was computed from; each event names its input by `ord`. A
// contract is written only if it still has that version and no other writer holds it (SKIP LOCKED: this statement
// never waits on a lock, so it runs in microseconds and a caller that vanished cannot have its action applied long
// after; a skipped caller retries under a row lock). The state and its events commit together, for every input at
// once. Inputs travel as parallel arrays (unnest): the planner then expects a handful of rows and reaches each
// contract by its primary key, with or without table statistics.
const COMMIT_IF_UNCHANGED = `
  WITH input AS (
    -- One write per contract: a second caller's write to the same contract in the same batch matches no row and
    -- retries under a lock, after this one (never two writes computed from one version).
    SELECT DISTINCT ON (id) *
      FROM unnest($1::int[], $2::bigint[], $3::int[], $4::text[], $5::timestamptz[], $6::timestamptz[],
                  $7::timestamptz[], $8::timestamptz[], $9::text[], $10::timestamptz[])
           AS x(ord, id, version, status, next_billing_date, paused_at, resume_at, cancelled_at, cancellation_reason, updated_at)
     ORDER BY id, ord
  ), locked AS (
    -- Per input, by primary key (a locking subquery is never flattened into a join).
    SELECT c.id FROM input i CROSS JOIN LATERAL (
      SELECT id FROM subscription_contracts WHERE id = i.id AND version = i.version FOR UPDATE SKIP LOCKED
    ) c
  ), updated AS (
    UPDATE subscription_contracts c
       SET status = i.status, next_billing_date = i.next_billing_date, paused_at = i.paused_at,
           resume_at = i.resume_at, cancelled_at = i.cancelled_at, cancellation_reason = i.cancellation_reason,
           updated_at = i.updated_at, version = c.version + 1
      FROM input i JOIN locked l ON l.id = i.id
     WHERE c.id = i.id
    RETURNING c.id, c.shop_id, c.version
  ), inserted AS (
    INSERT INTO contract_events (contract_id, shop_id, type, at, actor_type, actor_key_fingerprint, from_status, to_status, data)
    SELECT u.id, u.shop_id, e.type, e.at, e.actor_type, e.actor_key_fingerprint, e.from_status, e.to_status, e.data
      FROM unnest($11::int[], $12::text[], $13::timestamptz[], $14::text[], $15::text[], $16::text[], $17::text[], $18::jsonb[])
           WITH ORDINALITY AS e(input_ord, type, at, actor_type, actor_key_fingerprint, from_status, to_status, data, n)
      JOIN input i ON i.ord = e.input_ord
      JOIN updated u ON u.id = i.id
     ORDER BY e.n
  ), completed AS (
    -- The response of a request that came with an Idempotency-Key, kept in the same commit as its effect.
    UPDATE idempotency_keys k
       SET state = 'completed', status_code = 200, response_body = r.body
      FROM unnest($19::int[], $20::text[], $21::text[], $22::text[]) AS r(input_ord, key_digest, owner_request_id, body)
      JOIN input i ON i.ord = r.input_ord
      JOIN updated u ON u.id = i.id
     WHERE k.shop_id = u.shop_id AND k.key_digest = r.key_digest AND k.owner_request_id = r.owner_request_id
       AND k.state = 'in_progress'
  )
  SELECT i.ord, u.version FROM updated u JOIN input i ON i.id = u.id`;

/** A planned write: the contract as read (id, version), its new state and its events, in the columns' names. */
export type CommitInput = {
  id: string;
  version: number;
  state: {
    status: string;
    nextBillingDate: Date;
    pausedAt: Date | null;
    resumeAt: Date | null;
    cancelledAt: Date | null;
    cancellationReason: string | null;
  };
  updatedAt: Date;
  events: {
    type: string;
    at: Date;
    actorType: string;
    actorKeyFingerprint: string | null;
    fromStatus: string;
    toStatus: string;
    data: unknown;
  }[];
  /** The 200 response to record for the Idempotency-Key this write answers, if it came with one. */
  response?: { keyDigest: string; requestId: string; body: string };
};

/** The Idempotency-Key responses of a commit batch, as four parallel arrays. */
function responseColumns(inputs: CommitInput[]): [number[], string[], string[], string[]] {
  const cols: [number[], string[], string[], string[]] = [[], [], [], []];
  inputs.forEach((c, i) => {
    if (!c.response) return;
    cols[0].push(i + 1);
    cols[1].push(c.response.keyDigest);
    cols[2].push(c.response.requestId);
    cols[3].push(c.response.body);
  });
  return cols;
}

/** Rows of a batch back in input order, by their `ord` (1-based); undefined where no row matched. */
function byOrd<T>(rows: (T & { ord: number })[], n: number): (T | undefined)[] {
  const out = new Array<T | undefined>(n);
  for (const r of rows) {
    const { ord, ...rest } = r;
    out[ord - 1] = rest as unknown as T;
  }
  return out;
}

/** The contract of a CONTRACTS_AS_KEYS row, if there is one and it is the key's shop's. */
function contractOf(row: Record<string, unknown>): ContractRow | null {
  if (row.id === null || row.shopId !== row.keyShopId) return null;
  const { revokedAt: _r, plan: _p, keyShopId: _k, ord: _o, ...contract } = row;
  return contract as unknown as ContractRow;
}

function createHotStatements(db: Database) {
  const opts = { failsEveryInput: isDatabaseUnavailable };
  return {
    keysByDigest: new Batcher<string, KeyRow | undefined>(async (digests) => {
      const rows = await db.prepared<KeyRow & { ord: number }>('svc_keys_by_digest', KEYS_BY_DIGEST, [digests]);
      return byOrd(rows, digests.length);
    }, opts),

    keyStates: new Batcher<string, { revokedAt: Date | null; plan: string } | undefined>(async (keyIds) => {
      const rows = await db.prepared<{ ord: number; revokedAt: Date | null; plan: string }>('svc_key_states', KEY_STATES, [keyIds]);
      return byOrd(rows, keyIds.length);
    }, opts),

    contractsAsKeys: new Batcher<{ keyId: string; contractId: string }, ContractAsKeyRow | undefined>(async (inputs) => {
      const rows = await db.prepared<Record<string, unknown> & { ord: number }>('svc_contracts_as_keys', CONTRACTS_AS_KEYS, [
        inputs.map((i) => i.keyId),
        inputs.map((i) => i.contractId),
      ]);
      const out = new Array<ContractAsKeyRow | undefined>(inputs.length);
      for (const r of rows) out[r.ord - 1] = { revokedAt: r.revokedAt as Date | null, plan: r.plan as string, contract: contractOf(r) };
      return out;
    }, opts),

    contractsOfShops: new Batcher<{ shopId: string; contractId: string }, ContractRow | undefined>(async (inputs) => {
      const rows = await db.prepared<ContractRow & { ord: number }>('svc_contracts_of_shops', CONTRACTS_OF_SHOPS, [
        inputs.map((i) => i.shopId),
        inputs.map((i) => i.contractId),
      ]);
      return byOrd(rows, inputs.length);
    }, opts),

    commitsIfUnchanged: new Batcher<CommitInput, number | null>(async (inputs) => {
      const columns = (f: (c: CommitInput) => unknown) => inputs.map(f);
      const events = inputs.flatMap((c, i) => c.events.map((e) => ({ ord: i + 1, ...e })));
      const eventColumns = (f: (e: (typeof events)[number]) => unknown) => events.map(f);
      const rows = await db.prepared<{ ord: number; version: number }>('svc_commit_if_unchanged', COMMIT_IF_UNCHANGED, [
        inputs.map((_, i) => i + 1),
        columns((c) => c.id),
        columns((c) => c.version),
        columns((c) => c.state.status),
        columns((c) => c.state.nextBillingDate),
        columns((c) => c.state.pausedAt),
        columns((c) => c.state.resumeAt),
        columns((c) => c.state.cancelledAt),
        columns((c) => c.state.cancellationReason),
        columns((c) => c.updatedAt),
        eventColumns((e) => e.ord),
        eventColumns((e) => e.type),
        eventColumns((e) => e.at),
        eventColumns((e) => e.actorType),
        eventColumns((e) => e.actorKeyFingerprint),
        eventColumns((e) => e.fromStatus),
        eventColumns((e) => e.toStatus),
        eventColumns((e) => JSON.stringify(e.data)),
        ...responseColumns(inputs),
      ]);
      const out = new Array<number | null>(inputs.length).fill(null);
      for (const r of rows) out[r.ord - 1] = Number(r.version);
      return out;
    }, opts),
  };
}

const perDatabase = new WeakMap<Database, ReturnType<typeof createHotStatements>>();

/** The hot statements of one database (one set of batches per connection pool). */
export function hotStatements(db: Database): ReturnType<typeof createHotStatements> {
  let s = perDatabase.get(db);
  if (!s) perDatabase.set(db, (s = createHotStatements(db)));
  return s;
}
