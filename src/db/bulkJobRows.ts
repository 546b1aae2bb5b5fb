import type { SQL } from 'drizzle-orm';
import { contracts } from './schema.js';
import type { BulkJobStatus, CurrencyTotals, ItemStatus } from '../domain/bulkJobs.js';
import type { ErrorDetail } from '../domain/errors.js';
import type { Database, RunSql } from './client.js';

/**
 * The rows of bulk jobs and their items (migration 0032), in raw SQL: claims under a lease with SKIP LOCKED, and
 * outcomes written in batches. A job's counts and totals are counted from its items in one statement (one snapshot:
 * they always add up to what it matched) until it ends, then kept on the job.
 */

export type BulkJobRow = {
  id: string;
  shopId: string;
  seq: string;
  status: BulkJobStatus;
  preview: boolean;
  selector: Record<string, unknown>;
  change: Record<string, unknown>;
  createdBy: { type: string; keyId?: string };
  matched: number;
  finalCounts: Counts | null;
  finalTotals: CurrencyTotals[] | null;
  failure: string | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  expiresAt: Date | null;
};

export type Counts = { pending: number; succeeded: number; failed: number; skipped: number };

const JOB_COLUMNS = `j.id::text AS id, j.shop_id::text AS "shopId", j.seq::text AS seq, j.status, j.preview, j.selector, j.change,
  j.created_by AS "createdBy", j.matched, j.final_counts AS "finalCounts", j.final_totals AS "finalTotals", j.failure,
  j.created_at AS "createdAt", j.started_at AS "startedAt", j.finished_at AS "finishedAt", j.expires_at AS "expiresAt"`;

export async function insertJob(
  run: RunSql,
  job: { shopId: string; status: BulkJobStatus; preview: boolean; selector: unknown; change: unknown; createdBy: unknown; matched: number; now: Date },
): Promise<BulkJobRow> {
  const [row] = await run<BulkJobRow>(
    `INSERT INTO bulk_jobs AS j (shop_id, status, preview, selector, change, created_by, matched, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${JOB_COLUMNS}`,
    [job.shopId, job.status, job.preview, JSON.stringify(job.selector), JSON.stringify(job.change), JSON.stringify(job.createdBy), job.matched, job.now],
  );
  return row;
}

export async function jobRow(run: RunSql, shopId: string, jobId: string, opts: { lock?: boolean } = {}): Promise<BulkJobRow | null> {
  const [row] = await run<BulkJobRow>(`SELECT ${JOB_COLUMNS} FROM bulk_jobs j WHERE j.id = $1 AND j.shop_id = $2${opts.lock ? ' FOR UPDATE' : ''}`, [jobId, shopId]);
  return row ?? null;
}

/** A shop's jobs, newest first, after the cursor's `seq`, optionally of some statuses. */
export async function jobRows(run: RunSql, shopId: string, opts: { before: string | null; statuses: BulkJobStatus[] | null; limit: number }): Promise<BulkJobRow[]> {
  return run<BulkJobRow>(
    `SELECT ${JOB_COLUMNS} FROM bulk_jobs j
      WHERE j.shop_id = $1 AND ($2::bigint IS NULL OR j.seq < $2) AND ($3::text[] IS NULL OR j.status = ANY ($3))
      ORDER BY j.seq DESC LIMIT $4`,
    [shopId, opts.before, opts.statuses, opts.limit],
  );
}

/** How many jobs of a shop have not ended (under the shop's row lock, so two creations cannot both take the tenth). */
export async function unfinishedJobs(run: RunSql, shopId: string): Promise<number> {
  await run(`SELECT 1 FROM shops WHERE id = $1 FOR UPDATE`, [shopId]);
  const [{ n }] = await run<{ n: number }>(
    `SELECT count(*)::int AS n FROM bulk_jobs WHERE shop_id = $1 AND status IN ('previewing', 'previewed', 'queued', 'running')`,
    [shopId],
  );
  return n;
}

/**
 * The items of a job by contract id: those of the shop pending, the others already failed with not_found (another
 * shop's contract is indistinguishable from a missing one). Answers how many.
 */
export async function insertItemsByIds(run: RunSql, jobId: string, shopId: string, ids: string[]): Promise<number> {
  const rows = await run<{ n: number }>(
    `WITH ids AS (SELECT DISTINCT unnest($3::bigint[]) AS id), ins AS (
       INSERT INTO bulk_job_items (job_id, contract_id, status, error_code, error_message)
       SELECT $1, ids.id,
              CASE WHEN c.id IS NULL THEN 'failed' ELSE 'pending' END,
              CASE WHEN c.id IS NULL THEN 'not_found' END,
              CASE WHEN c.id IS NULL THEN 'No subscription contract with this id exists for this shop.' END
         FROM ids LEFT JOIN subscription_contracts c ON c.id = ids.id AND c.shop_id = $2
       RETURNING 1)
     SELECT count(*)::int AS n FROM ins`,
    [jobId, shopId, ids],
  );
  return rows[0].n;
}

