import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { BulkJobWorker } from '../src/workers/bulkJobs.js';
import { WebhookDispatcher } from '../src/workers/webhookDispatcher.js';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { createJob, postJob, runJobs } from './support/bulk.js';
import { insertContract } from './support/fixtures.js';
import { startReceiver } from './support/receiver.js';

/**
 * A bulk job's webhooks out (docs/product.md §15, Events out; §10): a preview's end sends bulk_job.previewed, a job's
 * end bulk_job.finished (data: { bulkJob }) whatever the end, and every contract it changes its usual event with actor
 * bulk_job. Received by a real endpoint, signed; the dispatcher's rounds run by hand and the clock is moved.
 */

const NOW = new Date('2026-11-22T10:00:00.000Z');
let t: TestApp;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let dispatcher: WebhookDispatcher;
beforeAll(async () => {
  t = await startTestApp();
  receiver = await startReceiver();
  dispatcher = new WebhookDispatcher(t.ctx, { random: () => 0.5 });
});
beforeEach(() => t.clock.set(NOW));
afterEach(() => {
  receiver.received.length = 0;
});
afterAll(async () => {
  await receiver?.close();
  await t?.close();
});

type Sent = { type: string; timestamp: string; data: any };
let endpoints = 0;
/** A shop with a key and an endpoint of its own on the receiver taking `events`: `got()` is what it received, verified. */
async function shopWithEndpoint(events: string[] = ['*']) {
  const s = await t.shopWithKey();
  const path = `/bulk/${++endpoints}`;
  const res = await t.inject({ method: 'POST', url: '/api/v1/webhook-endpoints', headers: bearer(s.key), payload: { url: `${receiver.url}${path}`, events } });
  expect(res.statusCode, res.body).toBe(201);
  const hook = new Webhook(res.json().secret);
  const got = (): Sent[] => receiver.received.filter((r) => r.path === path).map((r) => hook.verify(r.body, r.headers as Record<string, string>) as Sent);
  return { ...s, got };
}
/** The job's events received, in order. */
const jobEvents = (got: Sent[], id: string) => got.filter((e) => e.type.startsWith('bulk_job.') && e.data.bulkJob.id === id);

