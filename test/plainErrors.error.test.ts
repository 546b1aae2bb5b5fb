import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { adminAuth, API, expectError } from './support/fixtures.js';

/**
 * What a client reads when its input is refused: the field or parameter named in `details`, and the reason in plain
 * words, never a validator's own phrasing ("Too big: expected number to be <=100", "Invalid option: …", "must NOT
 * have …"), on every surface: the API's bodies and queries, the admin API.
 */

const VALIDATOR_PHRASING = /Invalid input|Invalid option|Too big|Too small|expected \w+, received|must NOT|<=|>=|\binstance\b|\bschema\b/;

let t: TestApp;
let s: Awaited<ReturnType<TestApp['shopWithKey']>>;
let contractId: string;
beforeAll(async () => {
  t = await startTestApp();
  s = await t.shopWithKey();
  [{ id: contractId }] = await t.seed(s.shopId, 1);
});
afterAll(() => t.close());

describe('unknown query parameters', () => {
  it('are refused on every route of the API, each named in details', async () => {
    const endpoint = await t.inject({ method: 'POST', url: '/api/v1/webhook-endpoints', headers: bearer(s.key), payload: { url: 'http://127.0.0.1:9/hooks' } });
    expect(endpoint.statusCode).toBe(201);
    const endpointId = endpoint.json().endpoint.id;
    const routes: { method?: 'GET' | 'POST' | 'PATCH' | 'DELETE'; url: string; payload?: object }[] = [
      { url: API },
      { url: `${API}/${contractId}` },
      { url: `${API}/${contractId}/events` },
      { method: 'POST', url: `${API}/${contractId}/actions`, payload: { action: 'skip' } },
      { method: 'POST', url: `${API}/${contractId}/edits`, payload: { preview: true, operations: [{ op: 'set_frequency', interval: 'WEEK', intervalCount: 2 }] } },
      { url: '/api/v1/webhook-endpoints' },
      { url: `/api/v1/webhook-endpoints/${endpointId}` },
      { method: 'PATCH', url: `/api/v1/webhook-endpoints/${endpointId}`, payload: { description: 'x' } },
      { url: `/api/v1/webhook-endpoints/${endpointId}/deliveries` },
    ];
    for (const r of routes) {
      const joiner = r.url.includes('?') ? '&' : '?';
      const res = await t.inject({ ...r, url: `${r.url}${joiner}statuz=PAUSED&expand=lines`, headers: bearer(s.key) });
      const err = expectError(res, 400, 'invalid_request');
      expect(err.details, `${r.method ?? 'GET'} ${r.url}`).toEqual([
        { path: 'statuz', message: 'unknown parameter "statuz"' },
        { path: 'expand', message: 'unknown parameter "expand"' },
      ]);
      expect(err.message).toBe('Invalid request: unknown parameter "statuz" (and 1 more).');
    }
    // Nothing was changed by the refused action.
    const events = await t.inject({ url: `${API}/${contractId}/events`, headers: bearer(s.key) });
    expect(events.json().events).toEqual([]);
  });
});

describe('validation messages in plain words', () => {
  const cases: { what: string; method?: 'GET' | 'POST' | 'PATCH'; url: () => string; payload?: unknown; path: string; message: string; admin?: boolean }[] = [
    { what: 'a limit too large', url: () => `${API}?limit=1000`, path: 'limit', message: 'must be at most 100' },
    { what: 'a limit of zero', url: () => `${API}/${contractId}/events?limit=0`, path: 'limit', message: 'must be at least 1' },
    { what: 'a limit that is not a number', url: () => `${API}?limit=abc`, path: 'limit', message: 'must be a number' },
    { what: 'a status in the wrong case', url: () => `${API}?status=paused`, path: 'status', message: 'must be one of ACTIVE, PAUSED, CANCELLED, EXPIRED, FAILED' },
    { what: 'a timestamp of the wrong type', method: 'POST', url: () => `${API}/${contractId}/actions`, payload: { action: 'pause', resumeAt: 5 }, path: 'resumeAt', message: 'must be a string' },
    { what: 'a reason too long', method: 'POST', url: () => `${API}/${contractId}/actions`, payload: { action: 'cancel', reason: 'x'.repeat(501) }, path: 'reason', message: 'must have at most 500 characters' },
    { what: 'a quantity of 0', method: 'POST', url: () => `${API}/${contractId}/edits`, payload: { operations: [{ op: 'set_quantity', lineId: 'x', quantity: 0 }] }, path: 'operations.0.quantity', message: 'must be at least 1' },
    { what: 'no operations', method: 'POST', url: () => `${API}/${contractId}/edits`, payload: { operations: [] }, path: 'operations', message: 'must have at least 1 item' },
    { what: 'a fractional interval count', method: 'POST', url: () => `${API}/${contractId}/edits`, payload: { operations: [{ op: 'set_frequency', interval: 'WEEK', intervalCount: 1.5 }] }, path: 'operations.0.intervalCount', message: 'must be a whole number' },
    { what: 'an unknown interval', method: 'POST', url: () => `${API}/${contractId}/edits`, payload: { operations: [{ op: 'set_frequency', interval: 'DAYS', intervalCount: 1 }] }, path: 'operations.0.interval', message: 'must be one of DAY, WEEK, MONTH, YEAR' },
    { what: 'a missing field', method: 'POST', url: () => `${API}/${contractId}/edits`, payload: { operations: [{ op: 'remove_line' }] }, path: 'operations.0.lineId', message: 'is required' },
    { what: 'an endpoint status', method: 'PATCH', url: () => '/api/v1/webhook-endpoints/1', payload: { status: 'off' }, path: 'status', message: 'must be one of enabled, disabled' },
    { what: 'a key name of the wrong type (admin API)', method: 'POST', url: () => '/admin/api/keys', payload: { name: 5 }, path: 'name', message: 'must be a string', admin: true },
    { what: 'a key access (admin API)', method: 'POST', url: () => '/admin/api/keys', payload: { access: 'all' }, path: 'access', message: 'must be one of read_write, read_only', admin: true },
  ];
  for (const c of cases) {
    it(`${c.what}: "${c.path} ${c.message}"`, async () => {
      const headers = c.admin ? await adminAuth(t, s.domain) : bearer(s.key);
      const res = await t.inject({ method: c.method ?? 'GET', url: c.url(), headers, ...(c.payload === undefined ? {} : { payload: c.payload as object }) });
      const err = expectError(res, 400, 'invalid_request');
      expect(err.details).toContainEqual({ path: c.path, message: c.message });
      for (const d of err.details ?? []) expect(d.message).not.toMatch(VALIDATOR_PHRASING);
      expect(err.message).not.toMatch(VALIDATOR_PHRASING);
      expect(err.message.startsWith(`Invalid request: ${c.path} ${c.message}`) || err.message.startsWith('Invalid request: ')).toBe(true);
    });
  }
});
