import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { API, contractRow, eventRows, insertContract, sql } from './support/fixtures.js';
import { createJob, expectCountsAddUp, jobOf, postJob, resultsOf, runJobs } from './support/bulk.js';

/** Bulk jobs (docs/product.md §15): previewed contract by contract, then run on the same snapshot. */

const NOW = new Date('2026-11-22T10:00:00.000Z');
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
beforeEach(() => t.clock.set(NOW));
afterAll(() => t.close());

const EUR = (amount: string) => ({ amount, currencyCode: 'EUR' });
const line = (variantId: string, quantity: number, amount: string, title = `Variant ${variantId}`) => ({ title, variantId, quantity, price: EUR(amount) });

describe('a preview, then its run', () => {
  it('a pause by filter: previewed contract by contract with nothing changed, then started and run on the same contracts', async () => {
    const { key, shopId } = await t.shopWithKey();
    const active = [await insertContract(t, shopId), await insertContract(t, shopId), await insertContract(t, shopId)];
    const paused = await insertContract(t, shopId, { status: 'PAUSED', pausedAt: NOW });
    const created = await createJob(t, key, { selector: { filter: { status: ['ACTIVE'] } }, change: { action: 'pause', resumeAt: '2027-01-05T00:00:00Z' }, preview: true });
    expect(created.statusCode, created.body).toBe(201);
    const job = created.json().bulkJob;
    expect(job).toMatchObject({ status: 'previewing', preview: true, counts: { matched: 3, pending: 3, succeeded: 0 }, createdBy: { type: 'api_key' } });
    expectCountsAddUp(job);

    await runJobs(t);
    const previewed = await jobOf(t, key, job.id);
    expect(previewed).toMatchObject({ status: 'previewed', counts: { matched: 3, pending: 0, succeeded: 3, failed: 0, skipped: 0 } });
    expect(previewed.totals).toEqual([{ currencyCode: 'EUR', before: '144.00', after: '144.00' }]);
    expect(new Date(previewed.expiresAt).getTime()).toBe(NOW.getTime() + 24 * 3600_000);
    // Nothing changed anywhere.
    for (const c of active) {
      expect((await contractRow(t, c.id)).status).toBe('ACTIVE');
      expect(await eventRows(t, c.id)).toHaveLength(0);
    }
    const results = await resultsOf(t, key, job.id);
    expect(results.map((r: { contractId: string }) => r.contractId)).toEqual(active.map((c) => c.id).sort((a, b) => Number(BigInt(a) - BigInt(b))));
    for (const r of results) expect(r).toMatchObject({ status: 'succeeded', before: { total: '48.00', currencyCode: 'EUR' }, after: { total: '48.00', currencyCode: 'EUR' } });

    // A contract made active after the preview is not in the job: its contracts were fixed when it was made.
    const later = await insertContract(t, shopId);
    const started = await postJob(t, key, job.id, 'start');
    expect(started.statusCode, started.body).toBe(200);
    expect(started.json().bulkJob).toMatchObject({ status: 'queued', counts: { matched: 3, pending: 3 } });
    await runJobs(t);
    const done = await jobOf(t, key, job.id);
    expect(done).toMatchObject({ status: 'completed', counts: { matched: 3, pending: 0, succeeded: 3 } });
    expect(done.startedAt).not.toBeNull();
    expect(done.finishedAt).not.toBeNull();
    for (const c of active) {
      const row = await contractRow(t, c.id);
      expect(row.status).toBe('PAUSED');
      const events = await eventRows(t, c.id);
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({ type: 'contract.paused', actorType: 'bulk_job', actorId: job.id });
    }
    // Through the API, the event names the job.
    const ev = await t.inject({ url: `${API}/${active[0].id}/events`, headers: bearer(key) });
    expect(ev.json().events[0].actor).toEqual({ type: 'bulk_job', id: job.id });
    for (const r of await resultsOf(t, key, job.id)) expect(r.eventId).toMatch(/^\d+$/);
    expect((await contractRow(t, later.id)).status).toBe('ACTIVE');
    expect((await contractRow(t, paused.id)).status).toBe('PAUSED');
  });

  it('a price rise by variant: each line of the variant, the revenue it moves per currency, and contracts without it skipped', async () => {
    const { key, shopId } = await t.shopWithKey();
    const two = await insertContract(t, shopId, { lines: [line('51', 2, '24.00'), line('77', 1, '10.00'), line('51', 1, '24.00')] });
    const one = await insertContract(t, shopId, { lines: [line('51', 1, '24.00')] });
    const none = await insertContract(t, shopId, { lines: [line('77', 3, '10.00')] });
    const ids = [two.id, one.id, none.id];
    const res = await createJob(t, key, { selector: { contractIds: ids }, change: { operations: [{ op: 'set_price', variantId: '51', price: '26.50' }] }, preview: true });
    expect(res.statusCode, res.body).toBe(201);
    const id = res.json().bulkJob.id;
    expect(res.json().bulkJob.selector).toEqual({ contractIds: { count: 3 } });
    await runJobs(t);
    const previewed = await jobOf(t, key, id);
    expect(previewed.counts).toEqual({ matched: 3, pending: 0, succeeded: 2, failed: 0, skipped: 1 });
    // before: 2×24 + 10 + 24 = 82 and 24; after: 3×26.50 + 10 = 89.50 and 26.50.
    expect(previewed.totals).toEqual([{ currencyCode: 'EUR', before: '106.00', after: '116.00' }]);
    const skipped = (await resultsOf(t, key, id)).find((r: { contractId: string }) => r.contractId === none.id);
    expect(skipped).toMatchObject({ status: 'skipped', error: { code: 'no_matching_line' } });

    expect((await postJob(t, key, id, 'start')).statusCode).toBe(200);
    await runJobs(t);
    expect((await jobOf(t, key, id)).status).toBe('completed');
    const after = await contractRow(t, two.id);
    expect(after.lines.map((l) => [l.variantId, l.price.amount])).toEqual([
      ['51', '26.50'],
      ['77', '10.00'],
      ['51', '26.50'],
    ]);
    expect(after.totals.total).toBe('89.50');
    const [event] = await eventRows(t, two.id);
    expect(event).toMatchObject({ type: 'contract.updated', actorType: 'bulk_job' });
    expect((event.data.changes as { op: string }[]).map((c) => c.op)).toEqual(['set_price', 'set_price']);
    expect((await contractRow(t, none.id)).lines[0].price.amount).toBe('10.00');
  });

  it('a job made without preview is queued and runs; ids not of the shop fail with not_found', async () => {
    const { key, shopId } = await t.shopWithKey();
    const other = await t.shopWithKey();
    const mine = await insertContract(t, shopId);
    const theirs = await insertContract(t, other.shopId);
    const res = await createJob(t, key, { selector: { contractIds: [mine.id, theirs.id, '999999999999'] }, change: { action: 'skip' } });
    expect(res.statusCode, res.body).toBe(201);
    const job = res.json().bulkJob;
    expect(job).toMatchObject({ status: 'queued', preview: false, counts: { matched: 3, pending: 1, failed: 2 } });
    await runJobs(t);
    const done = await jobOf(t, key, job.id);
    expect(done).toMatchObject({ status: 'completed', counts: { matched: 3, succeeded: 1, failed: 2 } });
    const results = await resultsOf(t, key, job.id);
    expect(results.filter((r: { status: string }) => r.status === 'failed').map((r: { error: { code: string } }) => r.error.code)).toEqual(['not_found', 'not_found']);
    expect((await contractRow(t, theirs.id)).nextBillingDate).toEqual(theirs.nextBillingDate);
    expect((await contractRow(t, mine.id)).nextBillingDate).not.toEqual(mine.nextBillingDate);
  });

  it('results as CSV: every result in one download', async () => {
    const { key, shopId } = await t.shopWithKey();
    const cs = [await insertContract(t, shopId), await insertContract(t, shopId, { status: 'CANCELLED', cancelledAt: NOW })];
    const id = (await createJob(t, key, { selector: { contractIds: cs.map((c) => c.id) }, change: { action: 'pause' }, preview: true })).json().bulkJob.id;
    await runJobs(t);
    const res = await t.inject({ url: `/api/v1/bulk-jobs/${id}/results`, headers: { ...bearer(key), accept: 'text/csv' } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/csv/);
    const lines = res.body.trim().split('\r\n');
    expect(lines[0]).toBe('contractId,status,code,message,totalBefore,totalAfter,currencyCode');
    expect(lines.slice(1)).toHaveLength(2);
    expect(lines[1]).toBe(`${cs[0].id},succeeded,,,48,48,EUR`.replace(',48,48,', ',48.00,48.00,'));
    expect(lines[2]).toMatch(new RegExp(`^${cs[1].id},failed,invalid_state,"?Cannot pause a contract that is CANCELLED`));
  });
});

describe('cancel, queue, expiry', () => {
  it('cancelling a previewed job discards its preview; a queued one skips what it had not done', async () => {
    const { key, shopId } = await t.shopWithKey();
    const c = await insertContract(t, shopId);
    const previewId = (await createJob(t, key, { selector: { contractIds: [c.id] }, change: { action: 'pause' }, preview: true })).json().bulkJob.id;
    await runJobs(t);
    const cancelled = await postJob(t, key, previewId, 'cancel');
    expect(cancelled.statusCode, cancelled.body).toBe(200);
    expect(cancelled.json().bulkJob.status).toBe('cancelled');
    expect((await postJob(t, key, previewId, 'start')).json().error.code).toBe('invalid_state');

    const queued = (await createJob(t, key, { selector: { contractIds: [c.id] }, change: { action: 'pause' } })).json().bulkJob.id;
    const res = await postJob(t, key, queued, 'cancel');
    expect(res.json().bulkJob).toMatchObject({ status: 'cancelled', counts: { matched: 1, pending: 0, skipped: 1 } });
    expect((await resultsOf(t, key, queued))[0]).toMatchObject({ status: 'skipped', error: { code: 'job_cancelled' } });
    await runJobs(t);
    expect((await contractRow(t, c.id)).status).toBe('ACTIVE');
  });

  it('one job runs per shop at a time, the next waits queued in order; a preview does not wait', async () => {
    const { key, shopId } = await t.shopWithKey();
    const cs = [await insertContract(t, shopId), await insertContract(t, shopId)];
    const first = (await createJob(t, key, { selector: { contractIds: [cs[0].id] }, change: { action: 'skip' } })).json().bulkJob.id;
    const second = (await createJob(t, key, { selector: { contractIds: [cs[1].id] }, change: { action: 'skip' } })).json().bulkJob.id;
    // One round: the first starts and runs; the second waits for it.
    const { bulkWorker } = await import('./support/bulk.js');
    const worker = bulkWorker(t);
    await worker.tick();
    expect((await jobOf(t, key, second)).status).toBe('queued');
    const preview = (await createJob(t, key, { selector: { contractIds: [cs[1].id] }, change: { action: 'pause' }, preview: true })).json().bulkJob.id;
    await runJobs(t, worker);
    expect((await jobOf(t, key, first)).status).toBe('completed');
    expect((await jobOf(t, key, second)).status).toBe('completed');
    expect((await jobOf(t, key, preview)).status).toBe('previewed');
    const started = await sql<{ id: string; started_at: Date }>(t, `SELECT id::text, started_at FROM bulk_jobs WHERE id = ANY ($1::uuid[]) ORDER BY started_at`, [[first, second]]);
    expect(started.map((s) => s.id)).toEqual([first, second]);
  });

  it('a preview not started within 24 hours expires', async () => {
    const { key, shopId } = await t.shopWithKey();
    const c = await insertContract(t, shopId);
    const id = (await createJob(t, key, { selector: { contractIds: [c.id] }, change: { action: 'pause' }, preview: true })).json().bulkJob.id;
    await runJobs(t);
    t.clock.advance(24 * 3600_000 - 1000);
    await runJobs(t);
    expect((await jobOf(t, key, id)).status).toBe('previewed');
    t.clock.advance(2000);
    await runJobs(t);
    expect((await jobOf(t, key, id)).status).toBe('expired');
    expect((await postJob(t, key, id, 'start')).json().error.code).toBe('invalid_state');
  });

  it('lists the shop\'s jobs newest first, by status, paged', async () => {
    const { key, shopId } = await t.shopWithKey();
    const c = await insertContract(t, shopId);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await createJob(t, key, { selector: { contractIds: [c.id] }, change: { action: 'pause' }, preview: true })).json().bulkJob.id);
    const page1 = await t.inject({ url: '/api/v1/bulk-jobs?limit=2', headers: bearer(key) });
    expect(page1.json().bulkJobs.map((j: { id: string }) => j.id)).toEqual([ids[2], ids[1]]);
    const page2 = await t.inject({ url: `/api/v1/bulk-jobs?limit=2&cursor=${page1.json().nextCursor}`, headers: bearer(key) });
    expect(page2.json()).toMatchObject({ bulkJobs: [{ id: ids[0] }], nextCursor: null });
    await postJob(t, key, ids[0], 'cancel');
    const cancelled = await t.inject({ url: '/api/v1/bulk-jobs?status=cancelled', headers: bearer(key) });
    expect(cancelled.json().bulkJobs.map((j: { id: string }) => j.id)).toEqual([ids[0]]);
  });
});
