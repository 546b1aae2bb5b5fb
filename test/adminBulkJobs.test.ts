import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { expectCountsAddUp, runJobs } from './support/bulk.js';
import { seedProducts } from '../src/services/catalog.js';
import { adminAuth, contractRow, eventRows, expectError, insertContract } from './support/fixtures.js';

/**
 * Bulk jobs from the admin (session token): the public API's routes over the same services, with the merchant as
 * the maker (createdBy admin); the Contracts page's filter, on its list and as the count it offers to change.
 */

const NOW = new Date('2026-11-22T10:00:00.000Z');
const ADMIN = '/admin/api/bulk-jobs';
const json = { 'content-type': 'application/json' };
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
beforeEach(() => t.clock.set(NOW));
afterAll(() => t?.close());

const EUR = (amount: string) => ({ amount, currencyCode: 'EUR' });
const line = (variantId: string, quantity: number, amount: string) => ({ title: `Variant ${variantId}`, variantId, quantity, price: EUR(amount) });

async function merchant() {
  const s = await t.shopWithKey();
  const headers = await adminAuth(t, s.domain);
  const create = (body: unknown) => t.inject({ method: 'POST', url: ADMIN, headers: { ...headers, ...json }, payload: body as object });
  const get = (path: string, extra: Record<string, string> = {}) => t.inject({ url: `${ADMIN}${path}`, headers: { ...headers, ...extra } });
  const post = (id: string, verb: 'start' | 'cancel') => t.inject({ method: 'POST', url: `${ADMIN}/${id}/${verb}`, headers: { ...headers, ...json }, payload: {} });
  const job = async (id: string) => {
    const res = await get(`/${id}`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json().bulkJob;
  };
  const results = async (id: string, query = '') => {
    const out = [];
    let cursor: string | null = null;
    do {
      const res = await get(`/${id}/results?limit=2${query}${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.statusCode, res.body).toBe(200);
      out.push(...res.json().results);
      cursor = res.json().nextCursor;
    } while (cursor);
    return out;
  };
  const contracts = async (query: string) => {
    const res = await t.inject({ url: `/admin/api/contracts?${query}`, headers });
    expect(res.statusCode, res.body).toBe(200);
    return (res.json().contracts as { id: string }[]).map((c) => c.id);
  };
  const count = async (query: string) => {
    const res = await t.inject({ url: `/admin/api/contracts/count?${query}`, headers });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as { count: number; more: boolean };
  };
  return { ...s, headers, create, get, post, job, results, contracts, count };
}

const newestFirst = (ids: string[]) => [...ids].sort((a, b) => Number(BigInt(b) - BigInt(a)));
const byId = (ids: string[]) => [...ids].sort((a, b) => Number(BigInt(a) - BigInt(b)));

describe('the Contracts page\'s filter', () => {
  it('narrows the list by statuses, exact email in any case, variant and next billing dates; counts what a job would take', async () => {
    const m = await merchant();
    const at = (iso: string) => new Date(iso);
    const a = await insertContract(t, m.shopId, { customerEmail: 'Ada@Example.com', nextBillingDate: at('2026-12-01T00:00:00Z'), lines: [line('51', 1, '24.00')] });
    const b = await insertContract(t, m.shopId, { customerEmail: 'ada@example.com', status: 'PAUSED', pausedAt: NOW, nextBillingDate: at('2026-12-10T00:00:00Z'), lines: [line('77', 1, '10.00')] });
    const c = await insertContract(t, m.shopId, { customerEmail: 'adam@example.com', nextBillingDate: at('2026-12-20T00:00:00Z'), lines: [line('51', 2, '24.00'), line('77', 1, '10.00')] });
    const d = await insertContract(t, m.shopId, { customerEmail: 'grace@example.com', status: 'CANCELLED', cancelledAt: NOW, nextBillingDate: at('2026-12-05T00:00:00Z') });
    // Another shop's contracts never show, nor count.
    const other = await t.shopWithKey();
    await insertContract(t, other.shopId, { customerEmail: 'ada@example.com' });

    const cases: [string, string[]][] = [
      ['', [a.id, b.id, c.id, d.id]],
      ['status=ACTIVE', [a.id, c.id]],
      ['status=ACTIVE&status=PAUSED', [a.id, b.id, c.id]],
      ['customerEmail=ADA%40example.com', [a.id, b.id]],
      ['variantId=77', [b.id, c.id]],
      ['nextBillingDateFrom=2026-12-05T00:00:00Z', [b.id, c.id, d.id]],
      ['nextBillingDateFrom=2026-12-05T00:00:00Z&nextBillingDateTo=2026-12-10T00:00:00.000Z', [b.id, d.id]],
      ['status=ACTIVE&variantId=51&nextBillingDateTo=2026-12-19T23:59:59.999Z', [a.id]],
      ['customerEmail=nobody%40example.com', []],
    ];
    for (const [query, expected] of cases) {
      expect(await m.contracts(query), query).toEqual(newestFirst(expected));
      expect(await m.count(query), query).toEqual({ count: expected.length, more: false });
    }
    // The search box still narrows within the filter.
    expect(await m.contracts('status=ACTIVE&query=adam')).toEqual([c.id]);
    // The count is what a job made with the same filter takes.
    const res = await m.create({ selector: { filter: { status: ['ACTIVE', 'PAUSED'], variantId: '77' } }, change: { action: 'skip' }, preview: true });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().bulkJob.counts.matched).toBe((await m.count('status=ACTIVE&status=PAUSED&variantId=77')).count);
  });

  it('refuses a filter the public list refuses, naming the parameter', async () => {
    const m = await merchant();
    for (const [query, path] of [
      ['status=SLEEPING', 'status'],
      ['nextBillingDateFrom=2026-12-05T00:00:00%2B02:00', 'nextBillingDateFrom'],
      ['nextBillingDateTo=2026-12-05', 'nextBillingDateTo'],
      ['variantId=abc', 'variantId'],
      ['customerId=x1', 'customerId'],
      ['color=red', 'color'],
    ]) {
      for (const url of [`/admin/api/contracts?${query}`, `/admin/api/contracts/count?${query}`]) {
        const error = expectError(await t.inject({ url, headers: m.headers }), 400, 'invalid_request');
        expect(JSON.stringify(error.details), url).toContain(path);
      }
    }
  });
});

describe('bulk jobs from the admin', () => {
  it('a pause by filter: made as the admin, previewed, read with its results (JSON and CSV), started, run', async () => {
    const m = await merchant();
    const active = [await insertContract(t, m.shopId), await insertContract(t, m.shopId), await insertContract(t, m.shopId)];
    const cancelled = await insertContract(t, m.shopId, { status: 'CANCELLED', cancelledAt: NOW });
    const res = await m.create({ selector: { filter: { status: ['ACTIVE', 'CANCELLED'] } }, change: { action: 'pause', resumeAt: '2027-01-05T00:00:00Z' }, preview: true });
    expect(res.statusCode, res.body).toBe(201);
    const made = res.json().bulkJob;
    expect(made).toMatchObject({
      status: 'previewing',
      preview: true,
      selector: { filter: { status: ['ACTIVE', 'CANCELLED'] } },
      change: { action: 'pause', resumeAt: '2027-01-05T00:00:00Z' },
      counts: { matched: 4, pending: 4 },
      createdBy: { type: 'admin' },
    });
    expect(made.createdBy).toEqual({ type: 'admin' });

    await runJobs(t);
    const previewed = await m.job(made.id);
    expect(previewed).toMatchObject({ status: 'previewed', counts: { matched: 4, pending: 0, succeeded: 3, failed: 1, skipped: 0 } });
    expect(previewed.totals).toEqual([{ currencyCode: 'EUR', before: '144.00', after: '144.00' }]);
    expectCountsAddUp(previewed);
    for (const c of active) expect((await contractRow(t, c.id)).status).toBe('ACTIVE');
    // The results, paged in contract id order; the problem by itself.
    const all = await m.results(made.id);
    expect(all.map((r: { contractId: string }) => r.contractId)).toEqual(byId([...active, cancelled].map((c) => c.id)));
    const problems = await m.results(made.id, '&status=failed');
    expect(problems).toEqual([{ contractId: cancelled.id, status: 'failed', error: { code: 'invalid_state', message: expect.stringContaining('CANCELLED') } }]);
    // The same as one CSV download.
    const csv = await m.get(`/${made.id}/results`, { accept: 'text/csv' });
    expect(csv.statusCode).toBe(200);
    expect(csv.headers['content-type']).toMatch(/^text\/csv/);
    expect(csv.headers['content-disposition']).toBe(`attachment; filename="bulk-job-${made.id}.csv"`);
    const lines = csv.body.trim().split('\r\n');
    expect(lines[0]).toBe('contractId,status,code,message,totalBefore,totalAfter,currencyCode');
    expect(lines.slice(1).map((l) => l.split(',').slice(0, 3).join(','))).toEqual(
      byId([...active, cancelled].map((c) => c.id)).map((id) => (id === cancelled.id ? `${id},failed,invalid_state` : `${id},succeeded,`)),
    );

    const started = await m.post(made.id, 'start');
    expect(started.statusCode, started.body).toBe(200);
    expect(started.json().bulkJob).toMatchObject({ status: 'queued', counts: { matched: 4, pending: 4 } });
    await runJobs(t);
    const done = await m.job(made.id);
    expect(done).toMatchObject({ status: 'completed', counts: { matched: 4, succeeded: 3, failed: 1 } });
    for (const c of active) {
      const row = await contractRow(t, c.id);
      expect(row.status).toBe('PAUSED');
      expect(row.resumeAt?.toISOString()).toBe('2027-01-05T00:00:00.000Z');
      expect(await eventRows(t, c.id)).toMatchObject([{ type: 'contract.paused', actorType: 'bulk_job', actorId: made.id }]);
    }
    expect((await contractRow(t, cancelled.id)).status).toBe('CANCELLED');

    // Listed on the Bulk jobs page, and the same job through the public API with the shop's key.
    const list = await m.get('');
    expect(list.statusCode).toBe(200);
    expect(list.json().bulkJobs.map((j: { id: string }) => j.id)).toEqual([made.id]);
    const viaApi = await t.inject({ url: `/api/v1/bulk-jobs/${made.id}`, headers: bearer(m.key) });
    expect(viaApi.json().bulkJob).toMatchObject({ id: made.id, status: 'completed', createdBy: { type: 'admin' } });
  });

  it('an edit by variant; a list by status, paged; cancel discards a preview, and start or cancel from an end is 409', async () => {
    const m = await merchant();
    await seedProducts(t.ctx, m.shopId);
    const two = await insertContract(t, m.shopId, { lines: [line('51', 2, '24.00'), line('77', 1, '10.00')] });
    const none = await insertContract(t, m.shopId, { lines: [line('77', 3, '10.00')] });
    const rise = await m.create({ selector: { filter: { variantId: '51' } }, change: { operations: [{ op: 'set_price', variantId: '51', price: '26.50' }] }, preview: true });
    expect(rise.statusCode, rise.body).toBe(201);
    expect(rise.json().bulkJob.counts.matched).toBe(1);
    const swap = await m.create({ selector: { contractIds: [two.id, none.id] }, change: { operations: [{ op: 'swap_variant', fromVariantId: '77', variantId: '40002', price: '20.00' }] }, preview: true });
    expect(swap.statusCode, swap.body).toBe(201);
    expect(swap.json().bulkJob.selector).toEqual({ contractIds: { count: 2 } });
    await runJobs(t);
    expect((await m.job(rise.json().bulkJob.id)).totals).toEqual([{ currencyCode: 'EUR', before: '58.00', after: '63.00' }]);
    expect((await m.job(swap.json().bulkJob.id)).totals).toEqual([{ currencyCode: 'EUR', before: '88.00', after: '128.00' }]);

    const cancelled = await m.post(rise.json().bulkJob.id, 'cancel');
    expect(cancelled.statusCode, cancelled.body).toBe(200);
    expect(cancelled.json().bulkJob.status).toBe('cancelled');
    expect(expectError(await m.post(rise.json().bulkJob.id, 'start'), 409, 'invalid_state').message).toMatch(/cancelled/);
    expectError(await m.post(rise.json().bulkJob.id, 'cancel'), 409, 'invalid_state');
    await runJobs(t);
    expect((await contractRow(t, two.id)).lines[0].price.amount).toBe('24.00');

    const page1 = await m.get('?limit=1');
    expect(page1.json().bulkJobs.map((j: { id: string }) => j.id)).toEqual([swap.json().bulkJob.id]);
    const page2 = await m.get(`?limit=1&cursor=${page1.json().nextCursor}`);
    expect(page2.json()).toMatchObject({ bulkJobs: [{ id: rise.json().bulkJob.id }], nextCursor: null });
    const byStatus = await m.get('?status=previewed&status=queued');
    expect(byStatus.json().bulkJobs.map((j: { id: string }) => j.id)).toEqual([swap.json().bulkJob.id]);
  });

  it('another shop\'s job is not found on any route, and never listed', async () => {
    const mine = await merchant();
    const theirs = await merchant();
    const c = await insertContract(t, theirs.shopId);
    const id = (await theirs.create({ selector: { contractIds: [c.id] }, change: { action: 'pause' }, preview: true })).json().bulkJob.id;
    await runJobs(t);
    expectError(await mine.get(`/${id}`), 404, 'not_found');
    expectError(await mine.get(`/${id}/results`), 404, 'not_found');
    expectError(await mine.get(`/${id}/results`, { accept: 'text/csv' }), 404, 'not_found');
    expectError(await mine.post(id, 'start'), 404, 'not_found');
    expectError(await mine.post(id, 'cancel'), 404, 'not_found');
    expectError(await mine.get('/not-a-job-id'), 404, 'not_found');
    expect((await mine.get('')).json().bulkJobs).toEqual([]);
    // Untouched: still the owner's to start.
    expect((await theirs.job(id)).status).toBe('previewed');
    await runJobs(t);
    expect((await contractRow(t, c.id)).status).toBe('ACTIVE');
  });

  it('refuses what the API refuses, in the same envelope; only a session token opens it', async () => {
    const m = await merchant();
    const c = await insertContract(t, m.shopId);
    const selector = { contractIds: [c.id] };
    expect(expectError(await m.create({ selector, change: { action: 'bill_now' } }), 400, 'invalid_request').message).toMatch(/bill_now/);
    expectError(await m.create({ selector, change: { action: 'explode' } }), 400, 'unsupported_action');
    expect(expectError(await m.create({ selector, change: { action: 'pause' }, color: 'red' }), 400, 'invalid_request').details).toEqual([expect.objectContaining({ path: 'color' })]);
    expectError(await m.create({ selector: { filter: { status: ['SLEEPING'] } }, change: { action: 'pause' } }), 400, 'invalid_request');
    expectError(await m.create({ selector, change: { operations: [{ op: 'set_price', variantId: '51' }] } }), 400, 'invalid_request');
    const text = await t.inject({ method: 'POST', url: ADMIN, headers: { ...m.headers, 'content-type': 'text/plain' }, payload: 'x' });
    expectError(text, 415, 'unsupported_media_type');
    expectError(await t.inject({ url: ADMIN }), 401, 'unauthorized');
    expectError(await t.inject({ url: ADMIN, headers: bearer(m.key) }), 401, 'unauthorized');
    expectError(await t.inject({ method: 'POST', url: ADMIN, headers: { ...bearer(m.key), ...json }, payload: { selector, change: { action: 'pause' } } }), 401, 'unauthorized');
    // Nothing was made.
    expect((await m.get('')).json().bulkJobs).toEqual([]);
  });
});
