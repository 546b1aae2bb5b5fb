import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.js';
import { contractRow, eventRows, expectError, insertContract, sql } from './support/fixtures.js';
import { insertManyContracts } from './support/manyContracts.js';
import { BULK, createJob, jobOf, postJob, resultsOf, runJobs } from './support/bulk.js';
import { bearer } from './support/app.js';

/** What a bulk job refuses, and what each contract of one comes to when it cannot be changed (docs/product.md §15). */

const NOW = new Date('2026-11-22T10:00:00.000Z');
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
beforeEach(() => t.clock.set(NOW));
afterAll(() => t.close());

describe('a body that cannot make a job', () => {
  let key: string;
  let id: string;
  beforeAll(async () => {
    const s = await t.shopWithKey();
    key = s.key;
    id = (await insertContract(t, s.shopId)).id;
  });

  it('bill_now is refused: a bulk job never charges customers', async () => {
    const err = expectError(await createJob(t, key, { selector: { contractIds: [id] }, change: { action: 'bill_now' } }), 400, 'invalid_request');
    expect(err.message).toMatch(/bill_now cannot run as a bulk job/);
  });

  it('an unknown action is unsupported_action listing the ones a job runs', async () => {
    const err = expectError(await createJob(t, key, { selector: { contractIds: [id] }, change: { action: 'explode' } }), 400, 'unsupported_action');
    expect(err.message).toContain('pause, resume, cancel, skip, reschedule');
    expect(err.message).not.toContain('bill_now');
  });

  it.each([
    ['no selector', { change: { action: 'pause' } }],
    ['both ids and a filter', { selector: { contractIds: ['1'], filter: {} }, change: { action: 'pause' } }],
    ['an id twice', { selector: { contractIds: ['1', '1'] }, change: { action: 'pause' } }],
    ['an id that is not digits', { selector: { contractIds: ['abc'] }, change: { action: 'pause' } }],
    ['an id past int8', { selector: { contractIds: ['9999999999999999999'] }, change: { action: 'pause' } }],
    ['no ids', { selector: { contractIds: [] }, change: { action: 'pause' } }],
    ['an unknown filter field', { selector: { filter: { colour: 'red' } }, change: { action: 'pause' } }],
    ['a filter date with an offset', { selector: { filter: { nextBillingDateFrom: '2027-01-01T00:00:00+02:00' } }, change: { action: 'pause' } }],
    ['an action field it does not take', { selector: { contractIds: ['1'] }, change: { action: 'skip', resumeAt: '2027-01-05T00:00:00Z' } }],
    ['a resumeAt in the past', { selector: { contractIds: ['1'] }, change: { action: 'pause', resumeAt: '2026-01-05T00:00:00Z' } }],
    ['a line operation by line id', { selector: { contractIds: ['1'] }, change: { operations: [{ op: 'set_quantity', lineId: 'x', quantity: 2 }] } }],
    ['an unknown operation', { selector: { contractIds: ['1'] }, change: { operations: [{ op: '__proto__' }] } }],
    ['no change', { selector: { contractIds: ['1'] } }],
    ['an unknown field', { selector: { contractIds: ['1'] }, change: { action: 'pause' }, colour: 'red' }],
  ])('%s is 400 invalid_request, and no job is made', async (_what, body) => {
    const before = await sql<{ n: number }>(t, 'SELECT count(*)::int AS n FROM bulk_jobs');
    const res = await createJob(t, key, body);
    expectError(res, 400, 'invalid_request');
    expect(await sql<{ n: number }>(t, 'SELECT count(*)::int AS n FROM bulk_jobs')).toEqual(before);
  });

  it('100,001 ids are refused by the schema; a body over 2 MiB is 413', async () => {
    const ids = Array.from({ length: 100_001 }, (_, i) => String(i + 1));
    expectError(await createJob(t, key, { selector: { contractIds: ids }, change: { action: 'pause' } }), 400, 'invalid_request');
    const huge = { selector: { contractIds: ['1'] }, change: { action: 'cancel', reason: 'x'.repeat(2 * 1024 * 1024) } };
    const res = expectError(await createJob(t, key, huge), 413, 'payload_too_large');
    expect(res.message).toMatch(/2 MiB/);
  });
});

