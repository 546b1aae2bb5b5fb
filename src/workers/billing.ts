import { randomUUID } from 'node:crypto';
import { claimDueContracts, lockDueContracts, unsubmittedAttempts, type UnsubmittedAttempt } from '../db/billingRows.js';
import { contractRows } from '../db/contractRows.js';
import type { ContractRow } from '../db/schema.js';
import { isTooLateToBill } from '../domain/commands/billingSteps.js';
import type { Command } from '../domain/commands/registry.js';
import { ServiceError } from '../domain/errors.js';
import type { ServiceContext } from '../services/context.js';
import { SYSTEM } from '../services/principal.js';
import { runCommandBatch, submitAttempts } from '../services/runner.js';
import { Worker, type WorkerLog } from './worker.js';

/**
 * A contract that stopped being billable between its claim and its planning (paused or ended meanwhile: 409
 * invalid_state) is simply not billed: not a failure worth a log line.
 */
const noLongerBillable = (err: unknown) => err instanceof ServiceError && err.code === 'invalid_state';

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
 * scheduled retry has come), through the command runner, then hands the attempts to the gateway.
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
        const { outcomes, after } = await this.billBatch(batch, leftDue);
        if (!outcomes.length) break;
        if (outcomes.length === batch && !this.ctx.platform.callsOut) this.catchingUp = true;
        for (const o of outcomes) {
          if (o.error && !noLongerBillable(o.error)) this.couldNotBill(o.row, o.error);
          if (!o.committed?.changed) {
            leftDue.push(o.row.id);
            continue;
          }
          if (o.request?.command.name === 'billing_missed') done.missed++;
          else done.attempted++;
        }
        await handing;
        handing = after((attemptId, err) => {
          // Left pending and unsubmitted: handed over again once UNSUBMITTED_AFTER_MS have passed.
          this.stats.submitFailures++;
          this.log?.error({ err: { message: (err as Error).message }, attemptId }, 'could not hand a billing attempt to the gateway');
        }).then((n) => {
          done.submitted += n;
        });
        if (outcomes.length < batch) break;
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
   * One batch of due contracts through the runner: in standalone mode locked, planned and billed in one transaction
   * (SKIP LOCKED, so workers on other instances take other contracts; one commit and no claim to write first); in
   * platform mode claimed by one statement and each billed on its own, leased while the platform is told, at most
   * `concurrency` in flight (the requests the instance serves meanwhile share its database connections).
   */
  private billBatch(limit: number, leftDue: string[]) {
    const now = this.ctx.clock.now();
    return runCommandBatch(
      this.ctx,
      SYSTEM.billing,
      {
        lock: (run) => lockDueContracts(run, { now, limit, shopId: this.opts.shopId, except: leftDue }),
        claim: () => claimDueContracts(this.ctx.db, { now, until: new Date(now.getTime() + CLAIM_MS), limit, shopId: this.opts.shopId }),
        lanes: this.opts.concurrency,
      },
      (row) => this.commandOf(row, now),
      { onLockFailure: (err) => this.log?.error({ err: { message: (err as Error).message } }, 'could not bill a batch of contracts at once; billing them one by one') },
    );
  }

  /** What the worker asks of a due contract: its attempt, or, for a cycle too late to bill, a missed cycle. */
  private commandOf(row: ContractRow, now: Date): Command {
    const { maxLateMs } = this.opts;
    return isTooLateToBill(row, now, maxLateMs) ? { name: 'billing_missed', input: { maxLateMs } } : { name: 'bill', input: { attemptId: randomUUID(), maxLateMs } };
  }

  private couldNotBill(row: ContractRow, err: unknown): void {
    this.log?.error({ err: { message: (err as Error).message }, contractId: row.id }, 'could not bill a contract');
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
    return submitAttempts(
      this.ctx,
      withContracts.filter((x) => x !== null).map((x) => ({ row: x.contract, attempt: x.attempt })),
      this.opts.concurrency,
      (attemptId, err) => {
        this.stats.submitFailures++;
        this.log?.error({ err: { message: (err as Error).message }, attemptId }, 'could not hand a billing attempt to the gateway');
      },
    );
  }
}
