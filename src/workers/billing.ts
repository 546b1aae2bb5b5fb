import { mapInLanes } from '../lanes.js';
import { randomUUID } from 'node:crypto';
import { claimDueContracts, lockDueContracts, unsubmittedAttempts, type UnsubmittedAttempt } from '../db/billingRows.js';
import { isDatabaseUnavailable } from '../db/client.js';
import { contractRows } from '../db/contractRows.js';
import type { ContractRow } from '../db/schema.js';
import type { AttemptState } from '../domain/billing.js';
import type { Request } from '../domain/commands/plan.js';
import type { Command } from '../domain/commands/registry.js';
import { changeContract, changeLockedBatch, type CommittedChange } from '../services/changeContract.js';
import type { ServiceContext } from '../services/context.js';
import { BILLING_ACTOR } from '../services/recordBillingOutcome.js';
import { submitBillingAttempt } from '../services/submitBillingAttempt.js';
import { Worker, type WorkerLog } from './worker.js';

/** Contracts claimed per statement. */
const BATCH = 500;
/**
 * Contracts locked, planned and billed per transaction in standalone mode: their row locks are held while the batch
 * is planned and written (an action on one of them waits that long), so fewer than a claim takes.
 */
const LOCKED_BATCH = 100;
/** How long a claim keeps other workers off a contract: far longer than planning and committing a batch takes. */
const CLAIM_MS = 60_000;
/** A pending attempt not handed over this long after its creation was left by a crash: it is handed over again. */
const UNSUBMITTED_AFTER_MS = 30_000;
/**
 * A handed-over attempt with no outcome this long is asked about again (the gateway answers with the same key),
 * unless the gateway says how long its outcomes take (BillingGateway.outcomeWithinMs).
 */
const RESUBMIT_AFTER_MS = 10 * 60_000;

type Billed = { kind: 'attempted'; contract: ContractRow; attempt: AttemptState } | { kind: 'missed' } | null;

export type BillingWorkerOptions = {
  intervalMs: number;
  maxLateMs: number;
  /** Gateway calls in flight at most (BILLING_CONCURRENCY). */
  concurrency: number;
  batchSize?: number;
  /** Only this shop's contracts (tests). */
  shopId?: string;
  log?: WorkerLog;
};

/**
 * Renewals' worker: every `intervalMs` it bills every ACTIVE contract that is due (its next billing date or its
 * scheduled retry has come), through the change path, then hands the attempts to the gateway.
 *
 * Per round, batch after batch: each due contract becomes a `bill` (an attempt, pending) or, for a cycle later than
 * `maxLateMs`, a `billing_missed`. In standalone mode a batch is locked, planned and written in one transaction
 * (SKIP LOCKED, so workers on other instances take other contracts; lockAndBill); in platform mode, where each change
 * is carried out on the platform first, a batch is claimed by one statement and each contract goes through the change
 * path on its own (claimAndBill). Then the new attempts go to the gateway, `concurrency` at a time, while the next
 * batch is taken.
 * Exactly one attempt per cycle: a contract is planned from its row as it is when written (under the lock, or with the
 * version check that makes a change planned from an older read start again), where a contract an action changed first
 * is no longer due, and the attempts' unique key refuses a second one whatever happens. An attempt that a crash left
 * between the commit and the gateway is handed over again, with the same idempotency key.
 */
export class BillingWorker extends Worker {
  /** Totals since start, for /metrics and the logs. */
  readonly stats = { ticks: 0, attempted: 0, missed: 0, submitted: 0, submitFailures: 0, failures: 0 };
  /**
   * True while the current round has found more due than one batch (a storm: a shop's contracts due at one moment),
   * until that round ends. The instance's webhook dispatcher gives way meanwhile (workers/index.ts): renewals have a
   * deadline, their webhooks follow. Standalone only: in platform mode a storm is paced by the shop's cost bucket,
   * not by this instance's CPU, and may last an hour; webhooks do not wait for it.
   */
  catchingUp = false;

