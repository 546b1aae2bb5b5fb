import { z } from 'zod';
import { matching } from '../db/contractFilterSql.js';
import {
  countItems,
  insertItemsByFilter,
  insertItemsByIds,
  insertJob,
  jobRow,
  moveJob,
  queueJobEvent,
  resetItems,
  skipPending,
  unfinishedJobs,
  type BulkJobRow,
} from '../db/bulkJobRows.js';
import type { RunSql } from '../db/client.js';
import { ACTION_BODIES } from '../domain/actions.js';
import {
  BULK_ACTION_NAMES,
  BulkChange,
  BulkEdit,
  isUnfinished,
  MAX_BULK_CONTRACTS,
  MAX_UNFINISHED_JOBS,
  PREVIEW_TTL_MS,
  Selector,
  sumTotals,
  type BulkActionName,
  type BulkChange as BulkChangeValue,
  type BulkJobStatus,
} from '../domain/bulkJobs.js';
import { checkCommand } from '../domain/commands/plan.js';
import type { Command } from '../domain/commands/registry.js';
import { criteriaOf } from '../domain/contractFilter.js';
import { invalidInput, invalidRequest, issuesToDetails, parseInput, ServiceError } from '../domain/errors.js';
import { bulkChangeNeeds } from '../domain/operations.js';
import { assertAllows } from '../domain/permissions.js';
import { isoString } from '../domain/time.js';
import type { ServiceContext } from './context.js';
import type { ShopPrincipal } from './principal.js';

/**
 * Bulk jobs (docs/product.md §15): made (their contracts fixed as items, one transaction), started, cancelled. The
 * items are run by the bulk-job worker (workers/bulkJobs.ts) through the command runner.
 */

export const CreateBulkJobBody = z
  .strictObject({
    selector: Selector,
    change: BulkChange,
    preview: z.boolean().optional().describe('true: decide every contract and change nothing; start it afterwards to run that same change on the same contracts.'),
  })
  .meta({ id: 'BulkJobCreate' });

export type BulkJob = {
  id: string;
  status: BulkJobStatus;
  preview: boolean;
  selector: unknown;
  change: unknown;
  counts: { matched: number; pending: number; succeeded: number; failed: number; skipped: number };
  totals: { currencyCode: string; before: string; after: string }[];
  createdBy: { type: string; keyId?: string };
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  expiresAt: string | null;
  error: { code: string; message: string } | null;
};

/** A job as clients see it: counts and totals as kept when it ended, else counted now from its items. */
export async function toBulkJob(run: RunSql, row: BulkJobRow): Promise<BulkJob> {
  const settled = row.finalCounts && row.finalTotals ? { counts: row.finalCounts, totals: row.finalTotals } : null;
  const live = settled ?? (await countItems(run, row.id));
  return {
    id: row.id,
    status: row.status,
    preview: row.preview,
    selector: row.selector,
    change: row.change,
    counts: { matched: row.matched, pending: live.counts.pending, succeeded: live.counts.succeeded, failed: live.counts.failed, skipped: live.counts.skipped },
    totals: (settled ? row.finalTotals! : sumTotals(live.totals)).map((t) => ({ currencyCode: t.currencyCode, before: t.before, after: t.after })),
    createdBy: row.createdBy,
    createdAt: isoString(row.createdAt),
    startedAt: row.startedAt ? isoString(row.startedAt) : null,
    finishedAt: row.finishedAt ? isoString(row.finishedAt) : null,
    expiresAt: row.expiresAt ? isoString(row.expiresAt) : null,
    error: row.failure ? { code: 'app_not_installed', message: row.failure } : null,
  };
}

/**
 * A change as a job keeps it: an action's fields validated by the action's own rules (bill_now is refused: a job
 * never charges customers), with the checks that need the time (a resumeAt in the future); an edit's operations by
 * their bulk schemas (lines named by variant).
 */
