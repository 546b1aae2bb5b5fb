import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookDispatcher } from '../src/workers/webhookDispatcher.js';
import { startTestApp, type TestApp } from './support/app.js';
import { adminAuth, contractRow, eventRows, insertContract, sql } from './support/fixtures.js';
import { insertManyContracts } from './support/manyContracts.js';
import { startPlatform, type PlatformHarness } from './support/platform.js';
import { startReceiver } from './support/receiver.js';

/**
 * The admin's Contracts page over its JSON API (session token): find a shop's contracts among thousands, read one
 * with its history, and act on it as the merchant (actor admin), with the API's rules, events and webhooks.
 */

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t?.close());

const json = { 'content-type': 'application/json' };
type Page = { contracts: { id: string; status: string; customer: { email: string } }[]; nextCursor: string | null; previousCursor: string | null };

async function merchant() {
  const s = await t.shopWithKey();
  const headers = await adminAuth(t, s.domain);
  const list = async (query: Record<string, string | number> = {}) => {
    const qs = new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)]));
    const res = await t.inject({ url: `/admin/api/contracts?${qs}`, headers });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as Page;
  };
  const act = (id: string, payload: object) => t.inject({ method: 'POST', url: `/admin/api/contracts/${id}/actions`, headers: { ...headers, ...json }, payload });
  const detail = async (id: string) => {
    const res = await t.inject({ url: `/admin/api/contracts/${id}`, headers });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };
  return { ...s, headers, list, act, detail };
}
const ids = (page: Page) => page.contracts.map((c) => c.id);

describe('finding contracts', () => {
  it('pages through thousands newest first, forward and back, every contract exactly once', async () => {
    const m = await merchant();
    const all = await insertManyContracts(t, m.shopId, 2_050);
    const newestFirst = [...all].reverse();

    const first = await m.list({ limit: 100 });
    expect(ids(first)).toEqual(newestFirst.slice(0, 100));
    expect(first.previousCursor).toBeNull();
    const seen: string[] = [...ids(first)];
    const pages = [first];
    let page = first;
    while (page.nextCursor) {
      page = await m.list({ limit: 100, cursor: page.nextCursor });
      seen.push(...ids(page));
      pages.push(page);
    }
    expect(seen).toEqual(newestFirst);
    expect(pages).toHaveLength(21);
    expect(page.contracts).toHaveLength(50);

    // Back from the last page: each previous page is the page shown before it.
    for (let i = pages.length - 1; i > 0; i--) {
      const previous = await m.list({ limit: 100, cursor: pages[i].previousCursor! });
      expect(ids(previous)).toEqual(ids(pages[i - 1]));
    }
    const backToFirst = await m.list({ limit: 100, cursor: pages[1].previousCursor! });
    expect(backToFirst.previousCursor).toBeNull();
    expect(backToFirst.nextCursor).toBe(first.nextCursor);
  });

  it('by contract id (exact, with or without #), by the start of the email in any case, by status, and both together', async () => {
    const m = await merchant();
    const all = await insertManyContracts(t, m.shopId, 300);
    const ada = await insertContract(t, m.shopId, { customerEmail: 'Ada.Lovelace@example.com' });
    const adam = await insertContract(t, m.shopId, { customerEmail: 'adam@example.org', status: 'PAUSED', pausedAt: t.clock.now() });
    const underscore = await insertContract(t, m.shopId, { customerEmail: 'a_b@example.com' });
    await insertContract(t, m.shopId, { customerEmail: 'axb@example.com' });

    expect(ids(await m.list({ query: all[41] }))).toEqual([all[41]]);
    expect(ids(await m.list({ query: `#${all[41]}` }))).toEqual([all[41]]);
    expect(ids(await m.list({ query: ` ${all[41]} ` }))).toEqual([all[41]]);
    expect(ids(await m.list({ query: 'ADA' }))).toEqual([adam.id, ada.id]);
    expect(ids(await m.list({ query: 'ada.lovelace@EXAMPLE.com' }))).toEqual([ada.id]);
    expect(ids(await m.list({ query: 'lovelace' }))).toEqual([]); // a prefix, not a substring
    // LIKE's wildcards in what was typed match only themselves.
    expect(ids(await m.list({ query: 'a_b' }))).toEqual([underscore.id]);
    expect(ids(await m.list({ query: '%' }))).toEqual([]);
    // customer00042 … customer00049 and customer00420 … : an email prefix across many contracts.
    expect((await m.list({ query: 'customer0004', limit: 100 })).contracts.map((c) => c.customer.email)).toEqual(
      Array.from({ length: 10 }, (_, i) => `customer${String(49 - i).padStart(5, '0')}@example.com`),
    );

    const paused = await m.list({ status: 'PAUSED', limit: 100 });
    expect(paused.contracts.every((c) => c.status === 'PAUSED')).toBe(true);
    expect(paused.contracts).toHaveLength(61); // 60 of the 300, and adam
    expect(ids(await m.list({ query: 'ad', status: 'PAUSED' }))).toEqual([adam.id]);
    expect(ids(await m.list({ query: 'ad', status: 'CANCELLED' }))).toEqual([]);

    // A search pages like the whole list.
    const firstPage = await m.list({ query: 'customer', status: 'ACTIVE', limit: 50 });
    const second = await m.list({ query: 'customer', status: 'ACTIVE', limit: 50, cursor: firstPage.nextCursor! });
    expect(second.contracts).toHaveLength(50);
    expect(second.contracts.every((c) => c.status === 'ACTIVE' && c.customer.email.startsWith('customer'))).toBe(true);
    expect(BigInt(second.contracts[0].id)).toBeLessThan(BigInt(firstPage.contracts[49].id));
    expect(ids(await m.list({ query: 'customer', status: 'ACTIVE', limit: 50, cursor: second.previousCursor! }))).toEqual(ids(firstPage));
  });

  it('a digit query also finds emails that start with those digits', async () => {
    const m = await merchant();
    const c = await insertContract(t, m.shopId, { customerEmail: 'someone@example.com' });
    const digits = await insertContract(t, m.shopId, { customerEmail: `${c.id}0@example.com` });
    expect(ids(await m.list({ query: c.id }))).toEqual([digits.id, c.id]);
  });

  it('a contract paused past its resume moment is listed as resumed (by the scheduler)', async () => {
    const m = await merchant();
    const c = await insertContract(t, m.shopId, {
      status: 'PAUSED',
      pausedAt: t.clock.now(),
      resumeAt: new Date(t.clock.now().getTime() + 60_000),
      nextBillingDate: new Date(t.clock.now().getTime() + 86_400_000),
    });
    t.clock.advance(120_000);
    expect((await m.list({ query: c.id })).contracts[0].status).toBe('ACTIVE');
    expect((await eventRows(t, c.id)).map((e) => [e.type, e.actorType])).toEqual([['contract.resumed', 'scheduler']]);
  });
});

