import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { API, contractRow, eventRows, expectError, insertContract } from './support/fixtures.js';

/** Which action is allowed from which status, and every way an action body can be wrong (docs/product.md §3, §4). */

const NOW = new Date('2026-11-22T10:00:00.000Z');
let t: TestApp;
let key: string;
let shopId: string;
beforeAll(async () => {
  t = await startTestApp();
  ({ key, shopId } = await t.shopWithKey());
});
beforeEach(() => t.clock.set(NOW));
afterAll(() => t.close());

const act = (id: string, body: unknown, headers: Record<string, string> = {}) =>
  t.inject({ method: 'POST', url: `${API}/${id}/actions`, headers: { ...bearer(key), ...headers }, payload: body as object });

const STATUSES = ['ACTIVE', 'PAUSED', 'CANCELLED', 'EXPIRED', 'FAILED'] as const;
type Status = (typeof STATUSES)[number];

/** The table of docs/product.md §3, written out here rather than imported. */
const TABLE: Record<string, { body: object; from: Status[]; to: (s: Status) => Status; event: (s: Status) => string }> = {
  pause: { body: { action: 'pause', resumeAt: '2027-01-05T00:00:00Z' }, from: ['ACTIVE', 'PAUSED'], to: () => 'PAUSED', event: (s) => (s === 'PAUSED' ? 'contract.pause_updated' : 'contract.paused') },
  resume: { body: { action: 'resume' }, from: ['PAUSED', 'FAILED'], to: () => 'ACTIVE', event: () => 'contract.resumed' },
  cancel: { body: { action: 'cancel', reason: 'too much coffee' }, from: ['ACTIVE', 'PAUSED', 'FAILED'], to: () => 'CANCELLED', event: () => 'contract.cancelled' },
  skip: { body: { action: 'skip' }, from: ['ACTIVE'], to: (s) => s, event: () => 'contract.skipped' },
  reschedule: { body: { action: 'reschedule', nextBillingDate: '2027-02-01T00:00:00Z' }, from: ['ACTIVE', 'PAUSED'], to: (s) => s, event: () => 'contract.rescheduled' },
};

const inStatus = (status: Status) =>
  insertContract(t, shopId, {
    status,
    pausedAt: status === 'PAUSED' ? NOW : null,
    cancelledAt: status === 'CANCELLED' ? NOW : null,
  });

describe('allowed from exactly the statuses of the table', () => {
  const pairs = Object.keys(TABLE).flatMap((action) => STATUSES.map((status) => [action, status] as const));

  it.each(pairs)('%s from %s', async (action, status) => {
    const { body, from, to, event } = TABLE[action];
    const c = await inStatus(status);
    const before = await contractRow(t, c.id);
    const res = await act(c.id, body);
    if (from.includes(status)) {
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().contract.status).toBe(to(status));
      const events = await eventRows(t, c.id);
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({ type: event(status), fromStatus: status, toStatus: to(status) });
    } else {
      const error = expectError(res, 409, 'invalid_state');
      expect(error.message).toContain(status);
      for (const allowed of from) expect(error.message).toContain(allowed);
      for (const other of STATUSES.filter((s) => s !== status && !from.includes(s))) expect(error.message).not.toContain(other);
      expect(await contractRow(t, c.id)).toEqual(before);
      expect(await eventRows(t, c.id)).toHaveLength(0);
    }
  });
});

describe('the action name', () => {
  it('an unknown action is 400 unsupported_action listing the five', async () => {
    const c = await inStatus('ACTIVE');
    for (const action of ['delete', 'PAUSE', 'pause ', '']) {
      const error = expectError(await act(c.id, { action }), 400, 'unsupported_action');
      for (const name of ['pause', 'resume', 'cancel', 'skip', 'reschedule']) expect(error.message).toContain(name);
    }
  });

  it('a missing or non-string action is 400 invalid_request', async () => {
    const c = await inStatus('ACTIVE');
    for (const body of [{}, { action: 1 }, { action: null }, { action: ['pause'] }, { resumeAt: '2027-01-05T00:00:00Z' }]) {
      const error = expectError(await act(c.id, body), 400, 'invalid_request');
      expect(error.details?.[0].path).toBe('action');
    }
  });

  it('a body that is not a JSON object is 400 invalid_request', async () => {
    const c = await inStatus('ACTIVE');
    for (const payload of ['[]', '"pause"', '42', 'null', 'true']) {
      expectError(await act(c.id, payload, { 'content-type': 'application/json' }), 400, 'invalid_request');
    }
    expect(await eventRows(t, c.id)).toHaveLength(0);
  });
});

