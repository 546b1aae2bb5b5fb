import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKey } from '../src/services/generateKey.js';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { API, insertContract, setContract } from './support/fixtures.js';

/** Reading contracts and their history (docs/product.md, "Subscription contracts", "Reads"). */

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const TIMESTAMP_Z = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const byId = (a: string, b: string) => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0);

describe('GET /subscription-contracts/{id}', () => {
  it('returns the whole contract: status, customer, policies, lines with ids, address, discounts, totals', async () => {
    const { key, shopId } = await t.shopWithKey();
    const address = { firstName: 'Ada', lastName: 'Lovelace', address1: '12 St James Square', city: 'London', zip: 'SW1Y 4JH', countryCode: 'GB' };
    const discount = { id: 'd1', title: 'WELCOME10', code: 'WELCOME10', value: { type: 'percentage' as const, percentage: 10 } };
    const row = await insertContract(t, shopId, {
      status: 'PAUSED',
      pausedAt: new Date('2026-11-22T10:00:00.000Z'),
      resumeAt: new Date('2027-01-05T00:00:00.000Z'),
      shippingAddress: address,
      deliveryPrice: { amount: '4.90', currencyCode: 'EUR' },
      discounts: [discount],
    });
    const res = await t.inject({ url: `${API}/${row.id}`, headers: bearer(key) });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.json()).toEqual({
      contract: {
        id: row.id,
        status: 'PAUSED',
        customer: { id: '9001', email: 'ada@example.com' },
        billingPolicy: { interval: 'MONTH', intervalCount: 1 },
        deliveryPolicy: { interval: 'MONTH', intervalCount: 1 },
        nextBillingDate: '2026-12-01T00:00:00.000Z',
        lines: [{ id: row.lines[0].id, title: 'Coffee 1kg', variantId: '51', quantity: 2, price: { amount: '24.00', currencyCode: 'EUR' } }],
        shippingAddress: address,
        discounts: [discount],
        // 2 × 24.00, less 10 %, plus 4.90 shipping.
        totals: { subtotal: '48.00', discounts: '4.80', shipping: '4.90', total: '48.10', currencyCode: 'EUR' },
        pausedAt: '2026-11-22T10:00:00.000Z',
        resumeAt: '2027-01-05T00:00:00.000Z',
        cancelledAt: null,
        cancellationReason: null,
        billing: { status: 'ok', failedAttempts: 0, nextAttemptAt: null, lastAttempt: null },
        createdAt: t.clock.now().toISOString(),
        updatedAt: t.clock.now().toISOString(),
      },
    });
    expect(typeof res.json().contract.id).toBe('string');
  });

  it('every timestamp of seeded contracts is ISO 8601 UTC ending in Z', async () => {
    const { key, shopId } = await t.shopWithKey();
    const seeded = await t.seed(shopId, 5);
    for (const { id } of seeded) {
      const { contract } = (await t.inject({ url: `${API}/${id}`, headers: bearer(key) })).json();
      for (const field of ['nextBillingDate', 'createdAt', 'updatedAt']) expect(contract[field]).toMatch(TIMESTAMP_Z);
      expect(contract.status).toBe('ACTIVE');
      expect(['DAY', 'WEEK', 'MONTH', 'YEAR']).toContain(contract.billingPolicy.interval);
      for (const line of contract.lines) expect(line.price.amount).toMatch(/^\d+\.\d{2}$/);
    }
  });
});

