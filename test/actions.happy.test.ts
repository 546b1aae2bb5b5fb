import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { API, contractRow, eventRows, insertContract } from './support/fixtures.js';

/** What each action does to a contract (docs/product.md §3 "Actions"). The clock stands at 2026-11-22T10:00:00Z. */

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

const act = (id: string, body: object) =>
  t.inject({ method: 'POST', url: `${API}/${id}/actions`, headers: bearer(key), payload: body });

async function ok(id: string, body: object) {
  const res = await act(id, body);
  expect(res.statusCode, res.body).toBe(200);
  const { contract } = res.json();
  expect(Object.keys(res.json())).toEqual(['contract']);
  // The response is the contract after the action, exactly what a read returns.
  expect((await t.inject({ url: `${API}/${id}`, headers: bearer(key) })).json().contract).toEqual(contract);
  return contract;
}

describe('pause', () => {
  it('ACTIVE → PAUSED with pausedAt now and resumeAt set; event contract.paused', async () => {
    const c = await insertContract(t, shopId);
    const contract = await ok(c.id, { action: 'pause', resumeAt: '2027-01-05T00:00:00Z' });
    expect(contract).toMatchObject({ status: 'PAUSED', pausedAt: NOW.toISOString(), resumeAt: '2027-01-05T00:00:00.000Z', updatedAt: NOW.toISOString() });
    expect(contract.nextBillingDate).toBe('2026-12-01T00:00:00.000Z');
    const events = await eventRows(t, c.id);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'contract.paused', fromStatus: 'ACTIVE', toStatus: 'PAUSED', actorType: 'api_key' });
  });

  it('without resumeAt: paused until resumed', async () => {
    const c = await insertContract(t, shopId);
    const contract = await ok(c.id, { action: 'pause' });
    expect(contract).toMatchObject({ status: 'PAUSED', pausedAt: NOW.toISOString(), resumeAt: null });
  });

  it('on a paused contract: pausedAt is kept, resumeAt replaced or cleared; event contract.pause_updated', async () => {
    const c = await insertContract(t, shopId);
    await ok(c.id, { action: 'pause', resumeAt: '2027-01-05T00:00:00Z' });
    t.clock.advance(3_600_000);
    const moved = await ok(c.id, { action: 'pause', resumeAt: '2027-02-01T12:30:00.250Z' });
    expect(moved).toMatchObject({ status: 'PAUSED', pausedAt: NOW.toISOString(), resumeAt: '2027-02-01T12:30:00.250Z', updatedAt: t.clock.now().toISOString() });
    t.clock.advance(3_600_000);
    const cleared = await ok(c.id, { action: 'pause' });
    expect(cleared).toMatchObject({ status: 'PAUSED', pausedAt: NOW.toISOString(), resumeAt: null });
    const events = await eventRows(t, c.id);
    expect(events.map((e) => e.type)).toEqual(['contract.paused', 'contract.pause_updated', 'contract.pause_updated']);
    expect(events[1]).toMatchObject({ fromStatus: 'PAUSED', toStatus: 'PAUSED', data: { resumeAt: '2027-02-01T12:30:00.250Z', previousResumeAt: '2027-01-05T00:00:00.000Z' } });
    expect(events[2].data).toEqual({ resumeAt: null, previousResumeAt: '2027-02-01T12:30:00.250Z' });
  });
});

describe('resume', () => {
  it('PAUSED → ACTIVE, pausedAt and resumeAt cleared, a future nextBillingDate kept; event contract.resumed', async () => {
    const c = await insertContract(t, shopId);
    await ok(c.id, { action: 'pause', resumeAt: '2027-01-05T00:00:00Z' });
    const contract = await ok(c.id, { action: 'resume' });
    expect(contract).toMatchObject({ status: 'ACTIVE', pausedAt: null, resumeAt: null, nextBillingDate: '2026-12-01T00:00:00.000Z' });
    const events = await eventRows(t, c.id);
    expect(events[1]).toMatchObject({ type: 'contract.resumed', fromStatus: 'PAUSED', toStatus: 'ACTIVE' });
  });

  it('moves a past nextBillingDate forward by whole intervals to the first one after now', async () => {
    const cases: [string, string, number, string][] = [
      ['2026-10-01T08:00:00.000Z', 'MONTH', 1, '2026-12-01T08:00:00.000Z'],
      ['2026-11-22T09:59:59.000Z', 'DAY', 1, '2026-11-23T09:59:59.000Z'],
      ['2026-11-22T10:00:00.000Z', 'DAY', 1, '2026-11-23T10:00:00.000Z'],
      ['2026-01-01T00:00:00.000Z', 'WEEK', 2, '2026-12-03T00:00:00.000Z'],
      ['2024-02-29T00:00:00.000Z', 'YEAR', 1, '2027-02-28T00:00:00.000Z'],
      ['2025-05-15T00:00:00.000Z', 'MONTH', 3, '2027-02-15T00:00:00.000Z'],
    ];
    for (const [next, interval, count, expected] of cases) {
      const c = await insertContract(t, shopId, { status: 'PAUSED', pausedAt: NOW, nextBillingDate: new Date(next), billingInterval: interval as never, billingIntervalCount: count });
      const contract = await ok(c.id, { action: 'resume' });
      expect(contract.nextBillingDate, `${next} every ${count} ${interval}`).toBe(expected);
      const [event] = await eventRows(t, c.id);
      expect(event.data).toEqual({ previousNextBillingDate: next, nextBillingDate: expected });
    }
  });

  it('month end: a contract billed on the 31st resumes on the month\'s last day, not a drifted one', async () => {
    const c = await insertContract(t, shopId, { status: 'PAUSED', pausedAt: NOW, nextBillingDate: new Date('2026-08-31T00:00:00.000Z') });
    expect((await ok(c.id, { action: 'resume' })).nextBillingDate).toBe('2026-11-30T00:00:00.000Z');
    const d = await insertContract(t, shopId, { status: 'PAUSED', pausedAt: NOW, nextBillingDate: new Date('2026-01-31T00:00:00.000Z') });
    t.clock.set('2026-12-05T00:00:00Z');
    expect((await ok(d.id, { action: 'resume' })).nextBillingDate).toBe('2026-12-31T00:00:00.000Z');
  });

  it('FAILED → ACTIVE', async () => {
    const c = await insertContract(t, shopId, { status: 'FAILED' });
    expect((await ok(c.id, { action: 'resume' })).status).toBe('ACTIVE');
    expect((await eventRows(t, c.id))[0]).toMatchObject({ type: 'contract.resumed', fromStatus: 'FAILED', toStatus: 'ACTIVE' });
  });
});

