import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { contractRow, expectError, insertContract, sql } from './support/fixtures.js';
import { BULK, createJob, jobOf, postJob, runJobs } from './support/bulk.js';

/** Who may make, read and run bulk jobs (docs/product.md §15, §16): a shop's own jobs only, with the permissions they need. */

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

/** A key's permissions set as stored (what a restricted key holds). */
const restrict = (shopId: string, permissions: Record<string, string>) => sql(t, 'UPDATE api_keys SET permissions = $2::jsonb WHERE shop_id = $1', [shopId, JSON.stringify(permissions)]);

describe('another shop\'s job is not found, everywhere', () => {
  it('get, results, start and cancel of another shop\'s job are 404, and change nothing', async () => {
    const mine = await t.shopWithKey();
    const theirs = await t.shopWithKey();
    const c = await insertContract(t, theirs.shopId);
    const id = (await createJob(t, theirs.key, { selector: { contractIds: [c.id] }, change: { action: 'pause' }, preview: true })).json().bulkJob.id;
    await runJobs(t);
    for (const req of [
      { url: `${BULK}/${id}` },
      { url: `${BULK}/${id}/results` },
      { url: `${BULK}/${id}/results`, headers: { accept: 'text/csv' } },
      { method: 'POST' as const, url: `${BULK}/${id}/start` },
      { method: 'POST' as const, url: `${BULK}/${id}/cancel` },
    ]) {
      const res = await t.inject({ ...req, headers: { ...(req.headers ?? {}), ...bearer(mine.key) } });
      expect(expectError(res, 404, 'not_found').message).toMatch(/bulk job/);
    }
    expect((await t.inject({ url: BULK, headers: bearer(mine.key) })).json().bulkJobs).toEqual([]);
    expect((await jobOf(t, theirs.key, id)).status).toBe('previewed');
  });

  it('a selector names another shop\'s contract: failed not_found, never changed', async () => {
    const mine = await t.shopWithKey();
    const theirs = await t.shopWithKey();
    const c = await insertContract(t, theirs.shopId);
    const id = (await createJob(t, mine.key, { selector: { contractIds: [c.id] }, change: { action: 'cancel' } })).json().bulkJob.id;
    await runJobs(t);
    expect((await jobOf(t, mine.key, id)).counts).toMatchObject({ matched: 1, failed: 1 });
    expect((await contractRow(t, c.id)).status).toBe('ACTIVE');
  });
});

describe('permissions', () => {
  it('a read-only key lists and reads jobs, and makes, starts or cancels none', async () => {
    const rw = await t.shopWithKey();
    const c = await insertContract(t, rw.shopId);
    const id = (await createJob(t, rw.key, { selector: { contractIds: [c.id] }, change: { action: 'pause' }, preview: true })).json().bulkJob.id;
    await runJobs(t);
    const ro = await t.inject({ method: 'POST', url: '/admin/api/keys', headers: { authorization: `Bearer ${await t.sessionToken(rw.domain)}` }, payload: { access: 'read_only' } });
    const key = ro.json().secret as string;
    expect((await t.inject({ url: BULK, headers: bearer(key) })).json().bulkJobs).toHaveLength(1);
    expect((await t.inject({ url: `${BULK}/${id}/results`, headers: bearer(key) })).statusCode).toBe(200);
    expectError(await createJob(t, key, { selector: { contractIds: [c.id] }, change: { action: 'pause' } }), 403, 'insufficient_scope');
    expectError(await postJob(t, key, id, 'start'), 403, 'insufficient_scope');
    expectError(await postJob(t, key, id, 'cancel'), 403, 'insufficient_scope');
    expect((await jobOf(t, rw.key, id)).status).toBe('previewed');
  });

  it('bulk_jobs: write alone cannot change contracts: the job needs the write permission of what it changes', async () => {
    const s = await t.shopWithKey();
    const c = await insertContract(t, s.shopId);
    await restrict(s.shopId, { contracts: 'read', billing: 'none', webhooks: 'none', bulk_jobs: 'write' });
    const res = await createJob(t, s.key, { selector: { contractIds: [c.id] }, change: { action: 'pause' } });
    const err = expectError(res, 403, 'insufficient_scope');
    expect(err.message).toContain('contracts: write');
    expect(err.details).toEqual([{ path: 'permissions.contracts', message: 'contracts: write needed (has contracts: read)' }]);
    await restrict(s.shopId, { contracts: 'write', billing: 'none', webhooks: 'none', bulk_jobs: 'read' });
    expect(expectError(await createJob(t, s.key, { selector: { contractIds: [c.id] }, change: { action: 'pause' } }), 403, 'insufficient_scope').message).toContain('bulk_jobs: write');
    expect(await sql(t, 'SELECT 1 FROM bulk_jobs WHERE shop_id = $1', [s.shopId])).toEqual([]);
  });

  it('a previewed job is started only by a key that may change what it changes', async () => {
    const s = await t.shopWithKey();
    const c = await insertContract(t, s.shopId);
    const id = (await createJob(t, s.key, { selector: { contractIds: [c.id] }, change: { action: 'pause' }, preview: true })).json().bulkJob.id;
    await runJobs(t);
    await restrict(s.shopId, { contracts: 'read', billing: 'none', webhooks: 'none', bulk_jobs: 'write' });
    expect(expectError(await postJob(t, s.key, id, 'start'), 403, 'insufficient_scope').message).toContain('contracts: write');
    expect((await jobOf(t, s.key, id)).status).toBe('previewed');
  });
});

describe('Idempotency-Key', () => {
  it('a retried creation makes one job and answers the first', async () => {
    const s = await t.shopWithKey();
    const c = await insertContract(t, s.shopId);
    const body = { selector: { contractIds: [c.id] }, change: { action: 'skip' } };
    const first = await createJob(t, s.key, body, { 'idempotency-key': 'job-1' });
    const again = await createJob(t, s.key, body, { 'idempotency-key': 'job-1' });
    expect(first.statusCode).toBe(201);
    expect(again.statusCode).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json().bulkJob.id).toBe(first.json().bulkJob.id);
    expect(await sql(t, 'SELECT id FROM bulk_jobs WHERE shop_id = $1', [s.shopId])).toHaveLength(1);
  });
});