/**
 * The items of a job by filter (a condition of the query builder over subscription_contracts, db/contractFilterSql.ts),
 * at most `limit`: answers how many were inserted (more than the limit allows means the job must not be made).
 */
export async function insertItemsByFilter(db: Database, run: RunSql, jobId: string, where: SQL, limit: number): Promise<number> {
  const select = db.orm.select({ id: contracts.id }).from(contracts).where(where).orderBy(contracts.id).limit(limit).toSQL();
  const [{ n }] = await run<{ n: number }>(
    `WITH ins AS (INSERT INTO bulk_job_items (job_id, contract_id) SELECT $${select.params.length + 1}::uuid, s.id FROM (${select.sql}) s RETURNING 1)
     SELECT count(*)::int AS n FROM ins`,
    [...select.params, jobId],
  );
  return n;
}

/** Counts and totals of a job from its items, in one snapshot. */
export async function countItems(run: RunSql, jobId: string): Promise<{ counts: Counts; totals: { currencyCode: string; before: string; after: string }[] }> {
  const rows = await run<{ status: ItemStatus; currency: string | null; n: number; before: string | null; after: string | null }>(
    `SELECT status, CASE WHEN status = 'succeeded' THEN currency_code END AS currency, count(*)::int AS n,
            sum(total_before) FILTER (WHERE status = 'succeeded')::text AS before, sum(total_after) FILTER (WHERE status = 'succeeded')::text AS after
       FROM bulk_job_items WHERE job_id = $1 GROUP BY 1, 2`,
    [jobId],
  );
  const counts: Counts = { pending: 0, succeeded: 0, failed: 0, skipped: 0 };
  const totals: { currencyCode: string; before: string; after: string }[] = [];
  for (const r of rows) {
    counts[r.status] += r.n;
    if (r.status === 'succeeded' && r.currency && r.before !== null && r.after !== null) totals.push({ currencyCode: r.currency, before: r.before, after: r.after });
  }
  return { counts, totals };
}

/**
 * Takes up to `limit` of a job's pending items that no live lease holds and whose wait is over, in contract order,
 * leasing them until `until` (SKIP LOCKED: items another instance is taking are left to it). Answers their contracts,
 * each with whether it has waited before (its contract was being billed).
 */
export async function claimItems(db: Database, jobId: string, opts: { now: Date; until: Date; limit: number }): Promise<{ id: string; waited: boolean }[]> {
  const rows = await db.unprepared<{ id: string; waited: boolean }>(
    // The items chosen once, in a materialized CTE: as a subquery the planner may scan them again for each row it
    // updates, each scan finding the next unleased ones, and the claim took the whole job whatever the limit.
    `WITH x AS MATERIALIZED (
       SELECT contract_id FROM bulk_job_items
        WHERE job_id = $1 AND status = 'pending' AND (lease_until IS NULL OR lease_until <= $2) AND (not_before IS NULL OR not_before <= $2)
        ORDER BY contract_id LIMIT $4 FOR UPDATE SKIP LOCKED)
     UPDATE bulk_job_items b SET lease_until = $3
       FROM x
      WHERE b.job_id = $1 AND b.contract_id = x.contract_id
      RETURNING b.contract_id::text AS id, b.not_before IS NOT NULL AS waited`,
    [jobId, opts.now, opts.until, opts.limit],
  );
  return rows.sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1));
}

/**
 * Whether the job has a pending item besides `except` (leased or waiting ones included). Stops at the first: the
 * claimed items come first in contract order, so it reads at most a batch's worth of rows however large the job.
 */
