import { adminPrincipal } from '../src/services/principal.js';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../src/db/client.js';
import type { BillingOutcome } from '../src/domain/billing.js';
import type { BillingAttemptRequest, BillingGateway } from '../src/services/billingGateway.js';
import { setBillingPolicy } from '../src/services/billingPolicy.js';
import { createServiceContext, type ServiceContext } from '../src/services/context.js';
import { recordBillingOutcome } from '../src/services/recordBillingOutcome.js';
import { BillingWorker } from '../src/workers/billing.js';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { API, insertContract, sql } from './support/fixtures.js';

/**
 * The renewal property: whatever the interleaving of time passing, due dates, actions through the API (pause,
 * resume, cancel, skip, reschedule, bill_now), outcomes delivered at once, late, twice or never, a crash between the
 * gateway's call and svc recording its answer, and two workers (on two connection pools) billing the same shop at
 * once, (1) no cycle is paid twice and a contract never has two attempts in flight, (2) no attempt is made while the
 * contract is not ACTIVE, (3) no worker ever fails or collides on an attempt, (4) the API never answers 500, and
 * once the outcomes are out and the workers have caught up, (5) every due cycle was billed or recorded missed:
 * no ACTIVE contract is left due, and no attempt is left pending. One shop per run.
 */

const RUNS = Number(process.env.PROPERTY_RUNS ?? 200);
const CONTRACTS = 3;
const MINUTE = 60_000;
const DAY = 86_400_000;
const MAX_LATE = 3 * DAY;

type Action = { action: 'pause'; resumeInMinutes?: number } | { action: 'resume' } | { action: 'cancel' } | { action: 'skip' } | { action: 'reschedule'; inMinutes: number } | { action: 'bill_now'; again: boolean };
type OutcomeKind = 'succeeded' | 'insufficient_funds' | 'expired_card' | 'out_of_stock' | 'action_required';
type Step =
  | { kind: 'advance'; minutes: number }
  | { kind: 'tick'; w: 0 | 1 }
  | { kind: 'tickBoth' }
  | { kind: 'deliver'; i: number; outcome: OutcomeKind; twice: boolean }
  | { kind: 'drop'; i: number }
  | { kind: 'crashNext' }
  | { kind: 'act'; c: number; act: Action };

const outcomeKind = fc.constantFrom<OutcomeKind>('succeeded', 'succeeded', 'insufficient_funds', 'expired_card', 'out_of_stock', 'action_required');
const action: fc.Arbitrary<Action> = fc.oneof(
  fc.record({ action: fc.constant('pause' as const), resumeInMinutes: fc.option(fc.integer({ min: 1, max: 3 * 24 * 60 }), { nil: undefined }) }, { requiredKeys: ['action'] }),
  fc.constant({ action: 'resume' as const }),
  fc.constant({ action: 'cancel' as const }),
  fc.constant({ action: 'skip' as const }),
  fc.record({ action: fc.constant('reschedule' as const), inMinutes: fc.integer({ min: 1, max: 10 * 24 * 60 }) }),
  // again: true as well, so bill_now after one that succeeded still bills (a second cycle), as well as being refused.
  fc.record({ action: fc.constant('bill_now' as const), again: fc.boolean() }),
);
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('advance' as const), minutes: fc.oneof(fc.integer({ min: 1, max: 60 }), fc.integer({ min: 60, max: 5 * 24 * 60 })) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('tick' as const), w: fc.constantFrom<0 | 1>(0, 1) }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'tickBoth' as const }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('deliver' as const), i: fc.nat(), outcome: outcomeKind, twice: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('drop' as const), i: fc.nat() }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'crashNext' as const }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('act' as const), c: fc.integer({ min: 0, max: CONTRACTS - 1 }), act: action }) },
);
const policy = fc.record({
  paymentRetries: fc.array(fc.constantFrom('PT10M', 'PT1H', 'P1D'), { maxLength: 3 }),
  inventoryRetries: fc.record({ every: fc.constantFrom('PT30M', 'P1D'), max: fc.integer({ min: 0, max: 3 }) }),
  finalAction: fc.constantFrom('fail', 'pause', 'cancel', 'skip'),
});