describe('a contract with its history', () => {
  it('the contract, the actions its status allows, and its events newest first', async () => {
    const m = await merchant();
    const active = await insertContract(t, m.shopId);
    const failed = await insertContract(t, m.shopId, { status: 'FAILED' });
    const expired = await insertContract(t, m.shopId, { status: 'EXPIRED' });
    expect((await m.act(active.id, { action: 'skip' })).statusCode).toBe(200);
    expect((await m.act(active.id, { action: 'pause' })).statusCode).toBe(200);

    const d = await m.detail(active.id);
    expect(d.contract).toMatchObject({ id: active.id, status: 'PAUSED', customer: { email: 'ada@example.com' } });
    expect(d.allowedActions).toEqual(['pause', 'resume', 'cancel', 'reschedule']);
    expect(d.events.map((e: { type: string }) => e.type)).toEqual(['contract.paused', 'contract.skipped']);
    expect(d.eventsNextCursor).toBeNull();
    expect((await m.detail(failed.id)).allowedActions).toEqual(['resume', 'cancel']);
    expect((await m.detail(expired.id)).allowedActions).toEqual([]);
    await m.act(active.id, { action: 'resume' });
    expect((await m.detail(active.id)).allowedActions).toEqual(['pause', 'cancel', 'skip', 'reschedule', 'bill_now']);
  });

  it('a long history: the newest 50 events, then the older ones through the events listing', async () => {
    const m = await merchant();
    const c = await insertContract(t, m.shopId);
    for (let i = 0; i < 55; i++) expect((await m.act(c.id, { action: 'pause' })).statusCode).toBe(200);
    const newestFirst = (await eventRows(t, c.id)).map((r) => r.id).reverse();
    const d = await m.detail(c.id);
    expect(d.events.map((e: { id: string }) => e.id)).toEqual(newestFirst.slice(0, 50));
    const older = await t.inject({ url: `/admin/api/contracts/${c.id}/events?cursor=${encodeURIComponent(d.eventsNextCursor)}`, headers: m.headers });
    expect(older.json().events.map((e: { id: string }) => e.id)).toEqual(newestFirst.slice(50));
  });
});

