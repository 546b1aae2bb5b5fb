import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setShopPlan } from '../src/services/shops.js';
import { BulkJobWorker, PLATFORM_LANES } from '../src/workers/bulkJobs.js';
import { bearer } from './support/app.js';
import { createJob, expectCountsAddUp, jobOf, postJob, resultsOf, runJobs } from './support/bulk.js';
import { eventRows, sql } from './support/fixtures.js';
import { startPlatform, type InstalledShop, type PlatformHarness } from './support/platform.js';
import { CostBucket } from './support/shopify/cost.js';
import type { Clock } from './support/shopify/store.js';

/**
 * Bulk jobs in platform mode (docs/product.md §15, §9): each item goes through the platform port (a status mutation
 * per contract, a draft per edit), paced by the shop's cost bucket so that no item fails on THROTTLED and the bucket's
 * restore rate is used; a preview commits nothing on the platform; an uninstall ends the shop's job `failed`.
 * What the platform received is read from the stand-in's log; the job from the API.
 */

let p: PlatformHarness;
beforeAll(async () => {
  // The calls are counted: a call that outlived svc's timeout on a busy machine would be sent again (safely, but
  // twice), so the timeout is generous here.
  p = await startPlatform({ timeoutMs: 10_000 });
});
afterAll(async () => {
  await p?.close();
});

/**
 * The shop's bucket on the stand-in, recording every request's take: when (the stand-in's clock), the points it asked
 * for, whether it was let through (false: THROTTLED), the level before it and the points spent before it (taken less
 * refunded).
 */
class MeteredBucket extends CostBucket {
  readonly takes: { at: number; cost: number; ok: boolean; level: number; spent: number }[] = [];
  constructor(
    maximumAvailable: number,
    restoreRate: number,
    private readonly meterClock: Clock,
  ) {
    super(maximumAvailable, restoreRate, meterClock);
  }
  override take(cost: number): boolean {
    const level = this.status().currentlyAvailable;
    const spent = this.spent;
    const ok = super.take(cost);
    this.takes.push({ at: this.meterClock.now().getTime(), cost, ok, level, spent });
    return ok;
  }
}

/** A contract's events but the platform's own (its creation on the platform, mirrored). */
const ownEvents = async (id: string) => (await eventRows(p.t, id)).filter((e) => e.actorType !== 'platform');
const gid = (id: string) => `gid://shopify/SubscriptionContract/${id}`;
/** The GraphQL root fields svc asked of the shop from request number `from` on (throttled requests ran none). */
const fieldsSent = (domain: string, from: number) =>
  p.standIn.requests
    .slice(from)
    .filter((r) => r.endpoint === 'graphql' && r.shop === domain)
    .flatMap((r) => (r.rootCalls ?? []).map((c) => c.field));