/**
 * A payment gateway under the test's control: it keeps each attempt it was handed until a step tells its outcome
 * (or drops it: never told), creates at most one charge per idempotency key, and can lose its answer once (the crash).
 */
class ScriptedGateway implements BillingGateway {
  queue: BillingAttemptRequest[] = [];
  charges = new Map<string, number>();
  crashNext = false;
  async createAttempt(req: BillingAttemptRequest) {
    if (!this.charges.has(req.idempotencyKey)) this.charges.set(req.idempotencyKey, 0);
    // Asked again with a key it knows: the same attempt, told again if it was never told (a dropped outcome).
    if (!this.queue.some((q) => q.idempotencyKey === req.idempotencyKey)) this.queue.push(req);
    this.charges.set(req.idempotencyKey, this.charges.get(req.idempotencyKey)! + 1);
    if (this.crashNext) {
      this.crashNext = false;
      throw new Error('the answer was lost');
    }
    return { reference: `scripted_${req.idempotencyKey}` };
  }
}

function outcomeOf(kind: OutcomeKind, req: BillingAttemptRequest): BillingOutcome {
  switch (kind) {
    case 'succeeded':
      return { kind: 'succeeded', order: { id: req.attemptId, name: '#1', amount: req.amount, currencyCode: req.currencyCode } };
    case 'action_required':
      return { kind: 'action_required', nextActionUrl: null };
    case 'expired_card':
    case 'insufficient_funds':
    case 'out_of_stock':
      return { kind: 'failed', errorCode: kind, platformErrorCode: kind, message: null };
  }
}

let t: TestApp;
let pool: Database;
beforeAll(async () => {
  t = await startTestApp();
  pool = await t.database.connectAgain();
});
afterAll(async () => {
  if (pool !== t.database.db) await pool.close?.();
  await t.close();
});