export async function hasPendingBesides(run: RunSql, jobId: string, except: string[]): Promise<boolean> {
  const [row] = await run<{ any: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM bulk_job_items WHERE job_id = $1 AND status = 'pending' AND contract_id <> ALL ($2::bigint[])) AS any`,
    [jobId, except],
  );
  return row.any;
}

/** The items of `ids` still pending and leased until `until` by this claim, locked for this transaction. */
export async function lockClaimedItems(run: RunSql, jobId: string, ids: string[], until: Date): Promise<Set<string>> {
  const rows = await run<{ id: string }>(
    `SELECT contract_id::text AS id FROM bulk_job_items
      WHERE job_id = $1 AND contract_id = ANY ($2::bigint[]) AND status = 'pending' AND lease_until = $3
      ORDER BY contract_id FOR UPDATE`,
    [jobId, ids, until],
  );
  return new Set(rows.map((r) => r.id));
}

/** An item's outcome that is not a committed change: failed, skipped, decided in a preview, or put back to wait. */
export type ItemOutcome =
  | { contractId: string; status: 'failed' | 'skipped'; code: string; message: string; details?: ErrorDetail[] }
  | { contractId: string; status: 'succeeded'; totals: { currencyCode: string; before: string; after: string } }
  | { contractId: string; status: 'pending'; notBefore: Date | null };

/** Writes outcomes of items still pending (an item done meanwhile is left as it is). */
export async function recordOutcomes(run: RunSql, jobId: string, outcomes: ItemOutcome[]): Promise<void> {
  if (!outcomes.length) return;
  const col = <T>(f: (o: ItemOutcome) => T) => outcomes.map(f);
  await run(
    `UPDATE bulk_job_items b
        SET status = o.status, error_code = o.code, error_message = o.message, error_details = o.details,
            currency_code = o.currency, total_before = o.before, total_after = o.after,
            lease_until = NULL, not_before = o.not_before
       FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], $6::jsonb[], $7::text[], $8::numeric[], $9::numeric[], $10::timestamptz[])
            AS o(contract_id, status, code, message, details, currency, before, after, not_before)
      WHERE b.job_id = $1 AND b.contract_id = o.contract_id AND b.status = 'pending'`,
    [
      jobId,
      col((o) => o.contractId),
      col((o) => o.status),
      col((o) => (o.status === 'failed' || o.status === 'skipped' ? o.code : null)),
      col((o) => (o.status === 'failed' || o.status === 'skipped' ? o.message : null)),
      col((o) => (o.status === 'failed' || o.status === 'skipped' ? (o.details ? JSON.stringify(o.details) : null) : null)),
      col((o) => (o.status === 'succeeded' ? o.totals.currencyCode : null)),
      col((o) => (o.status === 'succeeded' ? o.totals.before : null)),
      col((o) => (o.status === 'succeeded' ? o.totals.after : null)),
      col((o) => (o.status === 'pending' ? o.notBefore : null)),
    ],
  );
}

/** Leases given back (items left for later: their contract was held by another writer). */
export async function releaseItems(run: RunSql, jobId: string, ids: string[]): Promise<void> {
  if (ids.length) await run(`UPDATE bulk_job_items SET lease_until = NULL WHERE job_id = $1 AND contract_id = ANY ($2::bigint[]) AND status = 'pending'`, [jobId, ids]);
}

/** Items of the job still pending and not held by a live lease become skipped with `code` (cancel, a failed job). */
export async function skipPending(run: RunSql, jobId: string, now: Date, code: string, message: string): Promise<number> {
  const rows = await run<{ n: number }>(
    `WITH s AS (UPDATE bulk_job_items SET status = 'skipped', error_code = $3, error_message = $4, lease_until = NULL, not_before = NULL
                 WHERE job_id = $1 AND status = 'pending' AND (lease_until IS NULL OR lease_until <= $2) RETURNING 1)
     SELECT count(*)::int AS n FROM s`,
    [jobId, now, code, message],
  );
  return rows[0].n;
}

/** Every item of a previewed job pending again, its preview's outcome cleared: the run decides each again. */
export async function resetItems(run: RunSql, jobId: string): Promise<void> {
  await run(
    `UPDATE bulk_job_items SET status = 'pending', error_code = NULL, error_message = NULL, error_details = NULL, currency_code = NULL,
            total_before = NULL, total_after = NULL, lease_until = NULL, not_before = NULL
      WHERE job_id = $1 AND NOT (status = 'failed' AND error_code = 'not_found')`,
    [jobId],
  );
}

export type ItemRow = {
  contractId: string;
  status: ItemStatus;
  errorCode: string | null;
  errorMessage: string | null;
  errorDetails: ErrorDetail[] | null;
  currencyCode: string | null;
  totalBefore: string | null;
  totalAfter: string | null;
  eventId: string | null;
};

/** A page of a job's items in contract order, after `after`, optionally of one status. */
export async function itemRows(run: RunSql, jobId: string, opts: { after: string | null; status: ItemStatus | null; limit: number }): Promise<ItemRow[]> {
  return run<ItemRow>(
    `SELECT contract_id::text AS "contractId", status, error_code AS "errorCode", error_message AS "errorMessage", error_details AS "errorDetails",
            currency_code AS "currencyCode", total_before::text AS "totalBefore", total_after::text AS "totalAfter", event_id::text AS "eventId"
       FROM bulk_job_items
      WHERE job_id = $1 AND ($2::bigint IS NULL OR contract_id > $2) AND ($3::text IS NULL OR status = $3)
      ORDER BY contract_id LIMIT $4`,
    [jobId, opts.after, opts.status, opts.limit],
  );
}

/** Sets a job's status (and when it started, ended, expires), from one of `from`; answers whether it did. */
export async function moveJob(
  run: RunSql,
  jobId: string,
  from: readonly BulkJobStatus[],
  to: BulkJobStatus,
  fields: { startedAt?: Date; finishedAt?: Date; expiresAt?: Date | null; counts?: Counts; totals?: CurrencyTotals[]; failure?: string } = {},
): Promise<boolean> {
  const rows = await run<{ id: string }>(
    `UPDATE bulk_jobs SET status = $3,
            started_at = coalesce($4, started_at), finished_at = coalesce($5, finished_at),
            expires_at = CASE WHEN $6::boolean THEN $7 ELSE expires_at END,
            final_counts = coalesce($8, final_counts), final_totals = coalesce($9, final_totals), failure = coalesce($10, failure)
      WHERE id = $1 AND status = ANY ($2::text[]) RETURNING id::text AS id`,
    [
      jobId,
      from,
      to,
      fields.startedAt ?? null,
      fields.finishedAt ?? null,
      fields.expiresAt !== undefined,
      fields.expiresAt ?? null,
      fields.counts ? JSON.stringify(fields.counts) : null,
      fields.totals ? JSON.stringify(fields.totals) : null,
      fields.failure ?? null,
    ],
  );
  return rows.length > 0;
}

/**
 * Queues a webhook of a job to every enabled endpoint of its shop that takes the event (bulk_job.previewed,
 * bulk_job.finished), in the caller's transaction: `{ bulkJob }` as the event's data, sent like api_key.leaked's.
 */
export async function queueJobEvent(run: RunSql, shopId: string, type: string, data: unknown, now: Date): Promise<void> {
  await run(
    `INSERT INTO webhook_deliveries (endpoint_id, shop_id, type, contract, next_attempt_at, created_at)
     SELECT w.id, $1, $2, $3::json, $4, $4 FROM webhook_endpoints w
      WHERE w.shop_id = $1 AND w.status = 'enabled' AND (w.events = '{*}' OR $2 = ANY (w.events))`,
    [shopId, type, JSON.stringify(data), now],
  );
}

/** Jobs that have work for a worker: previewing or running ones (oldest first), and queued ones that may start. */
export async function jobsWithWork(run: RunSql, limit: number): Promise<BulkJobRow[]> {
  return run<BulkJobRow>(
    `SELECT ${JOB_COLUMNS} FROM bulk_jobs j
      WHERE j.status IN ('previewing', 'running') ORDER BY j.seq LIMIT $1`,
    [limit],
  );
}

/**
 * Starts the oldest queued job of every shop with no job running (one runs per shop at a time, in order): answers
 * the jobs it started. Under each shop's row lock, so two instances cannot start two of one shop's jobs.
 */
export async function startQueued(run: RunSql, now: Date): Promise<BulkJobRow[]> {
  return run<BulkJobRow>(
    `WITH shops_ready AS (
       SELECT s.id FROM shops s
        WHERE s.id IN (SELECT DISTINCT shop_id FROM bulk_jobs WHERE status = 'queued')
          AND NOT EXISTS (SELECT 1 FROM bulk_jobs r WHERE r.shop_id = s.id AND r.status = 'running')
        FOR UPDATE SKIP LOCKED
     ), next AS (
       SELECT DISTINCT ON (q.shop_id) q.id FROM bulk_jobs q JOIN shops_ready r ON r.id = q.shop_id
        WHERE q.status = 'queued' ORDER BY q.shop_id, q.seq
     )
     UPDATE bulk_jobs j SET status = 'running', started_at = coalesce(j.started_at, $1)
       FROM next WHERE j.id = next.id AND j.status = 'queued'
     RETURNING ${JOB_COLUMNS}`,
    [now],
  );
}

/** Previewed jobs not started in time, now expired: answers them. */
export async function expirePreviews(run: RunSql, now: Date): Promise<BulkJobRow[]> {
  return run<BulkJobRow>(
    `UPDATE bulk_jobs j SET status = 'expired', finished_at = $1 WHERE j.status = 'previewed' AND j.expires_at <= $1 RETURNING ${JOB_COLUMNS}`,
    [now],
  );
}

/** Jobs that ended more than the retention ago, deleted with their items: how many. */
export async function purgeJobs(run: RunSql, before: Date, limit: number): Promise<number> {
  const rows = await run<{ n: number }>(
    `WITH d AS (DELETE FROM bulk_jobs WHERE id IN (
        SELECT id FROM bulk_jobs WHERE finished_at < $1 AND status IN ('completed', 'cancelled', 'failed', 'expired') LIMIT $2) RETURNING 1)
     SELECT count(*)::int AS n FROM d`,
    [before, limit],
  );
  return rows[0].n;
}
