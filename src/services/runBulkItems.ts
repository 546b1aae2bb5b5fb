import { randomUUID } from 'node:crypto';
import type { RunSql } from '../db/client.js';
import { lockClaimedItems, recordOutcomes, releaseItems, type ItemOutcome } from '../db/bulkJobRows.js';
import { contractsOfShop, writeContractsIn, type ContractWrite } from '../db/contractWrites.js';
import type { ContractRow } from '../db/schema.js';
import { editOperationsFor, isEdit, itemTotals, NoMatchingLine, type BulkChange } from '../domain/bulkJobs.js';
import type { EditOperation } from '../domain/commands/edits/index.js';
import type { Catalog } from '../domain/commands/edits/operation.js';
import { checkCommand, plan } from '../domain/commands/plan.js';
import type { Command } from '../domain/commands/registry.js';
import { MESSAGES, OutcomeUnknown, ServiceError } from '../domain/errors.js';
import { ALL } from '../domain/permissions.js';
import { mapInLanes } from '../lanes.js';
import { catalogFor } from './catalog.js';
import { changeContract, writeOf } from './changeContract.js';
import type { ServiceContext } from './context.js';
import type { ShopPrincipal } from './principal.js';
import { authorizeCommand } from './runner.js';

/**
 * The command runner's way with a bulk job's items (docs/product.md §15): each item's contract gets the job's change
 * as its own command (a line named by variant becomes each line of that variant), decided on the contract as it is
 * now, with the runner's policy (a bulk job may not bill), through the one change path, with events of actor
 * bulk_job. Each item's outcome is written with its change: a succeeded item by the very statement that commits its
 * change (db/contractWrites.ts), the others in the same transaction, so an item is applied at most once whatever
 * fails, and one whose claim ran out before its commit is decided again by whoever takes it over.
 *
 * Standalone, the claimed items' contracts are locked and written in one transaction (contracts another writer holds
 * are left for a later round). In platform mode each contract goes through the change path on its own (the platform
 * first, under the contract's lease), `lanes` at a time, paced by the shop's cost bucket. A preview decides and
 * records what each would do, and changes nothing anywhere: from the contract as svc has it, or, for an edit whose
 * prices only the platform knows (a variant without a price, a discount code), by a draft it never commits.
 */

/** The principal a job's items run as: its shop, actor bulk_job with the job's id (events record it). */
export const bulkJobPrincipal = (shopId: string, jobId: string): ShopPrincipal => ({
  kind: 'shop',
  shopId,
  actor: { type: 'bulk_job', id: jobId },
  // Checked when the job was made and started (the change's permissions); the policy's actors still apply.
  permissions: ALL,
  who: 'This bulk job',
});

export type BulkItemsRun = {
  jobId: string;
  shopId: string;
  change: BulkChange;
  /** The claimed items' contracts, and the claim's lease that guards them. */
  contractIds: string[];
  lease: Date;
  preview: boolean;
  /**
   * Items whose contract, still being billed, is failed (billing_in_progress) instead of waited for again: those that
   * have waited once already when the rest of the job is done.
   */
  lastTry: ReadonlySet<string>;
  /** Platform mode: contracts carried out at once. */
  lanes: number;
};

/** How long an item whose contract is being billed waits before it is tried again. */
export const BILLING_WAIT_MS = 2_000;

/** One item's command on its contract (NoMatchingLine: a line operation found no line of its variant). */
function commandFor(change: BulkChange, row: ContractRow, catalog: Catalog | null, preview: boolean): Command {
  if (isEdit(change)) {
    const operations = editOperationsFor(row, change.operations);
    return { name: 'edit', input: { operations, preview, catalog, newIds: operations.map(() => randomUUID()) } };
  }
  const { action, ...input } = change;
  return { name: action, input } as Command;
}

/** What an item comes to when its change cannot be made. */
function refusal(contractId: string, err: unknown, now: Date, lastTry: boolean): ItemOutcome {
  if (err instanceof NoMatchingLine) return { contractId, status: 'skipped', code: 'no_matching_line', message: `The contract has no line of variant ${err.variantId}.` };
  if (err instanceof ServiceError) {
    if (err.code === 'billing_in_progress' && !lastTry) return { contractId, status: 'pending', notBefore: new Date(now.getTime() + BILLING_WAIT_MS) };
    return { contractId, status: 'failed', code: err.code, message: err.message, ...(err.details && { details: err.details }) };
  }
  return { contractId, status: 'failed', code: 'internal_error', message: MESSAGES.internal };
}

