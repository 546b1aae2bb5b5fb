import type { AttemptState, BillingPolicy } from '../domain/billing.js';
import { Batcher, perDatabase } from './batcher.js';
import { isDatabaseUnavailable, type Database, type RunSql } from './client.js';
import { byOrd } from './contractRows.js';
import { CONTRACT_COLUMNS } from './contractColumns.js';
import type { ContractRow } from './schema.js';

/**
 * What renewals read and write besides the change path: the worker's claim of due contracts, an attempt with its
 * contract and the shop's policy (for an outcome), the attempts still to hand over, and their references. Raw SQL,
 * batched over concurrent callers where a storm calls them once per attempt.
 */

/** An attempt's contract, as the change path takes it, with the shop's policy (null: the default). */
export type AttemptWithContract = { attemptId: string; attemptStatus: AttemptState['status']; policy: BillingPolicy | null; contract: ContractRow };

const ATTEMPTS_WITH_CONTRACTS = `
  SELECT q.ord::int AS ord, a.id::text AS "attemptId", a.status AS "attemptStatus", p.policy, ${CONTRACT_COLUMNS}
    FROM unnest($1::bigint[], $2::uuid[]) WITH ORDINALITY AS q(shop_id, attempt_id, ord)
    CROSS JOIN LATERAL (SELECT b.id, b.status, b.contract_id FROM billing_attempts b WHERE b.id = q.attempt_id AND b.shop_id = q.shop_id) a
    JOIN subscription_contracts c ON c.id = a.contract_id
    LEFT JOIN billing_policies p ON p.shop_id = q.shop_id`;

/** The attempts (by id, in their shop) with their contracts, batched. */
export const attemptRows = perDatabase(
  (db: Database) =>
    new Batcher<{ shopId: string; attemptId: string }, AttemptWithContract | undefined>(
      async (inputs) => {
        const rows = await db.prepared<Record<string, unknown> & { ord: number }>('svc_billing_attempts_with_contracts', ATTEMPTS_WITH_CONTRACTS, [
          inputs.map((i) => i.shopId),
          inputs.map((i) => i.attemptId),
        ]);
        return byOrd(rows, inputs.length).map((r) =>
          r ? { attemptId: r.attemptId as string, attemptStatus: r.attemptStatus as AttemptState['status'], policy: (r.policy as BillingPolicy | null) ?? null, contract: r as unknown as ContractRow } : undefined,
        );
      },
      { failsEveryInput: isDatabaseUnavailable },
    ),
);

/**
 * The due contracts a worker may take (`columns` of them), oldest first, $1 now, $2 the limit, $3 a shop or null:
 * not claimed by another worker (or claimed for an older version), not of a shop that uninstalled the app, and not a
 * row another transaction holds.
 */
const DUE = (columns: string, extra = '') => `
  SELECT ${columns}
    FROM subscription_contracts c
   WHERE c.billing_due_at <= $1
     AND (c.billing_claimed_until IS NULL OR c.billing_claimed_until <= $1 OR c.billing_claimed_version <> c.version)
     AND ($3::bigint IS NULL OR c.shop_id = $3)${extra}
     AND NOT EXISTS (SELECT 1 FROM shops s WHERE s.id = c.shop_id AND s.uninstalled_at IS NOT NULL)
   ORDER BY c.billing_due_at
   LIMIT $2
     FOR UPDATE OF c SKIP LOCKED`;

const CLAIM_DUE = `
  WITH due AS (${DUE('c.id')})
  UPDATE subscription_contracts c SET billing_claimed_until = $4, billing_claimed_version = c.version FROM due WHERE c.id = due.id
  RETURNING ${CONTRACT_COLUMNS}`;

/**
 * Claims up to `limit` contracts due by `now` (oldest first) for `until`, in one statement: a contract another
 * worker holds or has claimed is skipped, so concurrent workers share a storm instead of all planning the same
 * contracts. A claim holds until `until` or the contract's next change, whichever comes first (a retry due soon
 * after the outcome is not kept waiting). The claim only spreads the work: that a cycle is billed once is the change path's version check and
 * the attempts' unique key. Never a contract of a shop that uninstalled the app.
 */
export async function claimDueContracts(db: Database, a: { now: Date; until: Date; limit: number; shopId?: string }): Promise<ContractRow[]> {
  return db.prepared<ContractRow>('svc_billing_claim_due', CLAIM_DUE, [a.now, a.limit, a.shopId ?? null, a.until]);
}

const LOCK_DUE = DUE(CONTRACT_COLUMNS, `
     AND c.id <> ALL ($4::bigint[])`);