describe('renewals under any interleaving', () => {
  it(
    'bill each due cycle at most once, only while ACTIVE, and every due cycle in the end',
    async () => {
      await fc.assert(
        fc.asyncProperty(policy, fc.array(fc.integer({ min: -6 * 24 * 60, max: 3 * 24 * 60 }), { minLength: CONTRACTS, maxLength: CONTRACTS }), fc.array(step, { minLength: 5, maxLength: 25 }), async (pol, offsets, steps) => {
          t.clock.set('2026-11-22T10:00:00.000Z');
          const shop = await t.shopWithKey();
          const gateway = new ScriptedGateway();
          const errors: string[] = [];
          const log = { info: () => {}, error: (o: object, m: string) => errors.push(`${m} ${JSON.stringify(o)}`) };
          const ctxOf = (db: Database): ServiceContext => {
            const ctx = createServiceContext({ db, clock: t.clock, freeUntil: null });
            ctx.billing = { gateway, maxLateMs: MAX_LATE };
            return ctx;
          };
          const ctxs = [ctxOf(t.ctx.db), ctxOf(pool)];
          const workers = ctxs.map((ctx) => new BillingWorker(ctx, { intervalMs: 1000, maxLateMs: MAX_LATE, concurrency: 3, batchSize: 2, shopId: shop.shopId, log }));
          await setBillingPolicy({ ctx: ctxs[0], input: { principal: adminPrincipal(shop.shopId), body: pol } });
          const ids: string[] = [];
          const intervals = ['DAY', 'WEEK', 'MONTH'] as const;
          for (let i = 0; i < CONTRACTS; i++) {
            ids.push((await insertContract(t, shop.shopId, { nextBillingDate: new Date(t.clock.now().getTime() + offsets[i] * MINUTE), billingInterval: intervals[i % 3] })).id);
          }
          const deliver = async (req: BillingAttemptRequest, kind: OutcomeKind) => {
            await recordBillingOutcome(ctxs[0], { shopId: req.shopId, attemptId: req.attemptId, outcome: outcomeOf(kind, req) });
          };
          // The API must answer every action; the app's own context bills bill_now through the scripted gateway.
          t.ctx.billing = { gateway, maxLateMs: MAX_LATE };

          for (const s of steps) {
            switch (s.kind) {
              case 'advance':
                t.clock.advance(s.minutes * MINUTE);
                break;
              case 'tick':
                await workers[s.w].tick();
                break;
              case 'tickBoth':
                await Promise.all(workers.map((w) => w.tick()));
                break;
              case 'deliver': {
                if (!gateway.queue.length) break;
                const req = gateway.queue[s.i % gateway.queue.length];
                await deliver(req, s.outcome);
                if (s.twice) await deliver(req, s.outcome);
                gateway.queue = gateway.queue.filter((q) => q !== req);
                break;
              }
              case 'drop':
                if (gateway.queue.length) gateway.queue.splice(s.i % gateway.queue.length, 1);
                break;
              case 'crashNext':
                gateway.crashNext = true;
                break;
              case 'act': {
                const a = s.act;
                const now = t.clock.now().getTime();
                const body =
                  a.action === 'pause'
                    ? { action: 'pause', ...(a.resumeInMinutes && { resumeAt: new Date(now + a.resumeInMinutes * MINUTE).toISOString() }) }
                    : a.action === 'reschedule'
                      ? { action: 'reschedule', nextBillingDate: new Date(now + a.inMinutes * MINUTE).toISOString() }
                      : a.action === 'bill_now'
                        ? { action: 'bill_now', ...(a.again && { again: true }) }
                        : { action: a.action };
                const res = await t.inject({ method: 'POST', url: `${API}/${ids[s.c]}/actions`, headers: bearer(shop.key), payload: body });
                expect([200, 409], res.body).toContain(res.statusCode);
                break;
              }
            }
          }

          // Everything out: outcomes told (success), dropped ones asked for again, workers caught up.
          gateway.crashNext = false;
          for (let round = 0; round < 40; round++) {
            t.clock.advance(11 * MINUTE);
            const done = await workers[round % 2].tick();
            const told = gateway.queue.splice(0);
            for (const req of told) await deliver(req, 'succeeded');
            if (!told.length && !done.attempted && !done.missed && !done.submitted) break;
          }

          const now = t.clock.now();
          const attempts = await sql<{ contract_id: string; cycle_date: Date; status: string; idempotency_key: string }>(
            t,
            `SELECT contract_id::text, cycle_date, status, idempotency_key FROM billing_attempts WHERE shop_id = $1`,
            [shop.shopId],
          );
          // (1) a cycle is paid at most once; one attempt in flight at most (none, now).
          const paid = attempts.filter((a) => a.status === 'succeeded').map((a) => `${a.contract_id}@${a.cycle_date.getTime()}`);
          expect(new Set(paid).size).toBe(paid.length);
          expect(attempts.filter((a) => a.status === 'pending')).toEqual([]);
          // (2) never while not ACTIVE: every attempt was recorded from and to ACTIVE.
          const attempted = await sql<{ from_status: string; to_status: string }>(t, `SELECT from_status, to_status FROM contract_events WHERE shop_id = $1 AND type = 'billing.attempted'`, [shop.shopId]);
          expect(attempted.length).toBe(attempts.length);
          for (const e of attempted) expect([e.from_status, e.to_status]).toEqual(['ACTIVE', 'ACTIVE']);
          // (3) no worker failed to plan or commit (a lost gateway answer is the crash the steps make).
          expect(errors.filter((e) => !e.startsWith('could not hand a billing attempt to the gateway'))).toEqual([]);
          const keys = new Set(attempts.map((a) => a.idempotency_key));
          for (const k of gateway.charges.keys()) expect(keys.has(k)).toBe(true);
          // (5) nothing left due.
          const due = await sql<{ id: string }>(t, `SELECT id::text FROM subscription_contracts WHERE shop_id = $1 AND billing_due_at <= $2`, [shop.shopId, now]);
          expect(due).toEqual([]);
          // Versions: every event of a contract has its own.
          const versions = await sql<{ n: number; d: number }>(t, `SELECT count(*)::int AS n, count(DISTINCT (contract_id, contract_version))::int AS d FROM contract_events WHERE shop_id = $1`, [shop.shopId]);
          expect(versions[0].n).toBe(versions[0].d);
        }),
        { numRuns: RUNS },
      );
    },
    30 * 60_000,
  );
});