function changeOf(raw: unknown, now: Date): BulkChangeValue {
  const path = (p: string) => [{ path: p, message: 'required' }];
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw invalidRequest('Invalid request: change must be an action body ({ "action": … }) or edit operations ({ "operations": […] }).', path('change'));
  }
  if (Object.hasOwn(raw, 'operations')) {
    const parsed = BulkEdit.safeParse(raw);
    if (!parsed.success) throw invalidInput(issuesToDetails(parsed.error.issues, ['change']));
    return parsed.data as BulkChangeValue;
  }
  const action = (raw as { action?: unknown }).action;
  if (action === 'bill_now') {
    throw new ServiceError('invalid_request', 'bill_now cannot run as a bulk job: a bulk job never charges customers. Bill contracts one by one.', {
      details: [{ path: 'change.action', message: 'bill_now is not allowed in a bulk job' }],
    });
  }
  if (typeof action !== 'string') throw invalidRequest('Invalid request: change.action is required (or change.operations).', path('change.action'));
  if (!(BULK_ACTION_NAMES as readonly string[]).includes(action)) {
    throw new ServiceError('unsupported_action', `Unsupported action "${action.slice(0, 40)}" for a bulk job. Supported: ${BULK_ACTION_NAMES.join(', ')}.`);
  }
  const parsed = ACTION_BODIES[action as BulkActionName].safeParse(raw);
  if (!parsed.success) throw invalidInput(issuesToDetails(parsed.error.issues, ['change']));
  const { action: _name, ...input } = parsed.data as Record<string, unknown>;
  checkCommand({ name: action, input } as Command, now);
  return parsed.data as BulkChangeValue;
}

/** The selector as a job shows it: a list of ids by its count (the ids are the job's results). */
const shownSelector = (s: z.infer<typeof Selector>) => ('contractIds' in s ? { contractIds: { count: s.contractIds.length } } : s);

/** Makes a job: its contracts fixed now (the snapshot), as a preview or queued to run. */
export async function createBulkJob(ctx: ServiceContext, principal: ShopPrincipal, body: unknown): Promise<BulkJob> {
  const now = ctx.clock.now();
  const parsed = parseInput(CreateBulkJobBody.extend({ change: z.unknown() }), body);
  const change = changeOf(parsed.change, now);
  const preview = parsed.preview === true;
  const createdBy = { type: principal.actor.type, ...(principal.keyId && { keyId: principal.keyId }) };
  const job = await ctx.db.transaction(async (run) => {
    if ((await unfinishedJobs(run, principal.shopId)) >= MAX_UNFINISHED_JOBS) {
      throw new ServiceError('too_many_jobs', `This shop already has ${MAX_UNFINISHED_JOBS} bulk jobs not yet finished: wait for one to end, or cancel one.`);
    }
    const job = await insertJob(run, {
      shopId: principal.shopId,
      status: preview ? 'previewing' : 'queued',
      preview,
      selector: shownSelector(parsed.selector),
      change,
      createdBy,
      matched: 0,
      now,
    });
    const matched =
      'contractIds' in parsed.selector
        ? await insertItemsByIds(run, job.id, principal.shopId, parsed.selector.contractIds)
        : await insertItemsByFilter(ctx.db, run, job.id, matching(principal.shopId, criteriaOf(parsed.selector.filter)), MAX_BULK_CONTRACTS + 1);
    if (matched > MAX_BULK_CONTRACTS) {
      throw new ServiceError('too_many_contracts', `The selector matches more than ${MAX_BULK_CONTRACTS.toLocaleString('en')} contracts: narrow the filter, or split the job.`);
    }
    await run(`UPDATE bulk_jobs SET matched = $2 WHERE id = $1`, [job.id, matched]);
    return toBulkJob(run, { ...job, matched });
  });
  ctx.onBulkJob?.();
  return job;
}

