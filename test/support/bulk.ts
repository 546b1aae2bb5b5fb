import { expect } from 'vitest';
import { BulkJobWorker } from '../../src/workers/bulkJobs.js';
import type { TestApp } from './app.js';
import { bearer } from './app.js';
import { sql } from './fixtures.js';

export const BULK = '/api/v1/bulk-jobs';

/** A bulk-job worker of the test app: tests run its rounds themselves (nothing runs in the background). */
export const bulkWorker = (t: TestApp, opts: { batchSize?: number } = {}) => new BulkJobWorker(t.ctx, { intervalMs: 60_000, ...opts });

/** Rounds of the worker until a round settles nothing and no job has work left it can do now. */
export async function runJobs(t: TestApp, worker = bulkWorker(t)): Promise<number> {
  let settled = 0;
  for (let i = 0; i < 1000; i++) {
    const { settled: n } = await worker.tick();
    settled += n;
    if (n === 0) {
      const [{ busy }] = await sql<{ busy: number }>(
        t,
        `SELECT count(*)::int AS busy FROM bulk_jobs j WHERE j.status IN ('previewing', 'running')
            OR (j.status = 'queued' AND NOT EXISTS (SELECT 1 FROM bulk_jobs r WHERE r.shop_id = j.shop_id AND r.status = 'running'))`,
      );
      if (busy === 0) return settled;
      // Work left that waits (a contract being billed): one more round decides whether it goes on.
      const again = await worker.tick();
      settled += again.settled;
      if (again.settled === 0) return settled;
    }
  }
  throw new Error('bulk jobs did not settle');
}

export const createJob = (t: TestApp, key: string, body: unknown, headers: Record<string, string> = {}) =>
  t.inject({ method: 'POST', url: BULK, headers: { ...bearer(key), ...headers }, payload: body as object });

export const jobOf = async (t: TestApp, key: string, id: string) => {
  const res = await t.inject({ url: `${BULK}/${id}`, headers: bearer(key) });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().bulkJob;
};

export const resultsOf = async (t: TestApp, key: string, id: string, query = '') => {
  const out = [];
  let cursor: string | null = null;
  do {
    const res = await t.inject({ url: `${BULK}/${id}/results?limit=100${query}${cursor ? `&cursor=${cursor}` : ''}`, headers: bearer(key) });
    expect(res.statusCode, res.body).toBe(200);
    out.push(...res.json().results);
    cursor = res.json().nextCursor;
  } while (cursor);
  return out;
};

export const postJob = (t: TestApp, key: string, id: string, verb: 'start' | 'cancel') => t.inject({ method: 'POST', url: `${BULK}/${id}/${verb}`, headers: bearer(key) });

/** The counts add up to matched. */
export function expectCountsAddUp(job: { counts: { matched: number; pending: number; succeeded: number; failed: number; skipped: number } }): void {
  const c = job.counts;
  expect(c.pending + c.succeeded + c.failed + c.skipped).toBe(c.matched);
}