describe('acting as the merchant', () => {
  it('pause with a resume date, resume, skip, reschedule, cancel with a reason: each as the API does it, recorded with actor admin', async () => {
    const m = await merchant();
    const c = await insertContract(t, m.shopId);
    const now = t.clock.now();

    const paused = await m.act(c.id, { action: 'pause', resumeAt: '2027-01-05T00:00:00Z' });
    expect(paused.statusCode).toBe(200);
    expect(paused.json().contract).toMatchObject({ id: c.id, status: 'PAUSED', resumeAt: '2027-01-05T00:00:00.000Z', pausedAt: now.toISOString() });

    const resumed = await m.act(c.id, { action: 'resume' });
    expect(resumed.json().contract).toMatchObject({ status: 'ACTIVE', pausedAt: null, resumeAt: null, nextBillingDate: '2026-12-01T00:00:00.000Z' });

    const skipped = await m.act(c.id, { action: 'skip' });
    expect(skipped.json().contract.nextBillingDate).toBe('2027-01-01T00:00:00.000Z');

    const rescheduled = await m.act(c.id, { action: 'reschedule', nextBillingDate: '2027-02-14T09:30:00.000Z' });
    expect(rescheduled.json().contract.nextBillingDate).toBe('2027-02-14T09:30:00.000Z');

    const cancelled = await m.act(c.id, { action: 'cancel', reason: 'Moved abroad' });
    expect(cancelled.json().contract).toMatchObject({ status: 'CANCELLED', cancellationReason: 'Moved abroad', cancelledAt: now.toISOString() });
    expect((await contractRow(t, c.id)).status).toBe('CANCELLED');

    const { events } = await m.detail(c.id);
    expect(events.map((e: { type: string }) => e.type)).toEqual(['contract.cancelled', 'contract.rescheduled', 'contract.skipped', 'contract.resumed', 'contract.paused']);
    expect(events.every((e: { actor: object }) => JSON.stringify(e.actor) === JSON.stringify({ type: 'admin' }))).toBe(true);
    expect(events[0].data).toEqual({ reason: 'Moved abroad' });
    expect((await eventRows(t, c.id)).every((e) => e.actorType === 'admin' && e.actorKeyFingerprint === null)).toBe(true);
    // The API sees the same history.
    const api = await t.inject({ url: `/api/v1/subscription-contracts/${c.id}/events`, headers: { authorization: `Bearer ${m.key}` } });
    expect(api.json().events.map((e: { actor: { type: string } }) => e.actor.type)).toEqual(['admin', 'admin', 'admin', 'admin', 'admin']);
  });

  it('a change made in the admin is sent to the shop’s webhook endpoints, signed, with actor admin', async () => {
    const receiver = await startReceiver();
    try {
      const m = await merchant();
      const c = await insertContract(t, m.shopId);
      const created = await t.inject({ method: 'POST', url: '/admin/api/webhook-endpoints', headers: { ...m.headers, ...json }, payload: { url: `${receiver.url}/admin-hook`, events: ['*'] } });
      expect(created.statusCode).toBe(201);
      expect((await m.act(c.id, { action: 'pause' })).statusCode).toBe(200);
      await new WebhookDispatcher(t.ctx, { random: () => 0.5 }).tick();
      const got = receiver.received.filter((r) => r.path === '/admin-hook');
      expect(got).toHaveLength(1);
      const payload = new Webhook(created.json().secret).verify(got[0].body, got[0].headers as Record<string, string>) as { type: string; data: { event: { actor: object }; contract: { status: string } } };
      expect(payload.type).toBe('contract.paused');
      expect(payload.data.event.actor).toEqual({ type: 'admin' });
      expect(payload.data.contract.status).toBe('PAUSED');
    } finally {
      await receiver.close();
    }
  });

  it('works whatever the plan: the merchant manages their contracts without API access', async () => {
    const m = await merchant();
    await sql(t, `UPDATE shops SET plan = 'basic' WHERE id = $1`, [m.shopId]);
    const c = await insertContract(t, m.shopId);
    expect((await m.act(c.id, { action: 'skip' })).statusCode).toBe(200);
    expect((await m.list()).contracts.map((x) => x.id)).toEqual([c.id]);
  });
});

describe('platform mode: the same screens', () => {
  let p: PlatformHarness;
  beforeAll(async () => {
    p = await startPlatform();
  });
  afterAll(() => p?.close());

  it('an action in the admin changes the contract on the platform first, and records one event with actor admin', async () => {
    const shop = await p.install({ contracts: 2 });
    const [id] = shop.contractIds;
    const headers = { authorization: `Bearer ${p.standIn.sessionToken(shop.domain)}`, ...json };
    const found = await p.t.inject({ url: `/admin/api/contracts?query=${id}`, headers });
    expect(found.json().contracts.map((c: { id: string }) => c.id)).toEqual([id]);

    const before = p.standIn.requests.length;
    const res = await p.t.inject({ method: 'POST', url: `/admin/api/contracts/${id}/actions`, headers, payload: { action: 'pause' } });
    expect(res.statusCode, res.body).toBe(200);
    expect(p.standIn.contract(shop.domain, id).status).toBe('PAUSED');
    expect(p.standIn.requests.slice(before).flatMap((r) => r.rootCalls ?? []).map((c) => c.field)).toEqual(['subscriptionContractPause']);
    await p.settle();
    const detail = (await p.t.inject({ url: `/admin/api/contracts/${id}`, headers })).json();
    expect(detail.contract.status).toBe('PAUSED');
    expect(detail.events.map((e: { type: string; actor: { type: string } }) => [e.type, e.actor.type])).toEqual([['contract.paused', 'admin']]);
  });
});