describe('cancel', () => {
  it('sets cancelledAt and the reason; event contract.cancelled', async () => {
    const c = await insertContract(t, shopId);
    const reason = 'ü'.repeat(500);
    const contract = await ok(c.id, { action: 'cancel', reason });
    expect(contract).toMatchObject({ status: 'CANCELLED', cancelledAt: NOW.toISOString(), cancellationReason: reason });
    expect((await eventRows(t, c.id))[0]).toMatchObject({ type: 'contract.cancelled', fromStatus: 'ACTIVE', toStatus: 'CANCELLED', data: { reason } });
  });

  it('without a reason; from PAUSED it also drops the scheduled resume', async () => {
    const c = await insertContract(t, shopId);
    await ok(c.id, { action: 'pause', resumeAt: '2027-01-05T00:00:00Z' });
    const contract = await ok(c.id, { action: 'cancel' });
    expect(contract).toMatchObject({ status: 'CANCELLED', cancellationReason: null, resumeAt: null, pausedAt: null });
    // Past the old resume moment it stays cancelled.
    t.clock.set('2027-01-06T00:00:00Z');
    expect((await t.inject({ url: `${API}/${c.id}`, headers: bearer(key) })).json().contract.status).toBe('CANCELLED');
  });
});

describe('skip', () => {
  it('moves nextBillingDate one interval forward and keeps the status; event contract.skipped', async () => {
    const cases: [string, string, number, string][] = [
      ['2026-12-01T00:00:00.000Z', 'MONTH', 1, '2027-01-01T00:00:00.000Z'],
      ['2027-01-31T00:00:00.000Z', 'MONTH', 1, '2027-02-28T00:00:00.000Z'],
      ['2026-12-01T00:00:00.000Z', 'WEEK', 2, '2026-12-15T00:00:00.000Z'],
      ['2026-12-01T00:00:00.000Z', 'DAY', 10, '2026-12-11T00:00:00.000Z'],
      ['2026-12-01T00:00:00.000Z', 'YEAR', 1, '2027-12-01T00:00:00.000Z'],
    ];
    for (const [next, interval, count, expected] of cases) {
      const c = await insertContract(t, shopId, { nextBillingDate: new Date(next), billingInterval: interval as never, billingIntervalCount: count });
      const contract = await ok(c.id, { action: 'skip' });
      expect(contract).toMatchObject({ status: 'ACTIVE', nextBillingDate: expected });
      expect((await eventRows(t, c.id))[0]).toMatchObject({ type: 'contract.skipped', fromStatus: 'ACTIVE', toStatus: 'ACTIVE', data: { previousNextBillingDate: next, nextBillingDate: expected } });
    }
  });
});

describe('reschedule', () => {
  it('sets nextBillingDate (fractional seconds accepted) from ACTIVE and PAUSED; event contract.rescheduled', async () => {
    const c = await insertContract(t, shopId);
    expect(await ok(c.id, { action: 'reschedule', nextBillingDate: '2027-01-05T10:00:00.123Z' })).toMatchObject({ status: 'ACTIVE', nextBillingDate: '2027-01-05T10:00:00.123Z' });
    await ok(c.id, { action: 'pause' });
    expect(await ok(c.id, { action: 'reschedule', nextBillingDate: '2026-11-22T10:00:01Z' })).toMatchObject({ status: 'PAUSED', nextBillingDate: '2026-11-22T10:00:01.000Z' });
    const events = await eventRows(t, c.id);
    expect(events.map((e) => e.type)).toEqual(['contract.rescheduled', 'contract.paused', 'contract.rescheduled']);
    expect(events[2]).toMatchObject({ fromStatus: 'PAUSED', toStatus: 'PAUSED', data: { previousNextBillingDate: '2027-01-05T10:00:00.123Z', nextBillingDate: '2026-11-22T10:00:01.000Z' } });
  });

  it('accepts exactly five years ahead', async () => {
    const c = await insertContract(t, shopId);
    expect((await ok(c.id, { action: 'reschedule', nextBillingDate: '2031-11-22T10:00:00Z' })).nextBillingDate).toBe('2031-11-22T10:00:00.000Z');
  });
});

describe('the stored row matches the response', () => {
  it('pause writes the columns the resource reports', async () => {
    const c = await insertContract(t, shopId);
    await ok(c.id, { action: 'pause', resumeAt: '2027-01-05T00:00:00Z' });
    const row = await contractRow(t, c.id);
    expect(row.status).toBe('PAUSED');
    expect(row.pausedAt?.toISOString()).toBe(NOW.toISOString());
    expect(row.resumeAt?.toISOString()).toBe('2027-01-05T00:00:00.000Z');
  });
});