/** The shop's catalog for what the change names (standalone; the platform prices its own drafts). */
async function catalogOf(ctx: ServiceContext, shopId: string, change: BulkChange): Promise<Catalog | null> {
  if (ctx.platform.callsOut || !isEdit(change)) return null;
  return catalogFor(ctx, shopId, change.operations as unknown as EditOperation[]);
}

/**
 * What a batch came to: how many items it settled, how many it left for later, and (platform mode) whether the
 * platform refused the shop's token: the app was uninstalled, and the job cannot go on.
 */
export type BulkItemsDone = { settled: number; left: number; notInstalled?: boolean };

/** Runs a batch of a job's claimed items. */
export async function runBulkItems(ctx: ServiceContext, job: BulkItemsRun): Promise<BulkItemsDone> {
  const principal = bulkJobPrincipal(job.shopId, job.jobId);
  const catalog = await catalogOf(ctx, job.shopId, job.change);
  if (ctx.platform.callsOut) return platformItems(ctx, job, principal, catalog);
  if (job.preview) {
    const rows = await ctx.db.withSession((run) => contractsOfShop(run, job.shopId, job.contractIds, 'none'));
    const outcomes = job.contractIds.map((id) => previewOutcome(ctx, job, principal, rows.get(id), id, catalog));
    await ctx.db.withSession((run) => recordOutcomes(run, job.jobId, outcomes));
    return { settled: outcomes.filter((o) => o.status !== 'pending').length, left: outcomes.filter((o) => o.status === 'pending').length };
  }
  return ctx.db.transaction((run) => lockedItems(ctx, run, job, principal, catalog));
}

/** A preview's decision for one contract, from the contract as svc has it: nothing is written but the outcome. */
function previewOutcome(ctx: ServiceContext, job: BulkItemsRun, principal: ShopPrincipal, row: ContractRow | undefined, contractId: string, catalog: Catalog | null): ItemOutcome {
  const now = ctx.clock.now();
  if (!row) return { contractId, status: 'failed', code: 'not_found', message: MESSAGES.contractNotFound };
  try {
    const command = commandFor(job.change, row, catalog, true);
    authorizeCommand(principal, command.name);
    checkCommand(command, now);
    // Its run waits for a pending billing attempt's outcome: the preview decides as the contract will then be.
    const p = plan(row, { command, actor: principal.actor }, now, { whileBilling: true });
    return { contractId, status: 'succeeded', totals: itemTotals(row.totals, (p?.contract ?? row).totals) };
  } catch (err) {
    return refusal(contractId, err, now, true);
  }
}

/** Standalone: the claimed items and their contracts locked, decided and written in this one transaction. */
async function lockedItems(ctx: ServiceContext, run: RunSql, job: BulkItemsRun, principal: ShopPrincipal, catalog: Catalog | null): Promise<{ settled: number; left: number }> {
  const now = ctx.clock.now();
  const mine = [...(await lockClaimedItems(run, job.jobId, job.contractIds, job.lease))];
  if (!mine.length) return { settled: 0, left: 0 };
  // The job's row, shared: a cancel waits for this batch, then finds its items done.
  const [state] = await run<{ status: string }>(`SELECT status FROM bulk_jobs WHERE id = $1 FOR SHARE`, [job.jobId]);
  if (state?.status !== 'running') {
    await recordOutcomes(run, job.jobId, mine.map((contractId) => ({ contractId, status: 'skipped', code: 'job_cancelled', message: 'The bulk job was cancelled before this contract\'s turn.' })));
    return { settled: mine.length, left: 0 };
  }
  const rows = await contractsOfShop(run, job.shopId, mine, 'skip');
  const outcomes: ItemOutcome[] = [];
  const writes: ContractWrite[] = [];
  const held: string[] = [];
  const absent = mine.filter((id) => !rows.has(id));
  if (absent.length) {
    // Not locked: held by another writer (left for later), or gone.
    const exist = new Set((await run<{ id: string }>(`SELECT id::text AS id FROM subscription_contracts WHERE shop_id = $1 AND id = ANY ($2::bigint[])`, [job.shopId, absent])).map((r) => r.id));
    for (const id of absent) {
      if (exist.has(id)) held.push(id);
      else outcomes.push({ contractId: id, status: 'failed', code: 'not_found', message: MESSAGES.contractNotFound });
    }
  }
  for (const row of rows.values()) {
    try {
      const command = commandFor(job.change, row, catalog, false);
      authorizeCommand(principal, command.name);
      checkCommand(command, now);
      const p = plan(row, { command, actor: principal.actor }, now);
      if (!p) outcomes.push({ contractId: row.id, status: 'succeeded', totals: itemTotals(row.totals, row.totals) });
      else writes.push(writeOf(row, p, now, undefined, undefined, job.jobId).write);
    } catch (err) {
      outcomes.push(refusal(row.id, err, now, job.lastTry.has(row.id)));
    }
  }
  const written = await writeContractsIn(run, writes);
  written.forEach((ok, i) => {
    // Under this transaction's locks every write applies; one that did not is left for a later round.
    if (!ok) held.push(writes[i].before.id);
  });
  await recordOutcomes(run, job.jobId, outcomes);
  await releaseItems(run, job.jobId, held);
  const left = held.length + outcomes.filter((o) => o.status === 'pending').length;
  return { settled: mine.length - left, left };
}