describe('bulk_job.previewed and bulk_job.finished', () => {
  it('a preview sends bulk_job.previewed with its counts and totals; its run, each contract’s event with actor bulk_job, then bulk_job.finished', async () => {
    const s = await shopWithEndpoint();
    const cs = [await insertContract(t, s.shopId), await insertContract(t, s.shopId), await insertContract(t, s.shopId, { status: 'CANCELLED', cancelledAt: NOW })];
    const id = (await createJob(t, s.key, { selector: { contractIds: cs.map((c) => c.id) }, change: { action: 'pause' }, preview: true })).json().bulkJob.id;
    await runJobs(t);
    await dispatcher.tick();
    const [previewed, ...others] = s.got();
    expect(others).toEqual([]);
    expect(previewed.type).toBe('bulk_job.previewed');
    expect(previewed.data.bulkJob).toMatchObject({
      id,
      status: 'previewed',
      preview: true,
      change: { action: 'pause' },
      counts: { matched: 3, pending: 0, succeeded: 2, failed: 1, skipped: 0 },
      totals: [{ currencyCode: 'EUR', before: '96.00', after: '96.00' }],
      createdBy: { type: 'api_key', keyId: s.keyId },
      expiresAt: new Date(NOW.getTime() + 24 * 3600_000).toISOString(),
    });
    // The job as the API shows it, whole.
    expect(previewed.data.bulkJob).toEqual((await t.inject({ url: `/api/v1/bulk-jobs/${id}`, headers: bearer(s.key) })).json().bulkJob);

    expect((await postJob(t, s.key, id, 'start')).statusCode).toBe(200);
    await runJobs(t);
    await dispatcher.tick();
    const run = s.got().slice(1);
    const paused = run.filter((e) => e.type === 'contract.paused');
    expect(paused.map((e) => e.data.contract.id).sort()).toEqual([cs[0].id, cs[1].id].sort());
    for (const e of paused) {
      expect(e.data.event.actor).toEqual({ type: 'bulk_job', id });
      expect(e.data.contract.status).toBe('PAUSED');
    }
    expect(run.filter((e) => e.type !== 'contract.paused').map((e) => e.type)).toEqual(['bulk_job.finished']);
    expect(jobEvents(run, id)[0].data.bulkJob).toMatchObject({ id, status: 'completed', counts: { matched: 3, pending: 0, succeeded: 2, failed: 1 }, expiresAt: null });
    expect(jobEvents(run, id)[0].data.bulkJob.finishedAt).not.toBeNull();
  });

  it('cancelled: a running job cancelled midway and a discarded preview each send bulk_job.finished with status cancelled', async () => {
    const s = await shopWithEndpoint(['bulk_job.finished']);
    const cs = [await insertContract(t, s.shopId), await insertContract(t, s.shopId), await insertContract(t, s.shopId)];
    const running = (await createJob(t, s.key, { selector: { contractIds: cs.map((c) => c.id) }, change: { action: 'skip' } })).json().bulkJob.id;
    // One batch of one contract, then the worker gives way: the job is running, one contract done.
    let allowance = 1;
    await new BulkJobWorker(t.ctx, { intervalMs: 60_000, batchSize: 1, busy: () => allowance-- <= 0 }).tick();
    expect((await postJob(t, s.key, running, 'cancel')).json().bulkJob).toMatchObject({ status: 'cancelled', counts: { succeeded: 1, skipped: 2 } });
    const preview = (await createJob(t, s.key, { selector: { contractIds: [cs[0].id] }, change: { action: 'pause' }, preview: true })).json().bulkJob.id;
    await runJobs(t);
    expect((await postJob(t, s.key, preview, 'cancel')).statusCode).toBe(200);
    await dispatcher.tick();
    // Subscribed to bulk_job.finished only: neither the preview's bulk_job.previewed nor the skip's contract event.
    const got = new Map(s.got().map((e) => [e.data.bulkJob.id, e]));
    expect(s.got().map((e) => e.type)).toEqual(['bulk_job.finished', 'bulk_job.finished']);
    expect(got.get(running)!.data.bulkJob).toMatchObject({ status: 'cancelled', startedAt: expect.any(String), counts: { matched: 3, pending: 0, succeeded: 1, failed: 0, skipped: 2 } });
    expect(got.get(preview)!.data.bulkJob).toMatchObject({ status: 'cancelled', startedAt: null, counts: { matched: 1, pending: 0, succeeded: 1 } });
  });

  it('expired: a preview not started within 24 hours sends bulk_job.finished with status expired, once', async () => {
    const s = await shopWithEndpoint();
    const c = await insertContract(t, s.shopId);
    const id = (await createJob(t, s.key, { selector: { contractIds: [c.id] }, change: { action: 'pause' }, preview: true })).json().bulkJob.id;
    await runJobs(t);
    await dispatcher.tick();
    expect(s.got().map((e) => e.type)).toEqual(['bulk_job.previewed']);
    t.clock.advance(24 * 3600_000 - 1000);
    await runJobs(t);
    await dispatcher.tick();
    expect(s.got()).toHaveLength(1);
    t.clock.advance(2000);
    await runJobs(t);
    await runJobs(t);
    await dispatcher.tick();
    const [, expired, ...more] = s.got();
    expect(more).toEqual([]);
    expect(expired.type).toBe('bulk_job.finished');
    expect(expired.data.bulkJob).toMatchObject({ id, status: 'expired', counts: { matched: 1, succeeded: 1 } });
    expect(expired.data.bulkJob.finishedAt).toBe(t.clock.now().toISOString());
  });

  it('an endpoint of another shop, or one taking only contract events, gets no job event', async () => {
    const s = await shopWithEndpoint(['contract.skipped']);
    const other = await shopWithEndpoint();
    const c = await insertContract(t, s.shopId);
    const id = (await createJob(t, s.key, { selector: { contractIds: [c.id] }, change: { action: 'skip' } })).json().bulkJob.id;
    await runJobs(t);
    await dispatcher.tick();
    expect(s.got().map((e) => [e.type, e.data.event.actor])).toEqual([['contract.skipped', { type: 'bulk_job', id }]]);
    expect(other.got()).toEqual([]);
  });
});
