import { afterAll, beforeAll, expect, it } from 'vitest';
import { BulkJobWorker } from '../src/workers/bulkJobs.js';
import { startTestApp, type TestApp } from './support/app.js';
import { createJob, expectCountsAddUp, jobOf } from './support/bulk.js';
import { insertManyContracts, MANY_STATUSES } from './support/manyContracts.js';

/**
 * The bulk-job worker takes a job's items a batch at a time (docs/product.md §15: bulk work gives way to requests
 * between batches; standalone, a batch's contracts are locked while it lasts), never more than its batch size.
 */

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t?.close());

it('each batch takes at most the batch size of items, and the job advances batch by batch', async () => {
  const { key, shopId } = await t.shopWithKey();
  const ids = await insertManyContracts(t, shopId, 40);
  const active = ids.filter((_, k) => MANY_STATUSES[(k + 1) % 5] === 'ACTIVE');
  const res = await createJob(t, key, { selector: { filter: { status: ['ACTIVE'] } }, change: { action: 'skip' } });
  expect(res.statusCode, res.body).toBe(201);
  const id = res.json().bulkJob.id;
  expect(res.json().bulkJob.counts.matched).toBe(active.length);

  // One batch per round: the worker gives way (as to requests) after each.
  let allowance = 0;
  const worker = new BulkJobWorker(t.ctx, { intervalMs: 60_000, batchSize: 10, busy: () => allowance-- <= 0 });
  const pending: number[] = [];
  for (let round = 0; round < 10; round++) {
    allowance = 1;
    await worker.tick();
    const job = await jobOf(t, key, id);
    expectCountsAddUp(job);
    pending.push(job.counts.pending);
    if (job.status === 'completed') break;
  }
  const expected = [];
  for (let left = active.length - 10; left > 0; left -= 10) expected.push(left);
  expect(pending).toEqual([...expected, 0, 0]);
  expect((await jobOf(t, key, id)).counts).toMatchObject({ matched: active.length, succeeded: active.length });
});