/** A job of the principal's shop, or 404 (another shop's is indistinguishable from a missing one). */
async function ownJob(run: RunSql, principal: ShopPrincipal, jobId: string, lock = false): Promise<BulkJobRow> {
  const row = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(jobId) ? await jobRow(run, principal.shopId, jobId, { lock }) : null;
  if (!row) throw new ServiceError('not_found', 'No bulk job with this id exists for this shop.');
  return row;
}

const notNow = (what: string, row: BulkJobRow, allowed: string) =>
  new ServiceError('invalid_state', `Cannot ${what} a bulk job that is ${row.status}; ${what} is allowed only from ${allowed}.`);

/** Starts a previewed job: the same change on the same contracts, each decided again at its turn. */
export async function startBulkJob(ctx: ServiceContext, principal: ShopPrincipal, jobId: string): Promise<BulkJob> {
  const job = await ctx.db.transaction(async (run) => {
    const row = await ownJob(run, principal, jobId, true);
    // What the job changes needs its write permission, as making it did.
    assertAllows(principal.permissions, bulkChangeNeeds(row.change), principal.who);
    if (row.status !== 'previewed') throw notNow('start', row, 'previewed');
    await resetItems(run, row.id);
    await run(`UPDATE bulk_jobs SET status = 'queued', expires_at = NULL, final_counts = NULL, final_totals = NULL WHERE id = $1`, [row.id]);
    return toBulkJob(run, { ...row, status: 'queued', expiresAt: null, finalCounts: null, finalTotals: null });
  });
  ctx.onBulkJob?.();
  return job;
}

/**
 * Cancels a job not yet ended (a preview too: discarding it): its items not yet done end skipped (job_cancelled),
 * those done stay done; an item a worker is carrying out now finishes or is skipped by that worker.
 */
export async function cancelBulkJob(ctx: ServiceContext, principal: ShopPrincipal, jobId: string): Promise<BulkJob> {
  const now = ctx.clock.now();
  return ctx.db.transaction(async (run) => {
    const row = await ownJob(run, principal, jobId, true);
    if (!isUnfinished(row.status)) throw notNow('cancel', row, 'previewing, previewed, queued or running');
    await skipPending(run, row.id, now, 'job_cancelled', 'The bulk job was cancelled before this contract\'s turn.');
    await moveJob(run, row.id, [row.status], 'cancelled', { finishedAt: now, expiresAt: null });
    const job = await toBulkJob(run, { ...row, status: 'cancelled', finishedAt: now, expiresAt: null, finalCounts: null, finalTotals: null });
    await queueJobEvent(run, row.shopId, 'bulk_job.finished', { bulkJob: job }, now);
    return job;
  });
}

/** A preview's or a run's end: its counts and totals kept on the job, its event queued, in one transaction. */
export async function endJob(
  ctx: ServiceContext,
  row: BulkJobRow,
  to: 'previewed' | 'completed' | 'failed',
  opts: { failure?: string } = {},
): Promise<BulkJob | null> {
  const now = ctx.clock.now();
  return ctx.db.transaction(async (run) => {
    const { counts, totals } = await countItems(run, row.id);
    const summed = sumTotals(totals);
    const from: BulkJobStatus[] = to === 'previewed' ? ['previewing'] : to === 'completed' ? ['running'] : ['previewing', 'previewed', 'queued', 'running'];
    const expiresAt = to === 'previewed' ? new Date(now.getTime() + PREVIEW_TTL_MS) : null;
    const moved = await moveJob(run, row.id, from, to, { finishedAt: to === 'previewed' ? undefined : now, expiresAt, counts, totals: summed, failure: opts.failure });
    if (!moved) return null;
    const job = await toBulkJob(run, { ...row, status: to, expiresAt, finishedAt: to === 'previewed' ? row.finishedAt : now, finalCounts: counts, finalTotals: summed, failure: opts.failure ?? null });
    await queueJobEvent(run, row.shopId, to === 'previewed' ? 'bulk_job.previewed' : 'bulk_job.finished', { bulkJob: job }, now);
    return job;
  });
}