describe('limits', () => {
  it('a filter matching more than 100,000 contracts is 422 too_many_contracts, and no job is made', async () => {
    const { key, shopId } = await t.shopWithKey();
    await insertManyContracts(t, shopId, 100_001, { ids: false });
    const err = expectError(await createJob(t, key, { selector: { filter: {} }, change: { action: 'pause' }, preview: true }), 422, 'too_many_contracts');
    expect(err.message).toContain('100,000');
    expect(await sql(t, 'SELECT 1 FROM bulk_jobs WHERE shop_id = $1', [shopId])).toEqual([]);
    expect((await sql<{ n: number }>(t, 'SELECT count(*)::int AS n FROM bulk_job_items i JOIN bulk_jobs j ON j.id = i.job_id WHERE j.shop_id = $1', [shopId]))[0].n).toBe(0);
  }, 120_000);

  it('ten jobs not yet finished: the eleventh is 409 too_many_jobs; one ended makes room', async () => {
    const { key, shopId } = await t.shopWithKey();
    const c = await insertContract(t, shopId);
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await createJob(t, key, { selector: { contractIds: [c.id] }, change: { action: 'pause' }, preview: i % 2 === 0 });
      expect(res.statusCode, res.body).toBe(201);
      ids.push(res.json().bulkJob.id);
    }
    expectError(await createJob(t, key, { selector: { contractIds: [c.id] }, change: { action: 'pause' } }), 409, 'too_many_jobs');
    expect((await postJob(t, key, ids[0], 'cancel')).statusCode).toBe(200);
    expect((await createJob(t, key, { selector: { contractIds: [c.id] }, change: { action: 'pause' } })).statusCode).toBe(201);
  });
});

describe('start and cancel only where the status allows', () => {
  it('start is for a previewed job only, cancel for one not yet ended: 409 invalid_state otherwise', async () => {
    const { key, shopId } = await t.shopWithKey();
    const c = await insertContract(t, shopId);
    const queued = (await createJob(t, key, { selector: { contractIds: [c.id] }, change: { action: 'skip' } })).json().bulkJob.id;
    expect(expectError(await postJob(t, key, queued, 'start'), 409, 'invalid_state').message).toContain('queued');
    await runJobs(t);
    expect((await jobOf(t, key, queued)).status).toBe('completed');
    expectError(await postJob(t, key, queued, 'start'), 409, 'invalid_state');
    expectError(await postJob(t, key, queued, 'cancel'), 409, 'invalid_state');
    expectError(await t.inject({ url: `${BULK}/not-a-job`, headers: bearer(key) }), 404, 'not_found');
  });
});