/**
 * Platform mode: each contract through the change path on its own (the platform first), `lanes` at a time. A
 * platform that refuses the shop's token (the app was uninstalled, its app/uninstalled webhook perhaps not yet
 * processed) ends the batch: its items not done are left pending, for the worker to end the job as an uninstall does,
 * rather than failed one by one, each after a refresh of the token the platform refuses again.
 */
async function platformItems(ctx: ServiceContext, job: BulkItemsRun, principal: ShopPrincipal, catalog: Catalog | null): Promise<BulkItemsDone> {
  const rows = await ctx.db.withSession((run) => contractsOfShop(run, job.shopId, job.contractIds, 'none'));
  if (!job.preview) {
    const [state] = await ctx.db.withSession((run) => run<{ status: string }>(`SELECT status FROM bulk_jobs WHERE id = $1`, [job.jobId]));
    if (state?.status !== 'running') {
      await ctx.db.withSession((run) =>
        recordOutcomes(run, job.jobId, job.contractIds.map((contractId) => ({ contractId, status: 'skipped', code: 'job_cancelled', message: 'The bulk job was cancelled before this contract\'s turn.' }))),
      );
      return { settled: job.contractIds.length, left: 0 };
    }
  }
  // Set by any lane (a closure's write, which a plain `let` would hide from the type checker).
  const token = { refused: false };
  const outcomes = await mapInLanes(job.contractIds, job.lanes, async (contractId): Promise<ItemOutcome | null> => {
    const row = rows.get(contractId);
    const now = ctx.clock.now();
    if (token.refused) return { contractId, status: 'pending', notBefore: null };
    if (!row) return { contractId, status: 'failed', code: 'not_found', message: MESSAGES.contractNotFound };
    try {
      const command = commandFor(job.change, row, catalog, job.preview);
      authorizeCommand(principal, command.name);
      checkCommand(command, now);
      if (job.preview && !needsPlatformPrices(job.change)) return previewOutcome(ctx, job, principal, row, contractId, catalog);
      const committed = await changeContract(ctx, {
        shopId: job.shopId,
        contractId,
        read: row,
        request: { command, actor: principal.actor },
        preview: job.preview,
        bulkJob: job.preview ? undefined : job.jobId,
      });
      if (job.preview) return { contractId, status: 'succeeded', totals: itemTotals(row.totals, committed!.row.totals) };
      // Committed: its own statement marked the item done.
      return committed?.changed ? null : { contractId, status: 'succeeded', totals: itemTotals(row.totals, row.totals) };
    } catch (err) {
      // An edit whose answer never came may have been made: sent again, a line could be added twice. At most once: it
      // fails, saying so (a status change is sent again: its end state is the same either way).
      if (err instanceof OutcomeUnknown && isEdit(job.change)) return { contractId, status: 'failed', code: err.code, message: err.message };
      // A contract another change holds on the platform, or a platform that cannot be reached now: later.
      if (err instanceof ServiceError && err.code === 'platform_unavailable') return { contractId, status: 'pending', notBefore: null };
      if (err instanceof ServiceError && err.code === 'app_not_installed') {
        token.refused = true;
        return { contractId, status: 'pending', notBefore: null };
      }
      return refusal(contractId, err, now, job.lastTry.has(contractId));
    }
  });
  const recorded = outcomes.filter((o): o is ItemOutcome => o !== null);
  await ctx.db.withSession(async (run) => {
    await recordOutcomes(run, job.jobId, recorded.filter((o) => o.status !== 'pending' || o.notBefore));
    await releaseItems(run, job.jobId, recorded.filter((o) => o.status === 'pending' && !o.notBefore).map((o) => o.contractId));
  });
  const left = recorded.filter((o) => o.status === 'pending').length;
  return { settled: job.contractIds.length - left, left, ...(token.refused && { notInstalled: true }) };
}

/** An edit whose outcome only the platform can price: a variant added or swapped to without a price, a discount code. */
function needsPlatformPrices(change: BulkChange): boolean {
  return isEdit(change) && change.operations.some((o) => ((o.op === 'add_line' || o.op === 'swap_variant') && o.price === undefined) || o.op === 'apply_discount_code');
}
