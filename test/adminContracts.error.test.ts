import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.js';
import { adminAuth, contractRow, eventRows, expectError, insertContract } from './support/fixtures.js';

/** The admin's contract endpoints refuse what they cannot do in the envelope, naming what was wrong; nothing changes. */

let t: TestApp;
let headers: Record<string, string>;
let shopId: string;
beforeAll(async () => {
  t = await startTestApp();
  const s = await t.shopWithKey();
  shopId = s.shopId;
  headers = await adminAuth(t, s.domain);
});
afterAll(() => t?.close());

const json = { 'content-type': 'application/json' };
const list = (qs: string) => t.inject({ url: `/admin/api/contracts?${qs}`, headers });
const act = (id: string, payload: unknown, extra: Record<string, string> = json) =>
  t.inject({ method: 'POST', url: `/admin/api/contracts/${id}/actions`, headers: { ...headers, ...extra }, payload: payload as string });

describe('searching', () => {
  it.each([
    ['status=paused', 'status'],
    ['status=', 'status'],
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['limit=ten', 'limit'],
    ['cursor=bm90LWEtY3Vyc29y', 'cursor'],
    [`cursor=${Buffer.from('older:99999999999999999999').toString('base64url')}`, 'cursor'],
    [`cursor=${'x'.repeat(201)}`, 'cursor'],
    ['query=ada%00', 'query'],
    [`query=${'a'.repeat(255)}`, 'query'],
    ['query=a&query=b', 'query'],
    ['sort=email', 'sort'],
  ])('%s is 400 invalid_request naming %s', async (qs, param) => {
    const error = expectError(await list(qs), 400, 'invalid_request');
    expect(error.details?.map((d) => d.path)).toContain(param);
  });

  it('a query nothing matches is an empty page, not an error', async () => {
    for (const query of ['nobody@example.com', '0', '9223372036854775807', '99999999999999999999', "' OR 1=1 --", '\\']) {
      const res = await list(`query=${encodeURIComponent(query)}`);
      expect(res.statusCode, query).toBe(200);
      expect(res.json()).toEqual({ contracts: [], nextCursor: null, previousCursor: null });
    }
  });
});

describe('reading one contract', () => {
  it('a malformed id is 400 naming contract_id; an unknown one, or one past int8, is 404', async () => {
    const bad = expectError(await t.inject({ url: '/admin/api/contracts/abc', headers }), 400, 'invalid_request');
    expect(bad.details).toEqual([{ path: 'contract_id', message: expect.any(String) }]);
    expectError(await t.inject({ url: '/admin/api/contracts/1', headers }), 404, 'not_found');
    expectError(await t.inject({ url: '/admin/api/contracts/9999999999999999999', headers }), 404, 'not_found');
    expectError(await t.inject({ url: '/admin/api/contracts/1/actions', headers }), 405, 'method_not_allowed');
  });
});

describe('acting', () => {
  it('an action its status does not allow is 409 invalid_state naming the status and the allowed ones; nothing changes', async () => {
    const c = await insertContract(t, shopId, { status: 'CANCELLED', cancelledAt: t.clock.now() });
    const error = expectError(await act(c.id, { action: 'skip' }), 409, 'invalid_state');
    expect(error.message).toBe('Cannot skip a contract that is CANCELLED; skip is allowed only from ACTIVE.');
    const paused = await insertContract(t, shopId, { status: 'PAUSED', pausedAt: t.clock.now() });
    expectError(await act(paused.id, { action: 'skip' }), 409, 'invalid_state');
    expect(await contractRow(t, paused.id)).toMatchObject({ status: 'PAUSED', nextBillingDate: new Date('2026-12-01T00:00:00.000Z') });
    expect(await eventRows(t, c.id)).toEqual([]);
    expect(await eventRows(t, paused.id)).toEqual([]);
  });

  it('bodies the API refuses are refused the same way, and change nothing', async () => {
    const c = await insertContract(t, shopId);
    const cases: [unknown, number, string, string?][] = [
      [{ action: 'archive' }, 400, 'unsupported_action'],
      [{ action: 'pause', resumeAt: '2020-01-01T00:00:00Z' }, 400, 'invalid_request', 'resumeAt'],
      [{ action: 'pause', resumeAt: '2027-01-05T00:00:00+02:00' }, 400, 'invalid_request', 'resumeAt'],
      [{ action: 'reschedule' }, 400, 'invalid_request', 'nextBillingDate'],
      [{ action: 'reschedule', nextBillingDate: '2040-01-01T00:00:00Z' }, 400, 'invalid_request', 'nextBillingDate'],
      [{ action: 'cancel', reason: 'x'.repeat(501) }, 400, 'invalid_request', 'reason'],
      [{ action: 'skip', when: 'now' }, 400, 'invalid_request', 'when'],
      [[], 400, 'invalid_request'],
      ['{"action":', 400, 'invalid_request'],
    ];
    for (const [body, status, code, path] of cases) {
      const error = expectError(await act(c.id, body), status, code);
      if (path) expect(error.details?.map((d) => d.path), JSON.stringify(body)).toContain(path);
    }
    expectError(await act(c.id, JSON.stringify({ action: 'pause' }), {}), 415, 'unsupported_media_type');
    expectError(await act(c.id, JSON.stringify({ action: 'pause' }), { 'content-type': 'text/plain' }), 415, 'unsupported_media_type');
    expectError(await act(c.id, JSON.stringify({ action: 'cancel', reason: 'x'.repeat(20_000) })), 413, 'payload_too_large');
    expectError(await act('12ab', { action: 'pause' }), 400, 'invalid_request');
    expectError(await act('1', { action: 'pause' }), 404, 'not_found');
    expect(await contractRow(t, c.id)).toMatchObject({ status: 'ACTIVE', version: 0 });
    expect(await eventRows(t, c.id)).toEqual([]);
  });
});