describe('GET /subscription-contracts (list)', () => {
  it('lists only the key\'s shop, in id order, filtered by status', async () => {
    const { key, shopId } = await t.shopWithKey();
    const other = await t.shopWithKey();
    await t.seed(other.shopId, 3);
    const mine = await t.seed(shopId, 6);
    await setContract(t, mine[1].id, { status: 'PAUSED', pausedAt: t.clock.now() });
    await setContract(t, mine[4].id, { status: 'PAUSED', pausedAt: t.clock.now() });
    await setContract(t, mine[5].id, { status: 'CANCELLED', cancelledAt: t.clock.now() });

    const all = (await t.inject({ url: API, headers: bearer(key) })).json();
    expect(all.contracts.map((c: { id: string }) => c.id)).toEqual(mine.map((c) => c.id).sort(byId));
    expect(all.nextCursor).toBeNull();

    const paused = (await t.inject({ url: `${API}?status=PAUSED`, headers: bearer(key) })).json();
    expect(paused.contracts.map((c: { id: string }) => c.id)).toEqual([mine[1].id, mine[4].id]);
    expect(paused.contracts.every((c: { status: string }) => c.status === 'PAUSED')).toBe(true);
    const expired = (await t.inject({ url: `${API}?status=EXPIRED`, headers: bearer(key) })).json();
    expect(expired).toEqual({ contracts: [], nextCursor: null });
  });

  it('defaults to 50 per page; cursor pages cover every id exactly once in id order', async () => {
    const { key, shopId } = await t.shopWithKey();
    const seeded = await t.seed(shopId, 57);
    const expected = seeded.map((c) => c.id).sort(byId);

    const first = (await t.inject({ url: API, headers: bearer(key) })).json();
    expect(first.contracts).toHaveLength(50);
    expect(typeof first.nextCursor).toBe('string');
    const second = (await t.inject({ url: `${API}?cursor=${encodeURIComponent(first.nextCursor)}`, headers: bearer(key) })).json();
    expect(second.contracts).toHaveLength(7);
    expect(second.nextCursor).toBeNull();
    expect([...first.contracts, ...second.contracts].map((c: { id: string }) => c.id)).toEqual(expected);

    for (const limit of [7, 19, 100]) {
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const url: string = `${API}?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
        const page = (await t.inject({ url, headers: bearer(key) })).json();
        expect(page.contracts.length).toBeLessThanOrEqual(limit);
        seen.push(...page.contracts.map((c: { id: string }) => c.id));
        cursor = page.nextCursor;
        pages++;
      } while (cursor);
      expect(seen, `limit ${limit}`).toEqual(expected);
      expect(pages).toBe(Math.ceil(57 / limit));
    }
  });

  it('limit=1 walks a shop one contract per page', async () => {
    const { key, shopId } = await t.shopWithKey();
    const ids = (await t.seed(shopId, 3)).map((c) => c.id).sort(byId);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { contracts: { id: string }[]; nextCursor: string | null } = (
        await t.inject({ url: `${API}?limit=1${cursor ? `&cursor=${cursor}` : ''}`, headers: bearer(key) })
      ).json();
      expect(page.contracts).toHaveLength(1);
      seen.push(page.contracts[0].id);
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual(ids);
  });

  it('a status filter pages with the same cursor', async () => {
    const { key, shopId } = await t.shopWithKey();
    const seeded = await t.seed(shopId, 9);
    const paused = seeded.filter((_, i) => i % 2 === 0).map((c) => c.id);
    for (const id of paused) await setContract(t, id, { status: 'PAUSED', pausedAt: t.clock.now() });
    const p1 = (await t.inject({ url: `${API}?status=PAUSED&limit=3`, headers: bearer(key) })).json();
    const p2 = (await t.inject({ url: `${API}?status=PAUSED&limit=3&cursor=${p1.nextCursor}`, headers: bearer(key) })).json();
    expect([...p1.contracts, ...p2.contracts].map((c: { id: string }) => c.id)).toEqual(paused.sort(byId));
    expect(p2.nextCursor).toBeNull();
  });
});

describe('GET /subscription-contracts/{id}/events', () => {
  it('lists what happened, newest first, with actor, key fingerprint, from/to and data', async () => {
    const { key, shopId, fingerprint } = await t.shopWithKey();
    const second = await generateKey({ ctx: t.ctx, input: { shopId, name: 'second' } });
    const row = await insertContract(t, shopId, { nextBillingDate: new Date('2026-12-01T00:00:00.000Z') });
    const url = `${API}/${row.id}`;

    const empty = (await t.inject({ url: `${url}/events`, headers: bearer(key) })).json();
    expect(empty).toEqual({ events: [], nextCursor: null });

    await t.inject({ method: 'POST', url: `${url}/actions`, headers: bearer(key), payload: { action: 'skip' } });
    t.clock.advance(1000);
    await t.inject({ method: 'POST', url: `${url}/actions`, headers: bearer(second.secret), payload: { action: 'pause', resumeAt: '2027-03-01T00:00:00Z' } });
    t.clock.advance(1000);
    await t.inject({ method: 'POST', url: `${url}/actions`, headers: bearer(key), payload: { action: 'pause' } });
    t.clock.advance(1000);
    await t.inject({ method: 'POST', url: `${url}/actions`, headers: bearer(key), payload: { action: 'cancel', reason: 'moving abroad' } });

    const res = await t.inject({ url: `${url}/events`, headers: bearer(key) });
    expect(res.statusCode).toBe(200);
    const { events, nextCursor } = res.json();
    expect(nextCursor).toBeNull();
    expect(events.map((e: { type: string }) => e.type)).toEqual(['contract.cancelled', 'contract.pause_updated', 'contract.paused', 'contract.skipped']);
    const [cancelled, updated, paused, skipped] = events;
    expect(cancelled).toEqual({
      id: expect.any(String),
      type: 'contract.cancelled',
      at: t.clock.now().toISOString(),
      actor: { type: 'api_key', keyFingerprint: fingerprint },
      from: 'PAUSED',
      to: 'CANCELLED',
      data: { reason: 'moving abroad' },
    });
    expect(updated).toMatchObject({ from: 'PAUSED', to: 'PAUSED', actor: { keyFingerprint: fingerprint }, data: { resumeAt: null, previousResumeAt: '2027-03-01T00:00:00.000Z' } });
    expect(paused).toMatchObject({ from: 'ACTIVE', to: 'PAUSED', actor: { type: 'api_key', keyFingerprint: second.key.fingerprint }, data: { resumeAt: '2027-03-01T00:00:00.000Z' } });
    expect(skipped).toMatchObject({
      from: 'ACTIVE',
      to: 'ACTIVE',
      data: { previousNextBillingDate: '2026-12-01T00:00:00.000Z', nextBillingDate: '2027-01-01T00:00:00.000Z' },
    });
    for (const e of events) expect(e.at).toMatch(TIMESTAMP_Z);
    const times = events.map((e: { at: string }) => e.at);
    expect([...times].sort().reverse()).toEqual(times);
  });

  it('shows a scheduled resume with actor scheduler and no key fingerprint', async () => {
    const { key, shopId } = await t.shopWithKey();
    const row = await insertContract(t, shopId);
    await t.inject({ method: 'POST', url: `${API}/${row.id}/actions`, headers: bearer(key), payload: { action: 'pause', resumeAt: new Date(t.clock.now().getTime() + 60_000).toISOString() } });
    t.clock.advance(61_000);
    const [resumed] = (await t.inject({ url: `${API}/${row.id}/events`, headers: bearer(key) })).json().events;
    expect(resumed).toMatchObject({ type: 'contract.resumed', actor: { type: 'scheduler' }, from: 'PAUSED', to: 'ACTIVE' });
    expect(resumed.actor).toEqual({ type: 'scheduler' });
  });

  it('pages newest first with limit and cursor', async () => {
    const { key, shopId } = await t.shopWithKey();
    const row = await insertContract(t, shopId);
    for (let i = 0; i < 5; i++) await t.inject({ method: 'POST', url: `${API}/${row.id}/actions`, headers: bearer(key), payload: { action: 'skip' } });
    const all = (await t.inject({ url: `${API}/${row.id}/events`, headers: bearer(key) })).json().events.map((e: { id: string }) => e.id);
    expect(all).toHaveLength(5);
    const p1 = (await t.inject({ url: `${API}/${row.id}/events?limit=2`, headers: bearer(key) })).json();
    const p2 = (await t.inject({ url: `${API}/${row.id}/events?limit=2&cursor=${p1.nextCursor}`, headers: bearer(key) })).json();
    const p3 = (await t.inject({ url: `${API}/${row.id}/events?limit=2&cursor=${p2.nextCursor}`, headers: bearer(key) })).json();
    expect([...p1.events, ...p2.events, ...p3.events].map((e: { id: string }) => e.id)).toEqual(all);
    expect(p3.nextCursor).toBeNull();
    expect([...all].sort(byId).reverse()).toEqual(all);
  });
});
