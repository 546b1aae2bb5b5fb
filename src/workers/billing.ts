import { mapInLanes } from '../lanes.js';
import { randomUUID } from 'node:crypto';
import { claimDueContracts, unsubmittedAttempts, type UnsubmittedAttempt } from '../db/billingRows.js';
import { contractRows } from '../db/contractRows.js';
import type { ContractRow } from '../db/schema.js';
import type { AttemptState } from '../domain/billing.js';
import type { Command } from '../domain/commands/registry.js';
import { changeContract } from '../services/changeContract.js';
import type { ServiceContext } from '../services/context.js';
import { BILLING_ACTOR } from '../services/recordBillingOutcome.js';
import { submitBillingAttempt } from '../services/submitBillingAttempt.js';
import { Worker, type WorkerLog } from './worker.js';

/** Contracts claimed per statement. */
const BATCH = 500;
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
 * scheduled retry has come), through the change path, then hands the attempts to the gateway.
 *
 * Per round, batch after batch: one statement claims up to a batch of due contracts (SKIP LOCKED, so workers on other
 * instances take other contracts); each becomes a `bill` (an attempt, pending) or, for a cycle later than
 * `maxLateMs`, a `billing_missed`, written by the change path's batched statement (a group commit: one statement for
 * many contracts, their events, their attempts); then the new attempts go to the gateway, `concurrency` at a time,
 * while the next batch is claimed.
 * Exactly one attempt per cycle: a contract changed since it was read (an action committed first) is planned again
 * from its row, where it is no longer due, and the attempts' unique key refuses a second one whatever happens. An
 * attempt that a crash left between the commit and the gateway is handed over again, with the same idempotency key.
 */
export class BillingWorker extends Worker {
  /** Totals since start, for /metrics and the logs. */
  readonly stats = { ticks: 0, attempted: 0, missed: 0, submitted: 0, submitFailures: 0, failures: 0 };

  constructor(
    private readonly ctx: ServiceContext,
    private readonly opts: BillingWorkerOptions,
  ) {
    super('billing', opts.intervalMs, opts.log);
  }

  /** One round: bills everything due now, then hands over what a crash left. Returns what it did. */
  async tick(): Promise<{ attempted: number; missed: number; submitted: number }> {
    const batch = this.opts.batchSize ?? BATCH;
    const done = { attempted: 0, missed: 0, submitted: 0 };
    // The attempts of one batch are handed over while the next batch is claimed and committed: the gateway's wait and
    // the database's work overlap, and at most one batch is being handed over at a time.
    let handing: Promise<void> = Promise.resolve();
    try {
      for (;;) {
        const now = this.ctx.clock.now();
        const due = await claimDueContracts(this.ctx.db, { now, until: new Date(now.getTime() + CLAIM_MS), limit: batch, shopId: this.opts.shopId });
        if (!due.length) break;
        // At most `concurrency` changes in flight, not the whole batch: the requests the instance serves meanwhile share
        // its database connections, and wait behind tens of changes rather than hundreds.
        const planned = await mapInLanes(due, this.opts.concurrency, (row) => this.bill(row));
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
        if (due.length < batch) break;
      }
      await handing;
      done.submitted += await this.resubmit();
    } catch (err) {
      this.stats.failures++;
      await handing;
      throw err;
    } finally {
      this.stats.ticks++;
      this.stats.attempted += done.attempted;
      this.stats.missed += done.missed;
      this.stats.submitted += done.submitted;
    }
    if (done.attempted || done.missed) this.log?.info(done, 'billed due contracts');
    return done;
  }

  /** One due contract: its attempt (or its missed cycle) through the change path. */
  private async bill(row: ContractRow): Promise<{ kind: 'attempted'; contract: ContractRow; attempt: AttemptState } | { kind: 'missed' } | null> {
    const now = this.ctx.clock.now();
    const { maxLateMs } = this.opts;
    const scheduled = row.billingNextAttemptAt === null;
    const late = scheduled && now.getTime() - row.nextBillingDate.getTime() > maxLateMs;
    const attemptId = randomUUID();
    const command: Command = late ? { name: 'billing_missed', input: { maxLateMs } } : { name: 'bill', input: { attemptId, maxLateMs } };
    try {
      const committed = await changeContract(this.ctx, { shopId: row.shopId, contractId: row.id, read: row, request: { command, actor: BILLING_ACTOR } });
      if (!committed?.changed) return null;
      if (late) return { kind: 'missed' };
      const attempt = committed.row.billingLastAttempt;
      return attempt?.id === attemptId ? { kind: 'attempted', contract: committed.row, attempt } : null;
    } catch (err) {
      // One contract's trouble (a platform refusal, say) does not stop the others; its claim lapses and it is tried again.
      this.log?.error({ err: { message: (err as Error).message }, contractId: row.id }, 'could not bill a contract');
      return null;
    }
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
