import { lockContract, lockContracts, writeContractsIn, type LockedContract } from '../db/contractWrites.js';
import type { RunSql } from '../db/client.js';
import { insertMirroredContracts, mirroredRevisions, type PlatformContract } from '../db/mirror.js';
import { isNewerRevision } from '../domain/commands/sync.js';
import { plan, PLATFORM } from '../domain/commands/plan.js';
import { ServiceError } from '../domain/errors.js';
import { ContractBusy, writeOf } from './changeContract.js';
import type { ServiceContext } from './context.js';

/**
 * Platform sync, for any platform: what the platform says a contract is now, applied to the mirror through the one
 * change path (the `sync` command, actor platform). Applied only when the platform's revision is newer than the
 * mirror's (isNewerRevision, the one place that rule lives), under the contract's row lock, so a late, repeated or
 * out-of-order signal changes nothing, and the echo of svc's own change records no second event. A contract that a
 * change is being carried out on right now (leased) is left to that change: ContractBusy, try again shortly.
 * A platform adapter reads the platform (its webhooks, its reconciliation) and hands the contracts here.
 */

export type { PlatformContract };
export type SyncOutcome = 'created' | 'changed' | 'unchanged';

/** The contracts the mirror does not hold at their revision (or that a change holds now): what is left to apply. */
export async function staleContracts(ctx: ServiceContext, shopId: string, contracts: PlatformContract[]): Promise<PlatformContract[]> {
  if (!contracts.length) return [];
  const mirror = await mirroredRevisions(ctx.db, shopId, contracts.map((c) => c.id), ctx.clock.now());
  return contracts.filter((c) => {
    const m = mirror.get(c.id);
    return !(m && !m.leased && m.revision !== null && !isNewerRevision(c.mark.platformRevision, m.revision));
  });
}

/**
 * Applies several distinct contracts read together, the ones the mirror holds in one transaction (their rows locked
 * in id order); one the mirror has not seen is inserted (with contract.created when `announce`: a webhook or
 * reconciliation found it, not the install's import). Answers each contract's outcome, or the error its sync met
 * (ContractBusy while a change holds it), by id; any other error fails them all, nothing written.
 */
export async function syncContracts(ctx: ServiceContext, shopId: string, contracts: PlatformContract[], opts: { announce: boolean }): Promise<Map<string, SyncOutcome | Error>> {
  const out = new Map<string, SyncOutcome | Error>();
  if (!contracts.length) return out;
  if (new Set(contracts.map((c) => c.id)).size !== contracts.length) throw new Error('syncContracts: one entry per contract');
  const now = ctx.clock.now();
  const missing: PlatformContract[] = [];
  await ctx.db.transaction(async (run: RunSql) => {
    const rows = await lockContracts(run, shopId, contracts.map((c) => c.id));
    const writes = [];
    for (const c of contracts) {
      const row = rows.get(c.id);
      if (!row) {
        missing.push(c);
        continue;
      }
      try {
        const w = syncWrite(row, c, now);
        if (w) writes.push(w);
        out.set(c.id, w ? 'changed' : 'unchanged');
      } catch (err) {
        if (!(err instanceof ServiceError)) throw err;
        out.set(c.id, err);
      }
    }
    await writeContractsIn(run, writes);
  });
  for (const c of missing) {
    try {
      out.set(c.id, await syncContract(ctx, shopId, c, opts));
    } catch (err) {
      out.set(c.id, err as Error);
    }
  }
  return out;
}

/** One contract: applied if the mirror holds it, else inserted (and announced, with `announce`), in one transaction. */
export async function syncContract(ctx: ServiceContext, shopId: string, c: PlatformContract, opts: { announce: boolean }): Promise<SyncOutcome> {
  const now = ctx.clock.now();
  return ctx.db.transaction(async (run: RunSql) => {
    let row = await lockContract(run, shopId, c.id);
    if (row) {
      const w = syncWrite(row, c, now);
      if (!w) return 'unchanged';
      await writeContractsIn(run, [w]);
      return 'changed';
    }
    // The row and its contract.created commit together: a failure between them would leave a contract no later sync
    // announces (its revision is the mirror's from then on). Another writer inserting it meanwhile: it is applied.
    const inserted = await insertMirroredContracts(run, shopId, [c], now);
    row = await lockContract(run, shopId, c.id);
    if (!row) throw new ServiceError('not_found', 'The contract could not be stored.');
    if (!inserted.length) {
      const w = syncWrite(row, c, now);
      if (w) await writeContractsIn(run, [w]);
      return w ? 'changed' : 'unchanged';
    }
    if (opts.announce) {
      const p = plan(row, { command: { name: 'sync', input: { incoming: c.state, changedAt: c.mark.platformUpdatedAt, announce: true } }, actor: PLATFORM }, now)!;
      await writeContractsIn(run, [writeOf(row, p, now).write]);
    }
    return 'created';
  });
}

/** The mirror's write of the platform's contract (null: not newer than the mirror). ContractBusy while leased. */
function syncWrite(row: LockedContract, c: PlatformContract, now: Date) {
  if (row.callLeaseUntil && row.callLeaseUntil.getTime() > now.getTime()) throw new ContractBusy();
  if (!isNewerRevision(c.mark.platformRevision, row.platformRevision)) return null;
  const p = plan(row, { command: { name: 'sync', input: { incoming: c.state, changedAt: c.mark.platformUpdatedAt } }, actor: PLATFORM }, now);
  const mark = c.mark;
  if (!p) return writeOf(row, { steps: [], contract: row, events: [] }, now, undefined, mark).write;
  return writeOf(row, p, now, undefined, mark).write;
}

/** Inserts contracts the mirror has not seen (the install's import, in batches); answers how many were new. */
export async function insertContracts(ctx: ServiceContext, shopId: string, contracts: PlatformContract[]): Promise<number> {
  if (!contracts.length) return 0;
  return ctx.db.withSession(async (run) => (await insertMirroredContracts(run, shopId, contracts, ctx.clock.now())).length);
}

/**
 * syncContract for a contract a change may be carrying out on the platform right now: tried again shortly, the
 * change's own commit coming first. Still busy after that, the error is thrown and the caller's round runs again.
 */
export async function syncUnlessBusy(ctx: ServiceContext, shopId: string, c: PlatformContract): Promise<SyncOutcome> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await syncContract(ctx, shopId, c, { announce: true });
    } catch (err) {
      if (!(err instanceof ContractBusy) || attempt >= 20) throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}
