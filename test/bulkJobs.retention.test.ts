import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { BULK, bulkWorker, createJob, jobOf, postJob, resultsOf, runJobs } from './support/bulk.js';
import { contractRow, insertContract, sql } from './support/fixtures.js';

/**
 * Jobs and their results are kept 30 days after they end (docs/product.md §15), then deleted by the bulk-job worker's
 * housekeeping; a job not yet ended is never deleted, however old. The clock is moved; each worker made here does its
 * housekeeping on its first round.
 */

const T0 = new Date('2026-11-22T10:00:00.000Z');
const DAY = 86_400_000;
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
beforeEach(() => t.clock.set(T0));
afterAll(() => t.close());

const rowsOf = async (id: string) => {
  const [{ jobs }] = await sql<{ jobs: number }>(t, `SELECT count(*)::int AS jobs FROM bulk_jobs WHERE id = $1`, [id]);
  const [{ items }] = await sql<{ items: number }>(t, `SELECT count(*)::int AS items FROM bulk_job_items WHERE job_id = $1`, [id]);
  return { jobs, items };
};
/** One round of a fresh worker: its housekeeping (the retention among it) runs first. */
const housekeeping = () => bulkWorker(t).tick();

describe('retention', () => {
  it('a job that ended more than 30 days ago is deleted with its results; one that ended 29 days ago is kept', async () => {
    const { key, shopId } = await t.shopWithKey();
    const cs = [await insertContract(t, shopId), await insertContract(t, shopId)];
    const old = (await createJob(t, key, { selector: { contractIds: cs.map((c) => c.id) }, change: { action: 'skip' } })).json().bulkJob.id;
    await runJobs(t);
    t.clock.advance(DAY);
    const newer = (await createJob(t, key, { selector: { contractIds: [cs[0].id] }, change: { action: 'pause' } })).json().bulkJob.id;
    await runJobs(t);
    expect((await jobOf(t, key, old)).finishedAt).toBe(T0.toISOString());
    expect(await rowsOf(old)).toEqual({ jobs: 1, items: 2 });

    // Exactly 30 days after the first ended: kept (more than 30 days is the rule).
    t.clock.set(new Date(T0.getTime() + 30 * DAY));
    await housekeeping();
    expect(await rowsOf(old)).toEqual({ jobs: 1, items: 2 });

    t.clock.set(new Date(T0.getTime() + 30 * DAY + 60_000));
    await housekeeping();
    expect(await rowsOf(old)).toEqual({ jobs: 0, items: 0 });
    expect((await t.inject({ url: `${BULK}/${old}`, headers: bearer(key) })).statusCode).toBe(404);
    expect((await t.inject({ url: `${BULK}/${old}/results`, headers: bearer(key) })).statusCode).toBe(404);
    // The newer one ended 29 days and a minute ago: it and its results are there.
    expect(await jobOf(t, key, newer)).toMatchObject({ status: 'completed', counts: { matched: 1, succeeded: 1 } });
    expect(await resultsOf(t, key, newer)).toHaveLength(1);
    expect(await rowsOf(newer)).toEqual({ jobs: 1, items: 1 });
    // What the jobs changed stays changed: only the jobs' records go.
    expect((await contractRow(t, cs[0].id)).status).toBe('PAUSED');

    t.clock.set(new Date(T0.getTime() + 31 * DAY + 60_000));
    await housekeeping();
    expect(await rowsOf(newer)).toEqual({ jobs: 0, items: 0 });
  });

  it('a job not yet ended is never deleted, however old; a preview left unstarted is kept 30 days from its expiry', async () => {
    const { key, shopId } = await t.shopWithKey();
    const c = await insertContract(t, shopId);
    // Made 40 days before any worker comes round: one queued, one previewing.
    const queued = (await createJob(t, key, { selector: { contractIds: [c.id] }, change: { action: 'skip' } })).json().bulkJob.id;
    const previewing = (await createJob(t, key, { selector: { contractIds: [c.id] }, change: { action: 'pause' }, preview: true })).json().bulkJob.id;
    t.clock.set(new Date(T0.getTime() + 40 * DAY));
    await housekeeping();
    expect(await rowsOf(queued)).toEqual({ jobs: 1, items: 1 });
    expect(await rowsOf(previewing)).toEqual({ jobs: 1, items: 1 });
    await runJobs(t);
    expect(await jobOf(t, key, queued)).toMatchObject({ status: 'completed', counts: { succeeded: 1 } });
    expect((await jobOf(t, key, previewing)).status).toBe('previewed');

    // A preview made 40 days ago and previewed now expires a day later; it is kept 30 days from then.
    const expiry = T0.getTime() + 41 * DAY;
    t.clock.set(new Date(expiry + 60_000));
    await housekeeping();
    expect(await jobOf(t, key, previewing)).toMatchObject({ status: 'expired', finishedAt: new Date(expiry + 60_000).toISOString() });
    t.clock.set(new Date(expiry + 30 * DAY));
    await housekeeping();
    expect(await rowsOf(previewing)).toEqual({ jobs: 1, items: 1 });
    t.clock.set(new Date(expiry + 30 * DAY + 120_000));
    await housekeeping();
    expect(await rowsOf(previewing)).toEqual({ jobs: 0, items: 0 });
    expect(await rowsOf(queued)).toEqual({ jobs: 0, items: 0 });
  });

  it('a cancelled job counts from its cancel', async () => {
    const { key, shopId } = await t.shopWithKey();
    const c = await insertContract(t, shopId);
    const id = (await createJob(t, key, { selector: { contractIds: [c.id] }, change: { action: 'pause' }, preview: true })).json().bulkJob.id;
    t.clock.advance(10 * DAY);
    expect((await postJob(t, key, id, 'cancel')).statusCode).toBe(200);
    t.clock.set(new Date(T0.getTime() + 39 * DAY));
    await housekeeping();
    expect(await rowsOf(id)).toEqual({ jobs: 1, items: 1 });
    t.clock.set(new Date(T0.getTime() + 40 * DAY + 60_000));
    await housekeeping();
    expect(await rowsOf(id)).toEqual({ jobs: 0, items: 0 });
  });
});
