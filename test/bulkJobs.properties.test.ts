import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ContractRow } from '../src/db/schema.js';
import { addInterval } from '../src/domain/time.js';
import { BulkJobWorker } from '../src/workers/bulkJobs.js';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { Crash, crashingDatabase } from './support/crash.js';
import { API, contractRow, insertContract, sql } from './support/fixtures.js';
import { createJob, expectCountsAddUp, jobOf, postJob, resultsOf, runJobs } from './support/bulk.js';

/**
 * A bulk job changes each of its contracts at most once, whatever happens meanwhile (docs/product.md §15): random jobs
 * over random contracts, with workers that die between any two of their statements (what they had begun is rolled
 * back; what they committed stays; their claims lapse and another worker takes over), cancels, single actions on the
 * same contracts before, during and after the job's turn, and billing attempts pending and then settled. After every
 * run: at most one event of the job per contract, an event for exactly the items that succeeded (the one their result
 * names), counts that add up to what the job matched, a preview that changed nothing, and every contract nothing
 * else touched exactly as the job's change applied once would leave it (or as it was, where the job did not change
 * it).
 */

const RUNS = Number(process.env.PROPERTY_RUNS ?? 200);
const START = new Date('2026-11-22T10:00:00.000Z');

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const STATUSES = ['ACTIVE', 'ACTIVE', 'PAUSED', 'CANCELLED', 'FAILED'] as const;
const VARIANTS = ['51', '61', '77'] as const;
const contractArb = fc.record({
  status: fc.constantFrom(...STATUSES),
  lines: fc.uniqueArray(fc.record({ variantId: fc.constantFrom(...VARIANTS), quantity: fc.integer({ min: 1, max: 3 }) }), { minLength: 1, maxLength: 3, selector: (l) => l.variantId }),
});
const changeArb = fc.constantFrom(
  { action: 'pause' },
  { action: 'resume' },
  { action: 'cancel', reason: 'closing the warehouse' },
  { action: 'skip' },
  { operations: [{ op: 'set_quantity', variantId: '51', quantity: 3 }] },
  { operations: [{ op: 'set_price', variantId: '51', price: '26.50' }] },
  { operations: [{ op: 'remove_variant', variantId: '61' }] },
);
const stepArb = (n: number) =>
  fc.oneof(
    { weight: 4, arbitrary: fc.record({ kind: fc.constant('tick' as const), batch: fc.integer({ min: 1, max: 3 }) }) },
    { weight: 4, arbitrary: fc.record({ kind: fc.constant('crash' as const), at: fc.integer({ min: 1, max: 14 }), batch: fc.integer({ min: 1, max: 3 }) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('action' as const), contract: fc.nat(n - 1), action: fc.constantFrom('skip', 'pause', 'resume'), together: fc.boolean() }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancel' as const) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('bill' as const), contract: fc.nat(n - 1) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('outcomes' as const) }) },
  );
const scenarioArb = fc
  .array(contractArb, { minLength: 1, maxLength: 5 })
  .chain((contracts) => fc.record({ contracts: fc.constant(contracts), change: changeArb, preview: fc.boolean(), steps: fc.array(stepArb(contracts.length), { maxLength: 8 }) }));

type Scenario = typeof scenarioArb extends fc.Arbitrary<infer T> ? T : never;

/** What the job's change, applied once, leaves of a contract the job changed (the fields the change is about). */
function expectApplied(change: Record<string, unknown>, before: ContractRow, after: ContractRow): void {
  if ('operations' in change) {
    const op = (change.operations as { op: string; variantId: string; quantity?: number; price?: string }[])[0];
    const lines = before.lines
      .filter((l) => !(op.op === 'remove_variant' && l.variantId === op.variantId))
      .map((l) => (l.variantId !== op.variantId ? l : op.op === 'set_quantity' ? { ...l, quantity: op.quantity } : op.op === 'set_price' ? { ...l, price: { ...l.price, amount: op.price } } : l));
    expect(after.lines.map((l) => [l.variantId, l.quantity, l.price.amount])).toEqual(lines.map((l) => [l.variantId, l.quantity, l.price.amount]));
    expect(after.status).toBe(before.status);
    return;
  }
  const action = change.action as string;
  const status = { pause: 'PAUSED', resume: 'ACTIVE', cancel: 'CANCELLED', skip: before.status }[action];
  expect(after.status).toBe(status);
  if (action === 'skip') expect(after.nextBillingDate).toEqual(addInterval(before.nextBillingDate, before.billingInterval, before.billingIntervalCount));
  else expect(after.nextBillingDate).toEqual(before.nextBillingDate);
  expect(after.lines).toEqual(before.lines);
}

async function run(s: Scenario): Promise<void> {
  t.clock.set(START);
  const { key, shopId } = await t.shopWithKey();
  const rows: ContractRow[] = [];
  for (const c of s.contracts) {
    rows.push(
      await insertContract(t, shopId, {
        status: c.status,
        pausedAt: c.status === 'PAUSED' ? START : null,
        cancelledAt: c.status === 'CANCELLED' ? START : null,
        lines: c.lines.map((l) => ({ title: `Variant ${l.variantId}`, variantId: l.variantId, quantity: l.quantity, price: { amount: '10.00', currencyCode: 'EUR' } })),
      }),
    );
  }
  const ids = rows.map((r) => r.id);
  const created = await createJob(t, key, { selector: { contractIds: ids }, change: s.change, preview: s.preview });
  expect(created.statusCode, created.body).toBe(201);
  const jobId = created.json().bulkJob.id as string;
  /** Contracts something besides the job changed (a single action, a billing attempt): their end state is not the job's alone. */
  const touched = new Set<string>();
  let started = !s.preview;
  let cancelled = false;

  const bulkEvents = () => sql<{ contractId: string; id: string }>(t, `SELECT contract_id::text AS "contractId", id::text AS id FROM contract_events WHERE actor_type = 'bulk_job' AND actor_id = $1`, [jobId]);
  const step = async (st: Scenario['steps'][number]) => {
    switch (st.kind) {
      case 'tick':
        await new BulkJobWorker(t.ctx, { intervalMs: 60_000, batchSize: st.batch }).tick();
        break;
      case 'crash': {
        const db = crashingDatabase(t.ctx.db, st.at);
        try {
          await new BulkJobWorker({ ...t.ctx, db }, { intervalMs: 60_000, batchSize: st.batch }).tick();
        } catch (err) {
          if (!(err instanceof Crash) && !db.crashed()) throw err;
        }
        // The next worker starts after the dead one's claims have lapsed.
        if (db.crashed()) t.clock.advance(61_000);
        break;
      }
      case 'action': {
        const id = ids[st.contract];
        const act = () => t.inject({ method: 'POST', url: `${API}/${id}/actions`, headers: bearer(key), payload: { action: st.action } });
        const [res] = await Promise.all([act(), st.together ? new BulkJobWorker(t.ctx, { intervalMs: 60_000, batchSize: 2 }).tick() : null]);
        if (res.statusCode === 200) touched.add(id);
        else expect([409, 422], res.body).toContain(res.statusCode);
        break;
      }
      case 'cancel': {
        const res = await postJob(t, key, jobId, 'cancel');
        if (res.statusCode === 200) cancelled = true;
        else expect(res.json().error.code).toBe('invalid_state');
        break;
      }
      case 'bill': {
        const id = ids[st.contract];
        const res = await t.inject({ method: 'POST', url: `${API}/${id}/actions`, headers: bearer(key), payload: { action: 'bill_now' } });
        if (res.statusCode === 200) touched.add(id);
        break;
      }
      case 'outcomes':
        await t.billing.scheduler.runAll();
        break;
    }
    expectCountsAddUp(await jobOf(t, key, jobId));
  };

  for (const st of s.steps) {
    await step(st);
    const job = await jobOf(t, key, jobId);
    if (!started && job.status === 'previewed' && !cancelled) {
      // The preview changed nothing: no event of the job.
      expect(await bulkEvents()).toEqual([]);
      started = (await postJob(t, key, jobId, 'start')).statusCode === 200;
    }
  }
  // Whatever is left: every claim lapses, outcomes arrive, the job runs to its end.
  t.clock.advance(61_000);
  await t.billing.scheduler.runAll();
  await runJobs(t);
  let job = await jobOf(t, key, jobId);
  if (job.status === 'previewed' && !cancelled) {
    expect(await bulkEvents()).toEqual([]);
    await postJob(t, key, jobId, 'start');
    started = true;
    await runJobs(t);
    t.clock.advance(3000);
    await t.billing.scheduler.runAll();
    await runJobs(t);
    job = await jobOf(t, key, jobId);
  }
  expect(['completed', 'cancelled']).toContain(job.status);
  expectCountsAddUp(job);
  expect(job.counts.pending).toBe(0);

  const events = await bulkEvents();
  const perContract = new Map<string, string[]>();
  for (const e of events) perContract.set(e.contractId, [...(perContract.get(e.contractId) ?? []), e.id]);
  // At most once per job and contract.
  for (const [, list] of perContract) expect(list).toHaveLength(1);
  const results = await resultsOf(t, key, jobId);
  expect(results).toHaveLength(ids.length);
  // A preview cancelled before it was started changed nothing: its succeeded items only said what would succeed.
  const applied = started;
  if (!applied) expect(events).toEqual([]);
  for (const r of results) {
    const mine = perContract.get(r.contractId) ?? [];
    if (r.status === 'succeeded' && applied) expect(mine).toEqual([r.eventId]);
    else expect(mine).toEqual([]);
    if (touched.has(r.contractId)) continue;
    const before = rows.find((x) => x.id === r.contractId)!;
    const after = await contractRow(t, r.contractId);
    if (r.status === 'succeeded' && applied) expectApplied(s.change, before, after);
    else expect({ status: after.status, lines: after.lines, next: after.nextBillingDate }).toEqual({ status: before.status, lines: before.lines, next: before.nextBillingDate });
  }
}

describe('a bulk job changes each contract at most once, whatever happens meanwhile', () => {
  it(`holds for ${RUNS} random jobs, crashes, cancels, single actions and billing attempts`, async () => {
    await fc.assert(fc.asyncProperty(scenarioArb, run), { numRuns: RUNS });
  }, 600_000);
});
