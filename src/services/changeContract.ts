import { randomUUID } from 'node:crypto';
import { contractLeases, leaseHolder, releaseLease } from '../db/contractLeases.js';
import { backgroundContractWrites, contractWrites, lockContract, writeContractsIn, type ContractWrite, type IdempotencyRecord, type MirrorMark } from '../db/contractWrites.js';
import type { RunSql } from '../db/client.js';
import type { ContractRow } from '../db/schema.js';
import type { ContractState } from '../domain/contract.js';
import { decide, plan, planOf, PLATFORM, type Plan, type Request, type Step } from '../domain/commands/plan.js';
import { MESSAGES, ServiceError } from '../domain/errors.js';
import { toContract, type Contract } from '../domain/resources.js';
import type { ServiceContext } from './context.js';

/**
 * THE change path: every change of a contract, whatever asks for it (an API or MCP action or edit, the admin, the
 * resume sweep, a read that finds a resume due, billing), comes here. The domain plans it (domain/commands: a due
 * resume first, then the command, each decided purely), the platform port carries each step out (nothing to do in
 * standalone mode; the platform's mutations in platform mode, with nothing held in the database meanwhile), and one
 * statement writes the contract, its events, their consumers' rows and the idempotency record (db/contractWrites.ts).
 *
 * Strategies, all ending in that one statement:
 * - standalone, with the contract as the caller read it: the write is tried from that read (batched with concurrent
 *   writes: a group commit); if the contract moved on meanwhile, the locked strategy;
 * - locked: in a transaction, the row FOR UPDATE, the plan made again from the row as it now is, the write. Planning
 *   is pure here, so holding the lock costs microseconds;
 * - platform mode: the contract is leased (one statement), planned and carried out on the platform with nothing
 *   held, then written with the version check that also clears the lease.
 * No update is lost, nothing is half written, and no platform call is made while a row lock or a connection is held.
 */

export type ContractChange = {
  shopId: string;
  contractId: string;
  request: Request;
  /** The contract as the caller read it: the optimistic write starts from it. */
  read?: ContractRow;
  record?: IdempotencyRecord;
  /** Skip a contract another writer holds instead of waiting (the resume sweep): null then. */
  skipLocked?: boolean;
  /** Decide and carry out as a preview (the platform changes nothing), and write nothing. */
  preview?: boolean;
  /** No client waits on this change (a billing outcome): written in the background group commit. */
  background?: boolean;
  /** A bulk job's item this change carries out: marked done by the change's own statement. */
  bulkJob?: string;
};

/**
 * The contract after the change and whether anything was written. `contract`: the contract as a client sees it
 * after the change's last event, and `json`, its text exactly as the events' consumers and the idempotency record got
 * it (both only when the change had an event).
 */
export type CommittedChange = { row: ContractRow; changed: boolean; contract?: Contract; json?: string };

/**
 * What a change answers a client: the contract after it and, when it had an event, `json`, the text that event holds
 * of it, which an API route sends as it is rather than writing the contract out a second time.
 */
export function changeAnswer(committed: CommittedChange): { contract: Contract; json?: string } {
  return committed.contract ? { contract: committed.contract, json: committed.json } : { contract: toContract(committed.row) };
}

/** How long a lease holds a contract: longer than any change takes on the platform, so it lapses only when its holder died. */
export const CALL_LEASE_MS = 60_000;
/** A change that finds the contract leased looks again this often, for at most this long. */
const LEASE_POLL_MS = 15;
const LEASE_WAIT_MS = 15_000;
/** A leased change whose contract moved on while the platform answered (a lapsed lease) is planned again this often at most. */
const LEASED_ROUNDS = 3;

/** Another change is being made on the platform: a locked writer leaves the contract to it and tries later. */
export class ContractBusy extends ServiceError {
  constructor() {
    super('platform_unavailable', 'Another change of this contract is being made on the platform; try again in a moment.', { headers: { 'retry-after': '1' } });
  }
}

/** Runs one change (see the top). Throws what planning or the platform throws; null only with `skipLocked`. */
export function changeContract(ctx: ServiceContext, change: ContractChange): Promise<CommittedChange | null> {
  const platform = ctx.platform;
  if (!platform.prepare) return attempt(ctx, change);
  return platform.prepare(change.shopId).then(() =>
    attempt(ctx, change).catch(async (err) => {
      if (!(await platform.prepare!(change.shopId, err)).retry) throw err;
      return attempt(ctx, change);
    }),
  );
}

function attempt(ctx: ServiceContext, change: ContractChange): Promise<CommittedChange | null> {
  if (change.preview) return previewChange(ctx, change);
  return ctx.platform.callsOut ? leasedChange(ctx, change) : localChange(ctx, change);
}