  constructor(
    private readonly ctx: ServiceContext,
    private readonly opts: BillingWorkerOptions,
  ) {
    super('billing', opts.intervalMs, opts.log);
  }

  /** One round: bills everything due now, then hands over what a crash left. Returns what it did. */
  async tick(): Promise<{ attempted: number; missed: number; submitted: number }> {
    const batch = Math.min(this.opts.batchSize ?? BATCH, this.ctx.platform.callsOut ? BATCH : LOCKED_BATCH);
    const done = { attempted: 0, missed: 0, submitted: 0 };
    // Standalone: contracts this round took but left due (nothing to bill after all, or their planning failed): not
    // taken again until the next round. (Platform mode's claim does this.) Normally empty.
    const leftDue: string[] = [];
    // The attempts of one batch are handed over while the next batch is claimed and committed: the gateway's wait and
    // the database's work overlap, and at most one batch is being handed over at a time.
    let handing: Promise<void> = Promise.resolve();
    try {
      for (;;) {
        const { taken, planned } = this.ctx.platform.callsOut ? await this.claimAndBill(batch) : await this.lockAndBillOrEach(batch, leftDue);
        if (!taken) break;
        if (taken === batch && !this.ctx.platform.callsOut) this.catchingUp = true;
        const attempts: { contract: ContractRow; attempt: AttemptState }[] = [];
        for (const p of planned) {
          if (p?.kind === 'attempted') attempts.push(p);
          else if (p?.kind === 'missed') done.missed++;
        }
        done.attempted += attempts.length;
        await handing;
        handing = this.submitAll(attempts).then((n) => {
          done.submitted += n;
        });
        if (taken < batch) break;
      }
      await handing;
      done.submitted += await this.resubmit();
    } catch (err) {
      this.stats.failures++;
      await handing;
      throw err;
    } finally {
      this.catchingUp = false;
      this.stats.ticks++;
      this.stats.attempted += done.attempted;
      this.stats.missed += done.missed;
      this.stats.submitted += done.submitted;
    }
    if (done.attempted || done.missed) this.log?.info(done, 'billed due contracts');
    return done;
  }

  /**
   * Platform mode: a batch of due contracts claimed (one statement), then each billed through the change path, which
   * leases it while the platform is told. At most `concurrency` changes in flight, not the whole batch: the requests
   * the instance serves meanwhile share its database connections, and wait behind tens of changes, not hundreds.
   */
  private async claimAndBill(limit: number): Promise<{ taken: number; planned: Billed[] }> {
    const now = this.ctx.clock.now();
    const due = await claimDueContracts(this.ctx.db, { now, until: new Date(now.getTime() + CLAIM_MS), limit, shopId: this.opts.shopId });
    const planned = await mapInLanes(due, this.opts.concurrency, async (row) => {
      const request = this.requestOf(row, now);
      try {
        const committed = await changeContract(this.ctx, { shopId: row.shopId, contractId: row.id, read: row, request });
        return this.billed(request, committed);
      } catch (err) {
        // One contract's trouble (a platform refusal, say) does not stop the others; its claim lapses and it is tried again.
        this.couldNotBill(row, err);
        return null;
      }
    });
    return { taken: due.length, planned };
  }

  /**
   * Standalone mode: a batch of due contracts locked, planned and billed in one transaction (the change path's
   * changeLockedBatch): one commit, and no claim to write first. The lock is held only while the batch is planned and
   * written, so the batch is kept small.
   */
  private async lockAndBill(limit: number, leftDue: string[]): Promise<{ taken: number; planned: Billed[] }> {
    const now = this.ctx.clock.now();
    const changes = await changeLockedBatch(
      this.ctx,
      (run) => lockDueContracts(run, { now, limit, shopId: this.opts.shopId, except: leftDue }),
      (row) => this.requestOf(row, now),
    );
    const planned = changes.map((c) => {
      if (c.error) this.couldNotBill(c.row, c.error);
      if (!c.committed?.changed) leftDue.push(c.row.id);
      return this.billed(c.request!, c.committed);
    });
    return { taken: changes.length, planned };
  }