/**
 * Standalone mode's take of due contracts: up to `limit` of them (oldest first) locked for the caller's transaction,
 * skipping rows another transaction holds or a worker billing contract by contract has claimed (a batch that failed
 * is billed so: workers/billing.ts), and those in `except`. No claim is written: the transaction that locks them also
 * bills them.
 */
export async function lockDueContracts(run: RunSql, a: { now: Date; limit: number; shopId?: string; except?: string[] }): Promise<ContractRow[]> {
  const rows = await run<ContractRow>(LOCK_DUE, [a.now, a.limit, a.shopId ?? null, a.except ?? []], { name: 'svc_billing_lock_due' });
  for (const r of rows) r.version = Number(r.version);
  return rows;
}

/** An attempt to hand over (again) to the gateway. */
export type UnsubmittedAttempt = { id: string; shopId: string; contractId: string; cycleDate: Date; attempt: number; idempotencyKey: string; amount: string; currencyCode: string };

const UNSUBMITTED = `
  SELECT b.id::text, b.shop_id::text AS "shopId", b.contract_id::text AS "contractId", b.cycle_date AS "cycleDate", b.attempt,
         b.idempotency_key AS "idempotencyKey", b.amount::text AS amount, b.currency_code AS "currencyCode"
    FROM billing_attempts b
    JOIN shops s ON s.id = b.shop_id AND s.uninstalled_at IS NULL
   WHERE b.status = 'pending' AND b.created_at <= $1
     AND (b.submitted_at IS NULL OR b.submitted_at <= $2)
   ORDER BY b.created_at
   LIMIT $3`;

/**
 * Pending attempts created before `createdBefore` that were never handed over (a crash between the commit and the
 * gateway's answer) or whose outcome has not come since `submittedBefore`: the gateway is asked again, with the same
 * idempotency key.
 */
export function unsubmittedAttempts(db: Database, a: { createdBefore: Date; submittedBefore: Date; limit: number }): Promise<UnsubmittedAttempt[]> {
  return db.prepared<UnsubmittedAttempt>('svc_billing_unsubmitted', UNSUBMITTED, [a.createdBefore, a.submittedBefore, a.limit]);
}

const MARK_SUBMITTED = `
  UPDATE billing_attempts b SET submitted_at = $3, platform_reference = coalesce(q.reference, b.platform_reference)
    FROM unnest($1::uuid[], $2::text[]) AS q(id, reference)
   WHERE b.id = q.id`;

/** Records that attempts were handed over, with the references the gateway answered (batched). */
export const submittedAttempts = perDatabase(
  (db: Database) =>
    new Batcher<{ id: string; reference: string | null; at: Date }, void>(
      async (inputs) => {
        // Planned at each run: the attempts table grows by thousands a second during a billing storm, and the plan
        // PostgreSQL kept for a prepared statement, made while it was small, read every attempt to update fifty,
        // with or without the ids also given as `= ANY`.
        await db.unprepared(MARK_SUBMITTED, [inputs.map((i) => i.id), inputs.map((i) => i.reference), inputs[0].at]);
        return inputs.map(() => undefined);
      },
      { failsEveryInput: isDatabaseUnavailable, maxBatch: 500 },
    ),
);

/** A contract's attempt that succeeded: what started it, when its payment succeeded, and the order's name. */
export type SucceededAttempt = { trigger: AttemptState['trigger']; at: Date; orderName: string | null };

const LAST_SUCCEEDED = `
  SELECT b.trigger, coalesce(b.completed_at, b.created_at) AS at, b."order" ->> 'name' AS "orderName"
    FROM billing_attempts b
   WHERE b.contract_id = $1 AND b.shop_id = $2 AND b.status = 'succeeded' AND ($3::text IS NULL OR b.trigger = $3)
   ORDER BY coalesce(b.completed_at, b.created_at) DESC
   LIMIT 1`;

/**
 * The contract's latest attempt that succeeded (of one trigger, when given), by when its payment succeeded: when the
 * contract last billed, and bill_now's guard against a retried request.
 */
export async function lastSucceededAttempt(
  db: Database,
  a: { shopId: string; contractId: string; trigger?: AttemptState['trigger'] },
): Promise<SucceededAttempt | null> {
  const [row] = await db.prepared<SucceededAttempt>('svc_billing_last_succeeded', LAST_SUCCEEDED, [a.contractId, a.shopId, a.trigger ?? null]);
  return row ? { trigger: row.trigger, at: new Date(row.at), orderName: row.orderName } : null;
}