describe('a job runs each contract through the platform', () => {
  it('a pause: one subscriptionContractPause per contract, paced by the bucket: no THROTTLED answer, ≥ 90 % of its restore rate used', async () => {
    const CONTRACTS = 30;
    const s = await p.install({ contracts: CONTRACTS + 1 });
    const [warmUp, ...ids] = s.contractIds;
    // A small bucket: little more than twice a call's requested cost (a pause asks for about 120 points and uses 20),
    // so that pacing that waits longer than it must leaves it full, its restore rate lost, within two seconds.
    const RESTORE_RATE = 100;
    const bucket = new MeteredBucket(300, RESTORE_RATE, p.clock);
    p.standIn.shop(s.domain).bucket = bucket;
    // svc learns a call's cost from the platform's answers; before the first, it guesses. One pause of another
    // contract first, so that the job meets svc as it runs in the long run.
    const single = await p.t.inject({ method: 'POST', url: `/api/v1/subscription-contracts/${warmUp}/actions`, headers: bearer(s.key), payload: { action: 'pause' } });
    expect(single.statusCode, single.body).toBe(200);
    const jobTakes = bucket.takes.length;
    const from = p.standIn.requests.length;

    const res = await createJob(p.t, s.key, { selector: { contractIds: ids }, change: { action: 'pause' } });
    expect(res.statusCode, res.body).toBe(201);
    const id = res.json().bulkJob.id;
    await runJobs(p.t);

    const job = await jobOf(p.t, s.key, id);
    expect(job).toMatchObject({ status: 'completed', counts: { matched: CONTRACTS, pending: 0, succeeded: CONTRACTS, failed: 0, skipped: 0 } });
    // Each contract once, by its own mutation; nothing else asked of the platform.
    const pauses = p.standIn.calls('subscriptionContractPause', s.domain).map((c) => (c.args as { subscriptionContractId: string }).subscriptionContractId);
    expect(pauses.filter((g) => g !== gid(warmUp)).sort()).toEqual(ids.map(gid).sort());
    expect(fieldsSent(s.domain, from).filter((f) => f !== 'subscriptionContractPause')).toEqual([]);
    for (const c of ids) {
      expect(p.standIn.contract(s.domain, c).status).toBe('PAUSED');
      const events = await eventRows(p.t, c);
      expect(events.map((e) => [e.type, e.actorType, e.actorId])).toEqual([['contract.paused', 'bulk_job', id]]);
    }

    // Never THROTTLED: every call waited for its points.
    const takes = bucket.takes.slice(jobTakes);
    expect(takes.filter((t) => !t.ok)).toEqual([]);
    expect(takes).toHaveLength(CONTRACTS);
    // The restore rate used, from the job's first call to its last (the stand-in's clock): the points spent
    // meanwhile, less what the bucket held less at the end than at the start, against what it restored.
    const [first, last] = [takes[0], takes[takes.length - 1]];
    const restored = (RESTORE_RATE * (last.at - first.at)) / 1000;
    const used = last.spent - first.spent + (last.level - first.level);
    expect(restored, 'the job took so little time that the bucket never paced it').toBeGreaterThan(300);
    expect(used / restored, `${used.toFixed(0)} of ${restored.toFixed(0)} points restored in ${last.at - first.at} ms`).toBeGreaterThanOrEqual(0.9);
  });

  it('before svc knows what a call costs, a call the platform throttles is sent again: no contract fails', async () => {
    const s = await p.install({ contracts: 8 });
    // Room for one cancel (about 120 points asked): the first calls, sent at once with svc's guess of their cost
    // (no cancel has been answered in this process yet), meet THROTTLED.
    const bucket = new MeteredBucket(120, 100, p.clock);
    p.standIn.shop(s.domain).bucket = bucket;
    const res = await createJob(p.t, s.key, { selector: { filter: {} }, change: { action: 'cancel', reason: 'closing the shop' } });
    expect(res.statusCode, res.body).toBe(201);
    await runJobs(p.t);
    expect(await jobOf(p.t, s.key, res.json().bulkJob.id)).toMatchObject({ status: 'completed', counts: { matched: 8, succeeded: 8, failed: 0 } });
    expect(bucket.takes.filter((t) => !t.ok).length, 'no call was throttled: the case is not exercised').toBeGreaterThan(0);
    expect(p.standIn.calls('subscriptionContractCancel', s.domain)).toHaveLength(8);
    for (const c of s.contractIds) expect(p.standIn.contract(s.domain, c).status).toBe('CANCELLED');
  });

  it('an edit: a draft per contract with a line of the variant, committed once; a contract without one makes no draft', async () => {
    const s = await p.install({ contracts: 0 });
    const coffee = p.standIn.createVariant(s.domain, { productTitle: 'Coffee', title: '1kg', price: '24.00' });
    const tea = p.standIn.createVariant(s.domain, { productTitle: 'Tea', title: '250g', price: '9.00' });
    const line = (v: { id: number }, amount: string) => ({ variantId: v.id, quantity: 1, currentPrice: { amount, currencyCode: 'USD' } });
    const withCoffee = [0, 1, 2].map(() => String(p.standIn.createContract(s.domain, { lines: [line(coffee, '24.0')] }).id));
    const teaOnly = String(p.standIn.createContract(s.domain, { lines: [line(tea, '9.0')] }).id);
    await p.settle();
    const from = p.standIn.requests.length;

    const res = await createJob(p.t, s.key, { selector: { filter: {} }, change: { operations: [{ op: 'set_quantity', variantId: String(coffee.id), quantity: 3 }] } });
    expect(res.statusCode, res.body).toBe(201);
    const id = res.json().bulkJob.id;
    await runJobs(p.t);

    expect(await jobOf(p.t, s.key, id)).toMatchObject({ status: 'completed', counts: { matched: 4, succeeded: 3, skipped: 1 }, totals: [{ currencyCode: 'USD', before: '72.00', after: '216.00' }] });
    for (const c of withCoffee) {
      expect(p.standIn.drafts(s.domain, c).map((d) => d.committed)).toEqual([true]);
      expect(p.standIn.contract(s.domain, c).lines.map((l) => l.quantity)).toEqual([3]);
      const events = await ownEvents(c);
      expect(events.map((e) => [e.type, e.actorType, e.actorId])).toEqual([['contract.updated', 'bulk_job', id]]);
    }
    expect(p.standIn.drafts(s.domain, teaOnly)).toEqual([]);
    expect((await resultsOf(p.t, s.key, id)).find((r: { contractId: string }) => r.contractId === teaOnly)).toMatchObject({ status: 'skipped', error: { code: 'no_matching_line' } });
    expect(fieldsSent(s.domain, from).filter((f) => f === 'subscriptionDraftCommit')).toHaveLength(3);
  });
});