  /**
   * lockAndBill, or, when its statement fails for a reason other than the database being unreachable (one contract's
   * row the statement refuses, say), the same batch contract by contract (claimAndBill): one contract's trouble never
   * stops the others.
   */
  private async lockAndBillOrEach(limit: number, leftDue: string[]): Promise<{ taken: number; planned: Billed[] }> {
    try {
      return await this.lockAndBill(limit, leftDue);
    } catch (err) {
      if (isDatabaseUnavailable(err)) throw err;
      this.log?.error({ err: { message: (err as Error).message } }, 'could not bill a batch of contracts at once; billing them one by one');
      return this.claimAndBill(limit);
    }
  }

  /** What the worker asks of a due contract: its attempt, or, for a scheduled cycle later than `maxLateMs`, a missed cycle. */
  private requestOf(row: ContractRow, now: Date): Request & object {
    const { maxLateMs } = this.opts;
    const late = row.billingNextAttemptAt === null && now.getTime() - row.nextBillingDate.getTime() > maxLateMs;
    const command: Command = late ? { name: 'billing_missed', input: { maxLateMs } } : { name: 'bill', input: { attemptId: randomUUID(), maxLateMs } };
    return { command, actor: BILLING_ACTOR };
  }

  /** The attempt a committed change created (or its missed cycle); null when the contract was no longer due. */
  private billed(request: Request & object, committed: CommittedChange | null): Billed {
    if (!committed?.changed) return null;
    if (request.command.name === 'billing_missed') return { kind: 'missed' };
    const attempt = committed.row.billingLastAttempt;
    const wanted = request.command.name === 'bill' ? request.command.input.attemptId : undefined;
    return attempt && attempt.id === wanted ? { kind: 'attempted', contract: committed.row, attempt } : null;
  }

  private couldNotBill(row: ContractRow, err: unknown): void {
    this.log?.error({ err: { message: (err as Error).message }, contractId: row.id }, 'could not bill a contract');
  }

  /** Hands attempts to the gateway, `concurrency` at a time; answers how many it took. */
  private async submitAll(attempts: { contract: ContractRow; attempt: Pick<AttemptState, 'id' | 'cycleDate' | 'attempt' | 'amount'> }[]): Promise<number> {
    let next = 0;
    let ok = 0;
    const runner = async () => {
      while (next < attempts.length) {
        const a = attempts[next++];
        try {
          await submitBillingAttempt(this.ctx, a.contract, a.attempt);
          ok++;
        } catch (err) {
          // Left pending and unsubmitted: handed over again once UNSUBMITTED_AFTER_MS have passed.
          this.stats.submitFailures++;
          this.log?.error({ err: { message: (err as Error).message }, attemptId: a.attempt.id }, 'could not hand a billing attempt to the gateway');
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.opts.concurrency, attempts.length) }, runner));
    return ok;
  }

  /** Pending attempts a crash left unsubmitted, or with no outcome for long: handed over again, same key. */
  private async resubmit(): Promise<number> {
    const now = this.ctx.clock.now().getTime();
    const stale = await unsubmittedAttempts(this.ctx.db, {
      createdBefore: new Date(now - UNSUBMITTED_AFTER_MS),
      submittedBefore: new Date(now - (this.ctx.billing?.gateway.outcomeWithinMs ?? RESUBMIT_AFTER_MS)),
      limit: this.opts.batchSize ?? BATCH,
    });
    if (!stale.length) return 0;
    const rows = contractRows(this.ctx.db);
    const withContracts = await Promise.all(
      stale.map(async (a: UnsubmittedAttempt) => {
        const contract = await rows.ofShop.load({ shopId: a.shopId, contractId: a.contractId });
        return contract ? { contract, attempt: { id: a.id, cycleDate: a.cycleDate.toISOString(), attempt: a.attempt, amount: { amount: a.amount, currencyCode: a.currencyCode } } } : null;
      }),
    );
    return this.submitAll(withContracts.filter((x) => x !== null));
  }
}