describe('fields', () => {
  it('an unknown field is 400 invalid_request naming it in details', async () => {
    const c = await inStatus('ACTIVE');
    const cases: [object, string][] = [
      [{ action: 'skip', count: 2 }, 'count'],
      [{ action: 'resume', resumeAt: '2027-01-05T00:00:00Z' }, 'resumeAt'],
      [{ action: 'pause', reason: 'x' }, 'reason'],
      [{ action: 'cancel', nextBillingDate: '2027-01-05T00:00:00Z' }, 'nextBillingDate'],
      [{ action: 'reschedule', nextBillingDate: '2027-01-05T00:00:00Z', resume_at: 'x' }, 'resume_at'],
    ];
    for (const [body, field] of cases) {
      const error = expectError(await act(c.id, body), 400, 'invalid_request');
      expect(error.details).toContainEqual({ path: field, message: expect.stringContaining(field) });
      expect(error.message).toContain(field);
    }
    expect(await eventRows(t, c.id)).toHaveLength(0);
  });

  it('reschedule without nextBillingDate, wrong types, and a reason over 500 characters are 400', async () => {
    const c = await inStatus('ACTIVE');
    const cases: [object, string][] = [
      [{ action: 'reschedule' }, 'nextBillingDate'],
      [{ action: 'reschedule', nextBillingDate: 1798761600000 }, 'nextBillingDate'],
      [{ action: 'pause', resumeAt: null }, 'resumeAt'],
      [{ action: 'cancel', reason: 'x'.repeat(501) }, 'reason'],
      [{ action: 'cancel', reason: 42 }, 'reason'],
    ];
    for (const [body, path] of cases) {
      const error = expectError(await act(c.id, body), 400, 'invalid_request');
      expect(error.details?.map((d) => d.path)).toContain(path);
    }
    expect((await contractRow(t, c.id)).status).toBe('ACTIVE');
  });
});

describe('timestamps (resumeAt, nextBillingDate)', () => {
  const bad = [
    ['an offset', '2027-01-05T00:00:00+02:00'],
    ['+00:00 instead of Z', '2027-01-05T00:00:00+00:00'],
    ['no zone', '2027-01-05T00:00:00'],
    ['a date only', '2027-01-05'],
    ['an impossible date', '2027-02-30T00:00:00Z'],
    ['an impossible time', '2027-01-05T25:00:00Z'],
    ['a past moment', '2026-11-22T09:59:59.999Z'],
    ['now', '2026-11-22T10:00:00Z'],
    ['more than 5 years ahead', '2031-11-22T10:00:00.001Z'],
    ['far ahead', '9999-12-31T23:59:59Z'],
    ['free text', 'next tuesday'],
  ] as const;

  it.each(bad)('%s → 400 invalid_request with the field in details', async (_name, value) => {
    const c = await inStatus('ACTIVE');
    for (const [body, path] of [
      [{ action: 'pause', resumeAt: value }, 'resumeAt'],
      [{ action: 'reschedule', nextBillingDate: value }, 'nextBillingDate'],
    ] as const) {
      const error = expectError(await act(c.id, body), 400, 'invalid_request');
      expect(error.details?.[0].path).toBe(path);
    }
    const row = await contractRow(t, c.id);
    expect(row.status).toBe('ACTIVE');
    expect(row.nextBillingDate.toISOString()).toBe('2026-12-01T00:00:00.000Z');
  });

  it('fractional seconds and a moment 1 ms ahead are accepted', async () => {
    const c = await inStatus('ACTIVE');
    expect((await act(c.id, { action: 'reschedule', nextBillingDate: '2026-11-22T10:00:00.001Z' })).statusCode).toBe(200);
    expect((await act(c.id, { action: 'pause', resumeAt: '2027-01-05T00:00:00.5Z' })).json().contract.resumeAt).toBe('2027-01-05T00:00:00.500Z');
  });
});