/** Standalone: from the caller's read if there is one, else (or when it lost) under the row lock. */
async function localChange(ctx: ServiceContext, change: ContractChange): Promise<CommittedChange | null> {
  const now = ctx.clock.now();
  if (change.read) {
    const p = plan(change.read, change.request, now);
    if (!p) return { row: change.read, changed: false };
    const w = writeOf(change.read, p, now, change.record);
    if (await writesOf(ctx, change).load(w.write)) return w.committed;
  }
  return ctx.db.transaction(async (run: RunSql) => {
    const row = await lockContract(run, change.shopId, change.contractId, { skipLocked: change.skipLocked });
    if (!row) {
      if (change.skipLocked) return null;
      throw new ServiceError('not_found', MESSAGES.contractNotFound);
    }
    const p = plan(row, change.request, now);
    if (!p) return { row, changed: false };
    const w = writeOf(row, p, now, change.record);
    await writeContractsIn(run, [w.write]);
    return w.committed;
  });
}

/** One contract's part of a batch changed under the lock: what was asked, what was committed, or why planning failed. */
export type BatchChange = { row: ContractRow; request: Request; committed: CommittedChange | null; error?: unknown };

/**
 * Standalone, many contracts at once (the billing worker's due contracts): in one transaction, `lock` takes their
 * rows (FOR UPDATE SKIP LOCKED, so rows another writer holds are left for a later round), each is planned from its
 * row, and the one statement writes them all: one commit for the batch, nothing written to claim them (while the
 * transaction runs other workers skip them; once it commits they are no longer due). Planning is pure, so the locks
 * are held for the batch's planning and its statement only. A request whose planning throws is left out, with its
 * error; `committed` is null then. Answers in `lock`'s order.
 */
export async function changeLockedBatch(
  ctx: ServiceContext,
  lock: (run: RunSql) => Promise<ContractRow[]>,
  requestOf: (row: ContractRow) => Request,
): Promise<BatchChange[]> {
  if (ctx.platform.callsOut) throw new Error('changeLockedBatch is for standalone mode: platform mode carries each change out first');
  const now = ctx.clock.now();
  return ctx.db.transaction(async (run: RunSql) => {
    const rows = await lock(run);
    const out: BatchChange[] = [];
    const writes: { at: number; write: ContractWrite }[] = [];
    for (const row of rows) {
      const request = requestOf(row);
      try {
        const p = plan(row, request, now);
        if (!p) {
          out.push({ row, request, committed: { row, changed: false } });
          continue;
        }
        const w = writeOf(row, p, now);
        writes.push({ at: out.length, write: w.write });
        out.push({ row, request, committed: w.committed });
      } catch (error) {
        out.push({ row, request, committed: null, error });
      }
    }
    const written = await writeContractsIn(run, writes.map((w) => w.write));
    // Under this transaction's locks every write applies; one that did not (it cannot) is reported as not committed.
    written.forEach((ok, i) => {
      if (!ok) out[writes[i].at].committed = null;
    });
    return out;
  });
}

/** The group commit a change joins: the requests' own, or the background one. */
const writesOf = (ctx: ServiceContext, change: ContractChange) => (change.background ? backgroundContractWrites : contractWrites)(ctx.db);

/** Platform mode: lease, plan, carry out with nothing held, write (see the top). */
async function leasedChange(ctx: ServiceContext, change: ContractChange): Promise<CommittedChange | null> {
  const now = ctx.clock.now();
  for (let round = 1; ; round++) {
    const lease = randomUUID();
    const row = await takeLease(ctx, change, lease, now);
    if (!row) return null;
    try {
      const p = plan(row, change.request, now);
      if (!p) {
        await releaseLease(ctx.db, row.id, lease);
        return { row, changed: false };
      }
      const done = await carryOut(ctx, change.shopId, row, p, now, false);
      const w = writeOf(row, done.plan, now, change.record, done.mark, change.bulkJob);
      if (await writesOf(ctx, change).load(w.write)) return w.committed;
      // Not written: a locked writer had the row for a moment (the write skips a locked row), or the lease lapsed
      // and another change was made. Under the lock, the same write if the contract is as it was planned from.
      const same = await ctx.db.transaction(async (run: RunSql) => {
        const now = await lockContract(run, change.shopId, change.contractId);
        if (!now || now.version !== row.version || now.callLease !== lease) return false;
        await writeContractsIn(run, [w.write]);
        return true;
      });
      if (same) return w.committed;
    } catch (err) {
      await releaseLease(ctx.db, row.id, lease);
      throw err;
    }
    // The contract moved on while the platform answered (the lease had lapsed): plan again from it. The platform's
    // own rules make a repeated step safe (a contract already in the target status counts as done).
    await releaseLease(ctx.db, row.id, lease);
    if (round >= LEASED_ROUNDS) throw new ContractBusy();
  }
}

/** A preview: planned from the contract as it is and carried out as a preview; nothing written anywhere. */
async function previewChange(ctx: ServiceContext, change: ContractChange): Promise<CommittedChange> {
  const now = ctx.clock.now();
  const row = change.read!;
  const p = plan(row, change.request, now);
  if (!p) return { row, changed: false };
  const done = await carryOut(ctx, change.shopId, row, p, now, true);
  return writeOf(row, done.plan, now, undefined, done.mark).committed;
}