describe('what each contract comes to', () => {
  it('a contract whose status does not allow the action fails invalid_state; an edit that cannot apply, invalid_edit', async () => {
    const { key, shopId } = await t.shopWithKey();
    const cancelled = await insertContract(t, shopId, { status: 'CANCELLED', cancelledAt: NOW });
    const only = await insertContract(t, shopId, { lines: [{ title: 'Tea', variantId: '61', quantity: 1, price: { amount: '9.00', currencyCode: 'EUR' } }] });
    const pause = (await createJob(t, key, { selector: { contractIds: [cancelled.id] }, change: { action: 'pause' } })).json().bulkJob.id;
    const remove = (await createJob(t, key, { selector: { contractIds: [only.id] }, change: { operations: [{ op: 'remove_variant', variantId: '61' }] } })).json().bulkJob.id;
    await runJobs(t);
    expect((await resultsOf(t, key, pause))[0]).toMatchObject({ status: 'failed', error: { code: 'invalid_state' } });
    const [r] = await resultsOf(t, key, remove);
    expect(r).toMatchObject({ status: 'failed', error: { code: 'invalid_edit' } });
    expect(r.error.details[0].path).toMatch(/^operations\.0/);
    expect((await contractRow(t, only.id)).lines).toHaveLength(1);
    expect(await eventRows(t, only.id)).toHaveLength(0);
  });

  it('a contract changed by someone else between preview and start is decided again as it then is', async () => {
    const { key, shopId } = await t.shopWithKey();
    const c = await insertContract(t, shopId);
    const id = (await createJob(t, key, { selector: { contractIds: [c.id] }, change: { action: 'skip' }, preview: true })).json().bulkJob.id;
    await runJobs(t);
    expect((await resultsOf(t, key, id))[0].status).toBe('succeeded');
    expect((await t.inject({ method: 'POST', url: `/api/v1/subscription-contracts/${c.id}/actions`, headers: bearer(key), payload: { action: 'cancel' } })).statusCode).toBe(200);
    await postJob(t, key, id, 'start');
    await runJobs(t);
    expect((await resultsOf(t, key, id))[0]).toMatchObject({ status: 'failed', error: { code: 'invalid_state' } });
    expect((await contractRow(t, c.id)).status).toBe('CANCELLED');
  });

  it('a pause whose resumeAt has passed by the contract\'s turn fails invalid_request; nothing is paused past it', async () => {
    const { key, shopId } = await t.shopWithKey();
    const c = await insertContract(t, shopId);
    const id = (await createJob(t, key, { selector: { contractIds: [c.id] }, change: { action: 'pause', resumeAt: '2026-11-22T11:00:00Z' } })).json().bulkJob.id;
    t.clock.advance(2 * 3600_000);
    await runJobs(t);
    expect((await resultsOf(t, key, id))[0]).toMatchObject({ status: 'failed', error: { code: 'invalid_request' } });
    expect((await contractRow(t, c.id)).status).toBe('ACTIVE');
  });
});

describe('a contract being billed', () => {
  it('waits for the attempt\'s outcome, then is changed', async () => {
    const { key, shopId } = await t.shopWithKey();
    const c = await insertContract(t, shopId);
    const billed = await t.inject({ method: 'POST', url: `/api/v1/subscription-contracts/${c.id}/actions`, headers: bearer(key), payload: { action: 'bill_now' } });
    expect(billed.json().billingAttempt.status).toBe('pending');
    const id = (await createJob(t, key, { selector: { contractIds: [c.id] }, change: { action: 'pause' } })).json().bulkJob.id;
    const { bulkWorker } = await import('./support/bulk.js');
    const worker = bulkWorker(t);
    await worker.tick();
    expect((await jobOf(t, key, id)).counts).toMatchObject({ pending: 1 });
    await t.billing.scheduler.runAll();
    t.clock.advance(3000);
    await runJobs(t, worker);
    expect((await jobOf(t, key, id))).toMatchObject({ status: 'completed', counts: { succeeded: 1 } });
    expect((await contractRow(t, c.id)).status).toBe('PAUSED');
  });

  it('still pending once the rest of the job is done: failed with billing_in_progress', async () => {
    const { key, shopId } = await t.shopWithKey();
    const c = await insertContract(t, shopId);
    const other = await insertContract(t, shopId);
    await t.inject({ method: 'POST', url: `/api/v1/subscription-contracts/${c.id}/actions`, headers: bearer(key), payload: { action: 'bill_now' } });
    const id = (await createJob(t, key, { selector: { contractIds: [c.id, other.id] }, change: { action: 'pause' } })).json().bulkJob.id;
    await runJobs(t);
    t.clock.advance(3000);
    await runJobs(t);
    const job = await jobOf(t, key, id);
    expect(job).toMatchObject({ status: 'completed', counts: { succeeded: 1, failed: 1 } });
    expect((await resultsOf(t, key, id, '&status=failed'))[0]).toMatchObject({ contractId: c.id, error: { code: 'billing_in_progress' } });
    expect((await contractRow(t, c.id)).status).toBe('ACTIVE');
  });
});
