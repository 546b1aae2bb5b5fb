import { Batcher, perDatabase } from '../db/batcher.js';
import { isDatabaseUnavailable, type Database } from '../db/client.js';
import type { PaymentBehaviour } from '../db/schema.js';
import type { BillingOutcome } from '../domain/billing.js';
import { unreachable } from '../domain/unreachable.js';
import type { BillingAttemptRequest, BillingGateway } from './billingGateway.js';
import type { OutcomeReport } from './recordBillingOutcome.js';

/**
 * Standalone mode's payment gateway: every contract has a simulated payment method whose behaviour
 * (`payment_behaviour`, set with `svc contracts seed --payment` and `svc contracts set-payment`) decides the outcome:
 * succeeds (an order #1001, #1002, … per shop, for the attempt's amount), insufficient_funds, card_declined,
 * expired_card (a hard decline), requires_action (the customer must authenticate) or out_of_stock. Like a real
 * gateway it answers at once with a reference and tells the outcome later (`delayMs`, about a second), through the
 * one outcome entry point. The behaviour is read when the outcome is decided, so a change made meanwhile counts.
 *
 * Idempotent on the attempt's key: a second call answers the same reference and tells the outcome again, which the
 * outcome path ignores once recorded. (An order number drawn for an outcome told twice is not given again: the
 * numbers may then have a gap, never a duplicate.)
 */

/** Runs work later: timers in production, a hand-driven queue in tests. */
export type Scheduler = { after(ms: number, run: () => Promise<void>): void };

export const timerScheduler: Scheduler = {
  after(ms, run) {
    setTimeout(() => void run(), ms).unref();
  },
};

/** A scheduler whose work runs when a test says so (`runAll`), so tests wait on events, not on the clock. */
export class ManualScheduler implements Scheduler {
  private queue: (() => Promise<void>)[] = [];
  after(_ms: number, run: () => Promise<void>): void {
    this.queue.push(run);
  }
  get size(): number {
    return this.queue.length;
  }
  /** Runs everything queued (and what that queues) and waits for it. */
  async runAll(): Promise<number> {
    let n = 0;
    while (this.queue.length) {
      const batch = this.queue.splice(0);
      n += batch.length;
      await Promise.all(batch.map((run) => run()));
    }
    return n;
  }
}

const BEHAVIOURS = `
  SELECT q.ord::int AS ord, c.payment_behaviour AS behaviour
    FROM unnest($1::bigint[]) WITH ORDINALITY AS q(id, ord) JOIN subscription_contracts c ON c.id = q.id`;

// Draws n numbers per shop in one statement: the counter moves by the count asked, and each caller gets its own.
const ORDER_NUMBERS = `
  WITH want AS (SELECT shop_id, count(*)::bigint AS n FROM unnest($1::bigint[]) AS t(shop_id) GROUP BY shop_id),
  bumped AS (
    INSERT INTO shop_order_counters AS o (shop_id, last_number) SELECT shop_id, 1000 + n FROM want
    ON CONFLICT (shop_id) DO UPDATE SET last_number = o.last_number + (EXCLUDED.last_number - 1000)
    RETURNING o.shop_id, o.last_number)
  SELECT b.shop_id::text AS "shopId", (b.last_number - w.n + 1)::text AS first FROM bumped b JOIN want w ON w.shop_id = b.shop_id`;

const gatewayRows = perDatabase((db: Database) => {
  const opts = { failsEveryInput: isDatabaseUnavailable, maxBatch: 1000 };
  return {
    behaviour: new Batcher<string, PaymentBehaviour | undefined>(async (ids) => {
      const rows = await db.prepared<{ ord: number; behaviour: PaymentBehaviour }>('svc_test_gateway_behaviours', BEHAVIOURS, [ids]);
      const out = new Array<PaymentBehaviour | undefined>(ids.length);
      for (const r of rows) out[r.ord - 1] = r.behaviour;
      return out;
    }, opts),
    orderNumber: new Batcher<string, number>(async (shopIds) => {
      const rows = await db.prepared<{ shopId: string; first: string }>('svc_test_gateway_order_numbers', ORDER_NUMBERS, [shopIds]);
      const next = new Map(rows.map((r) => [r.shopId, Number(r.first)]));
      return shopIds.map((s) => {
        const n = next.get(s)!;
        next.set(s, n + 1);
        return n;
      });
    }, opts),
  };
});

type Told = { shopId: string; contractId: string; attemptId: string; amount: string; currencyCode: string };

export class TestGateway implements BillingGateway {
  /**
   * Its outcomes are told by the process that took the attempt, about a second later: one not told within half a
   * minute was lost with that process (a crash, a kill), so the attempt is handed over again.
   */
  readonly outcomeWithinMs = 30_000;
  private readonly delayMs: number;
  private readonly scheduler: Scheduler;

  constructor(
    private readonly deps: { db: Database; record(report: OutcomeReport): Promise<unknown>; warn?: (obj: object, msg: string) => void },
    opts: { delayMs?: number; scheduler?: Scheduler } = {},
  ) {
    this.delayMs = opts.delayMs ?? 1000;
    this.scheduler = opts.scheduler ?? timerScheduler;
  }

  async createAttempt(req: BillingAttemptRequest): Promise<{ reference: string }> {
    const reference = `test_${req.idempotencyKey}`;
    // Only what the outcome needs waits for it (not the contract): a storm keeps thousands waiting at once.
    const attempt: Told = { shopId: req.shopId, contractId: req.contract.id, attemptId: req.attemptId, amount: req.amount, currencyCode: req.currencyCode };
    this.scheduler.after(this.delayMs, () =>
      this.tell(attempt).catch((err: unknown) => {
        // Not told: the attempt stays pending, and the worker asks again later with the same key.
        this.deps.warn?.({ err: { message: (err as Error).message }, attemptId: req.attemptId }, 'test gateway could not record an outcome');
      }),
    );
    return { reference };
  }

  private async tell(req: Told): Promise<void> {
    const rows = gatewayRows(this.deps.db);
    const behaviour = (await rows.behaviour.load(req.contractId)) ?? 'succeeds';
    const outcome = await this.outcomeOf(behaviour, req, rows.orderNumber);
    await this.deps.record({ shopId: req.shopId, attemptId: req.attemptId, outcome });
  }

  private async outcomeOf(behaviour: PaymentBehaviour, req: Told, orders: Batcher<string, number>): Promise<BillingOutcome> {
    const failed = (errorCode: Extract<BillingOutcome, { kind: 'failed' }>['errorCode'], message: string): BillingOutcome => ({
      kind: 'failed',
      errorCode,
      platformErrorCode: errorCode,
      message: `${message} (test gateway)`,
    });
    switch (behaviour) {
      case 'succeeds': {
        const n = await orders.load(req.shopId);
        return { kind: 'succeeded', order: { id: String(n), name: `#${n}`, amount: req.amount, currencyCode: req.currencyCode } };
      }
      case 'insufficient_funds':
        return failed('insufficient_funds', 'The card has insufficient funds.');
      case 'card_declined':
        return failed('card_declined', 'The card was declined.');
      case 'expired_card':
        return failed('expired_card', 'The card has expired.');
      case 'out_of_stock':
        return failed('out_of_stock', 'A line of the order is out of stock.');
      case 'requires_action':
        return { kind: 'action_required', nextActionUrl: `https://example.com/test-gateway/authenticate/${req.attemptId}` };
      default:
        return unreachable(behaviour);
    }
  }
}