/** Takes the contract's lease, waiting while another change holds it; null with skipLocked when one does. */
async function takeLease(ctx: ServiceContext, change: ContractChange, lease: string, now: Date): Promise<ContractRow | null> {
  const deadline = Date.now() + LEASE_WAIT_MS;
  const until = new Date(now.getTime() + CALL_LEASE_MS);
  for (;;) {
    const row = await contractLeases(ctx.db).load({ contractId: change.contractId, shopId: change.shopId, lease, until, now });
    if (row) return row;
    const held = await leaseHolder(ctx.db, change.shopId, change.contractId);
    if (held === undefined) throw new ServiceError('not_found', MESSAGES.contractNotFound);
    if (change.skipLocked) return null;
    if (Date.now() > deadline) throw new ContractBusy();
    await new Promise((r) => setTimeout(r, LEASE_POLL_MS));
  }
}

/**
 * Each step made true on the platform, in order. When the platform answered with the contract, whatever else it
 * changed meanwhile (lines edited in the shop admin a moment ago, say) is taken in as a sync step (actor platform):
 * the mirror records the answer's revision, so a later re-read at that revision would never show it otherwise.
 */
async function carryOut(ctx: ServiceContext, shopId: string, row: ContractRow, p: Plan, now: Date, preview: boolean): Promise<{ plan: Plan; mark?: MirrorMark }> {
  if (!ctx.platform.callsOut) return { plan: p };
  const steps: Step[] = [];
  let before: ContractState = row;
  let answer: { state: import('../domain/commands/sync.js').PlatformState; mark: MirrorMark } | undefined;
  for (const step of p.steps) {
    const done = await ctx.platform.execute({ shopId, contract: row, before, step, preview });
    steps.push({ ...step, decision: done.decision });
    before = done.decision.contract;
    if (done.platform) answer = done.platform;
  }
  if (!answer) return { plan: planOf(steps) };
  const sync = decide(before, { name: 'sync', input: { incoming: answer.state, changedAt: answer.mark.platformUpdatedAt } }, now);
  if (sync.events.length) steps.push({ command: { name: 'sync', input: { incoming: answer.state, changedAt: answer.mark.platformUpdatedAt } }, actor: PLATFORM, decision: sync });
  else {
    // Nothing a merchant sees changed: the platform's whole contract still stands in for svc's guess of it (a new
    // line's id, say).
    const last = steps[steps.length - 1];
    const events = last.decision.events.map((e, i, all) => (i === all.length - 1 ? { ...e, after: sync.contract } : e));
    steps[steps.length - 1] = { ...last, decision: { contract: sync.contract, events } };
  }
  return { plan: planOf(steps), mark: answer.mark };
}

/** The write of a plan from `row`, and what the change answers once it is written. */
function writeOf(row: ContractRow, p: Plan, now: Date, record?: IdempotencyRecord, mark?: MirrorMark, bulkJob?: string): { write: ContractWrite; committed: CommittedChange } {
  const changed = p.events.length > 0;
  const after = rowAfter(row, p.contract, changed ? now : row.updatedAt, row.version + p.events.length, mark);
  const rendered: string[] = [];
  let last: Contract | undefined;
  for (const e of p.events) rendered.push(JSON.stringify((last = toContract(after, e.after))));
  const committed = { row: after, changed, contract: last, json: changed ? rendered[rendered.length - 1] : undefined };
  const bulkItem = bulkJob ? { jobId: bulkJob, currencyCode: row.totals.currencyCode, before: row.totals.total, after: p.contract.totals.total } : undefined;
  return { write: { before: row, after: p.contract, events: p.events, rendered, now, mirror: mark, record, bulkItem }, committed };
}

/**
 * The contract row as the statement leaves it. Field by field (not spread): this runs for every change, and copying
 * a whole row by spread is several times slower.
 */
function rowAfter(row: ContractRow, s: ContractState, updatedAt: Date, version: number, mark?: MirrorMark): ContractRow {
  return {
    id: row.id,
    shopId: row.shopId,
    status: s.status,
    customerId: s.customerId,
    customerEmail: s.customerEmail,
    billingInterval: s.billingInterval,
    billingIntervalCount: s.billingIntervalCount,
    deliveryInterval: s.deliveryInterval,
    deliveryIntervalCount: s.deliveryIntervalCount,
    nextBillingDate: s.nextBillingDate,
    pausedAt: s.pausedAt,
    resumeAt: s.resumeAt,
    cancelledAt: s.cancelledAt,
    cancellationReason: s.cancellationReason,
    lines: s.lines,
    shippingAddress: s.shippingAddress,
    deliveryPrice: s.deliveryPrice,
    discounts: s.discounts,
    totals: s.totals,
    billingStatus: s.billingStatus,
    billingFailedAttempts: s.billingFailedAttempts,
    billingNextAttemptAt: s.billingNextAttemptAt,
    billingCycleDate: s.billingCycleDate,
    billingLastAttempt: s.billingLastAttempt,
    createdAt: row.createdAt,
    updatedAt,
    version,
    platformRevision: mark?.platformRevision ?? row.platformRevision,
    platformUpdatedAt: mark?.platformUpdatedAt ?? row.platformUpdatedAt,
    callLease: null,
    callLeaseUntil: null,
  };
}

export { writeOf };