describe('an edit whose answer never came', () => {
  it('fails, saying it may have been made, and is never sent again: a line is added once', async () => {
    const s = await p.install({ contracts: 0 });
    const coffee = p.standIn.createVariant(s.domain, { productTitle: 'Coffee', title: '1kg', price: '24.00' });
    const oats = p.standIn.createVariant(s.domain, { productTitle: 'Oat milk', title: 'Default Title', price: '9.80' });
    const ids = [0, 1, 2].map(() => String(p.standIn.createContract(s.domain, { lines: [{ variantId: coffee.id, quantity: 1, currentPrice: { amount: '24.0', currencyCode: 'USD' } }] }).id));
    await p.settle();
    // The first commit is carried out on the platform; its answer is lost.
    p.standIn.faults.add({ kind: 'hangup' }, { operation: 'subscriptionDraftCommit', shop: s.domain, when: 'after' });

    const res = await createJob(p.t, s.key, { selector: { contractIds: ids }, change: { operations: [{ op: 'add_line', variantId: String(oats.id), quantity: 1, price: '9.80' }] } });
    expect(res.statusCode, res.body).toBe(201);
    const id = res.json().bulkJob.id;
    await runJobs(p.t);

    expect(await jobOf(p.t, s.key, id)).toMatchObject({ status: 'completed', counts: { matched: 3, succeeded: 2, failed: 1 } });
    const failed = (await resultsOf(p.t, s.key, id)).filter((r: { status: string }) => r.status === 'failed');
    expect(failed).toHaveLength(1);
    expect(failed[0].error).toMatchObject({ code: 'platform_unavailable', message: expect.stringContaining('may have been made') });
    // Each contract has the line once, the one whose answer was lost too: one commit each, none sent again.
    for (const c of ids) {
      expect(p.standIn.contract(s.domain, c).lines.map((l) => l.title)).toEqual(['Coffee 1kg', 'Oat milk']);
      expect(p.standIn.drafts(s.domain, c).filter((d) => d.committed)).toHaveLength(1);
    }
  });
});

describe('a preview commits nothing on the platform', () => {
  it('a pause is decided from svc’s copy: no call at all, nothing changed; its start then pauses each contract', async () => {
    const s = await p.install({ contracts: 3 });
    const revisions = s.contractIds.map((c) => p.standIn.contract(s.domain, c).revisionId);
    const from = p.standIn.requests.length;
    const res = await createJob(p.t, s.key, { selector: { contractIds: s.contractIds }, change: { action: 'pause' }, preview: true });
    expect(res.statusCode, res.body).toBe(201);
    const id = res.json().bulkJob.id;
    await runJobs(p.t);
    expect(await jobOf(p.t, s.key, id)).toMatchObject({ status: 'previewed', counts: { matched: 3, succeeded: 3 } });
    expect(fieldsSent(s.domain, from)).toEqual([]);
    expect(s.contractIds.map((c) => p.standIn.contract(s.domain, c).revisionId)).toEqual(revisions);
    for (const c of s.contractIds) expect(await eventRows(p.t, c)).toEqual([]);

    expect((await postJob(p.t, s.key, id, 'start')).statusCode).toBe(200);
    await runJobs(p.t);
    expect(await jobOf(p.t, s.key, id)).toMatchObject({ status: 'completed', counts: { succeeded: 3 } });
    expect(p.standIn.calls('subscriptionContractPause', s.domain)).toHaveLength(3);
  });

  it('an edit only the platform can price makes a draft per contract and commits none; its start commits one each', async () => {
    const s = await p.install({ contracts: 0 });
    const coffee = p.standIn.createVariant(s.domain, { productTitle: 'Coffee', title: '1kg', price: '24.00' });
    const oats = p.standIn.createVariant(s.domain, { productTitle: 'Oat milk', title: 'Default Title', price: '9.80' });
    const ids = [0, 1].map(() => String(p.standIn.createContract(s.domain, { lines: [{ variantId: coffee.id, quantity: 1, currentPrice: { amount: '24.0', currencyCode: 'USD' } }] }).id));
    await p.settle();
    const revisions = ids.map((c) => p.standIn.contract(s.domain, c).revisionId);
    const from = p.standIn.requests.length;

    // A line added without a price takes its variant's, which only the platform knows.
    const res = await createJob(p.t, s.key, { selector: { contractIds: ids }, change: { operations: [{ op: 'add_line', variantId: String(oats.id), quantity: 1 }] }, preview: true });
    expect(res.statusCode, res.body).toBe(201);
    const id = res.json().bulkJob.id;
    await runJobs(p.t);
    const previewed = await jobOf(p.t, s.key, id);
    expect(previewed).toMatchObject({ status: 'previewed', counts: { matched: 2, succeeded: 2 }, totals: [{ currencyCode: 'USD', before: '48.00', after: '67.60' }] });
    for (const c of ids) {
      expect(p.standIn.drafts(s.domain, c).map((d) => d.committed)).toEqual([false]);
      expect(await ownEvents(c)).toEqual([]);
    }
    expect(ids.map((c) => p.standIn.contract(s.domain, c).revisionId)).toEqual(revisions);
    expect(fieldsSent(s.domain, from)).not.toContain('subscriptionDraftCommit');

    expect((await postJob(p.t, s.key, id, 'start')).statusCode).toBe(200);
    await runJobs(p.t);
    expect(await jobOf(p.t, s.key, id)).toMatchObject({ status: 'completed', counts: { succeeded: 2 }, totals: [{ currencyCode: 'USD', before: '48.00', after: '67.60' }] });
    for (const c of ids) {
      expect(p.standIn.drafts(s.domain, c).map((d) => d.committed)).toEqual([false, true]);
      expect(p.standIn.contract(s.domain, c).lines.map((l) => l.title)).toEqual(['Coffee 1kg', 'Oat milk']);
      expect((await ownEvents(c)).map((e) => [e.type, e.actorType])).toEqual([['contract.updated', 'bulk_job']]);
    }
  });
});

describe('an uninstall during a running job', () => {
  /** A worker that carries out one batch of `size` items per round. */
  function batchAtATime(size: number) {
    let allowance = 0;
    const worker = new BulkJobWorker(p.t.ctx, { intervalMs: 60_000, batchSize: size, busy: () => allowance-- <= 0 });
    return {
      worker,
      round: () => {
        allowance = 1;
        return worker.tick();
      },
    };
  }

  async function runningJob(s: InstalledShop) {
    const endpoint = await p.t.inject({
      method: 'POST',
      url: '/api/v1/webhook-endpoints',
      headers: { ...bearer(s.key), 'content-type': 'application/json' },
      payload: { url: 'http://127.0.0.1:9/hooks', events: ['bulk_job.finished'] },
    });
    expect(endpoint.statusCode, endpoint.body).toBe(201);
    const res = await createJob(p.t, s.key, { selector: { filter: {} }, change: { action: 'pause' } });
    expect(res.statusCode, res.body).toBe(201);
    return res.json().bulkJob.id as string;
  }

  async function expectFailedUninstalled(s: InstalledShop, id: string, done: number) {
    const [row] = await sql<{ status: string; final_counts: Record<string, number>; failure: string | null }>(p.t, `SELECT status, final_counts, failure FROM bulk_jobs WHERE id = $1`, [id]);
    expect(row.status).toBe('failed');
    expect(row.final_counts).toEqual({ pending: 0, succeeded: done, failed: 0, skipped: s.contractIds.length - done });
    expect(row.failure).toMatch(/uninstalled/);
    const items = await sql<{ status: string; error_code: string | null; n: number }>(
      p.t,
      `SELECT status, error_code, count(*)::int AS n FROM bulk_job_items WHERE job_id = $1 GROUP BY 1, 2 ORDER BY 1`,
      [id],
    );
    expect(items).toEqual([
      { status: 'skipped', error_code: 'app_not_installed', n: s.contractIds.length - done },
      { status: 'succeeded', error_code: null, n: done },
    ]);
    // bulk_job.finished is queued to the endpoint, with the job as it ended.
    const deliveries = await sql<{ type: string; contract: { bulkJob: { id: string; status: string; counts: Record<string, number>; error: unknown } } }>(
      p.t,
      `SELECT type, contract FROM webhook_deliveries WHERE shop_id = $1 AND type LIKE 'bulk_job.%'`,
      [s.shopId],
    );
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0].type).toBe('bulk_job.finished');
    expect(deliveries[0].contract.bulkJob).toMatchObject({ id, status: 'failed', counts: { matched: s.contractIds.length, pending: 0, succeeded: done, skipped: s.contractIds.length - done }, error: { code: 'app_not_installed' } });
  }

  it('svc told of it: the job ends failed, the contracts not yet done skipped with app_not_installed, bulk_job.finished queued', async () => {
    const s = await p.install({ contracts: 12 });
    const id = await runningJob(s);
    const { round } = batchAtATime(4);
    await round();
    expect((await sql<{ n: number }>(p.t, `SELECT count(*)::int AS n FROM bulk_job_items WHERE job_id = $1 AND status = 'succeeded'`, [id]))[0].n).toBe(4);

    p.standIn.uninstall(s.domain);
    await p.settle();
    const from = p.standIn.requests.length;
    await round();
    await runJobs(p.t);
    await expectFailedUninstalled(s, id, 4);
    expect(fieldsSent(s.domain, from)).toEqual([]);
    expect(p.standIn.calls('subscriptionContractPause', s.domain)).toHaveLength(4);
    // The job reads as it ended once the shop is back.
    p.standIn.install(s.domain);
    await p.openAdmin(s.domain);
    await setShopPlan({ ctx: p.t.ctx, input: { domain: s.domain, plan: 'enterprise' } });
    const job = await jobOf(p.t, s.key, id);
    expect(job).toMatchObject({ status: 'failed', error: { code: 'app_not_installed' }, counts: { matched: 12, succeeded: 4, skipped: 8 } });
    expectCountsAddUp(job);
  });

  it('before svc is told of it: the platform refusing the token ends the job the same way', async () => {
    const s = await p.install({ contracts: 12 });
    const id = await runningJob(s);
    const { round } = batchAtATime(4);
    await round();
    // The platform has revoked the token; its app/uninstalled webhook is not processed yet. The next batch meets
    // the refusal: the job ends there, not contract by contract.
    p.standIn.uninstall(s.domain);
    const from = p.standIn.requests.length;
    await round();
    await expectFailedUninstalled(s, id, 4);
    expect(p.standIn.calls('subscriptionContractPause', s.domain)).toHaveLength(4);
    await p.settle();
    await runJobs(p.t);
    await expectFailedUninstalled(s, id, 4);
    expect(p.standIn.requests.slice(from).filter((r) => r.shop === s.domain && r.endpoint === 'graphql').length).toBeLessThanOrEqual(PLATFORM_LANES);
  });
});
