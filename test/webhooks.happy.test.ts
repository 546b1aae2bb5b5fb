import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Contract as ContractSchema } from '../src/domain/resources.js';
import { WebhookDispatcher } from '../src/workers/webhookDispatcher.js';
import { createWorkers } from '../src/workers/index.js';
import { ResumeSweep } from '../src/workers/resumeSweep.js';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { adminAuth, API, sql } from './support/fixtures.js';
import { callBody } from './support/mcp.js';
import { startReceiver } from './support/receiver.js';

/**
 * Webhooks out (docs/product.md §10), end to end in one process: endpoints over the API, deliveries written with every
 * change whatever its source, signed with Standard Webhooks, in order per contract, with the delivery log. The
 * dispatcher's rounds are run by hand (tick) and the clock is moved: nothing sleeps.
 */

let t: TestApp;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let dispatcher: WebhookDispatcher;
beforeAll(async () => {
  t = await startTestApp();
  receiver = await startReceiver();
  dispatcher = new WebhookDispatcher(t.ctx, { random: () => 0.5 });
});
afterAll(async () => {
  await receiver?.close();
  await t?.close();
});
afterEach(() => {
  receiver.received.length = 0;
  receiver.answers.length = 0;
  receiver.then = { status: 200, body: 'ok' };
});

const json = { 'content-type': 'application/json' };
const WEBHOOKS = '/api/v1/webhook-endpoints';

let endpointCounter = 0;
/** A shop with a key and an endpoint at its own path of the receiver: `got()` is what that endpoint received. */
async function shopWithEndpoint(events: string[] = ['*']) {
  const s = await t.shopWithKey();
  const path = `/hook/${++endpointCounter}`;
  const res = await t.inject({ method: 'POST', url: WEBHOOKS, headers: { ...json, ...bearer(s.key) }, payload: { url: `${receiver.url}${path}`, events } });
  expect(res.statusCode).toBe(201);
  const { endpoint, secret } = res.json();
  return { ...s, endpoint, secret: secret as string, got: () => receiver.received.filter((r) => r.path === path) };
}
const act = (key: string, id: string, payload: object) =>
  t.inject({ method: 'POST', url: `${API}/${id}/actions`, headers: { ...json, ...bearer(key) }, payload });
const verified = (secret: string, r: { headers: Record<string, unknown>; body: string }) =>
  new Webhook(secret).verify(r.body, r.headers as Record<string, string>) as { type: string; test?: boolean; timestamp: string; data: { event: any; contract: any; version: number } };

describe('endpoints on the public API', () => {
  it('are created with a whsec_ secret shown once, listed and read without it, changed and deleted', async () => {
    const s = await shopWithEndpoint(['contract.paused']);
    expect(s.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(s.endpoint).toMatchObject({ url: expect.stringMatching(/\/hook\/\d+$/), events: ['contract.paused'], status: 'enabled', disabledReason: null });
    const list = await t.inject({ url: WEBHOOKS, headers: bearer(s.key) });
    expect(list.json().endpoints).toEqual([s.endpoint]);
    expect(list.body).not.toContain('whsec_');
    const patched = await t.inject({ method: 'PATCH', url: `${WEBHOOKS}/${s.endpoint.id}`, headers: { ...json, ...bearer(s.key) }, payload: { events: ['*'], description: 'ERP' } });
    expect(patched.json().endpoint).toMatchObject({ events: ['*'], description: 'ERP' });
    expect((await t.inject({ method: 'DELETE', url: `${WEBHOOKS}/${s.endpoint.id}`, headers: bearer(s.key) })).statusCode).toBe(204);
    expect((await t.inject({ url: `${WEBHOOKS}/${s.endpoint.id}`, headers: bearer(s.key) })).statusCode).toBe(404);
  });

  it('a read-only key lists and reads them but changes nothing (403 insufficient_scope)', async () => {
    const s = await shopWithEndpoint();
    const headers = await adminAuth(t, s.domain);
    const ro = (await t.inject({ method: 'POST', url: '/admin/api/keys', headers, payload: { access: 'read_only' } })).json().secret;
    expect((await t.inject({ url: WEBHOOKS, headers: bearer(ro) })).statusCode).toBe(200);
    expect((await t.inject({ url: `${WEBHOOKS}/${s.endpoint.id}/deliveries`, headers: bearer(ro) })).statusCode).toBe(200);
    const create = await t.inject({ method: 'POST', url: WEBHOOKS, headers: { ...json, ...bearer(ro) }, payload: { url: `${receiver.url}/x` } });
    expect(create.json().error.code).toBe('insufficient_scope');
    expect((await t.inject({ method: 'DELETE', url: `${WEBHOOKS}/${s.endpoint.id}`, headers: bearer(ro) })).json().error.code).toBe('insufficient_scope');
  });
});

describe('deliveries', () => {
  it('an action is delivered once, signed (Standard Webhooks), with the event, the contract after it and its version', async () => {
    const s = await shopWithEndpoint();
    const [c] = await t.seed(s.shopId, 1);
    expect((await act(s.key, c.id, { action: 'pause', resumeAt: '2027-01-05T00:00:00Z' })).statusCode).toBe(200);
    await dispatcher.tick();
    const [r] = s.got();
    expect(s.got()).toHaveLength(1);
    const payload = verified(s.secret, r);
    expect(payload.type).toBe('contract.paused');
    expect(payload.data.event).toMatchObject({ type: 'contract.paused', actor: { type: 'api_key', keyFingerprint: s.fingerprint }, from: 'ACTIVE', to: 'PAUSED' });
    expect(payload.data.contract).toMatchObject({ id: c.id, status: 'PAUSED', resumeAt: '2027-01-05T00:00:00.000Z' });
    expect(payload.data.version).toBe(1);
    expect(payload.timestamp).toBe(payload.data.event.at);
    expect(r.headers['webhook-id']).toMatch(/^msg_\d+$/);
    expect(Buffer.byteLength(r.body)).toBeLessThan(20_000);
    // Nothing more to send.
    await dispatcher.tick();
    expect(s.got()).toHaveLength(1);
  });

  it('every source of change is delivered: API, MCP, the resume sweep, the resume found due by a read; a refused action sends nothing', async () => {
    const s = await shopWithEndpoint();
    const [a, b] = await t.seed(s.shopId, 2);
    await act(s.key, a.id, { action: 'pause', resumeAt: new Date(t.clock.now().getTime() + 60_000).toISOString() });
    const mcp = await t.inject({ method: 'POST', url: '/mcp', headers: { ...json, accept: 'application/json, text/event-stream', ...bearer(s.key) }, payload: callBody('pause_subscription_contract', { contractId: b.id, resumeAt: new Date(t.clock.now().getTime() + 60_000).toISOString() }) });
    expect(mcp.statusCode).toBe(200);
    expect((await act(s.key, a.id, { action: 'skip' })).statusCode).toBe(409); // PAUSED: refused, nothing written
    t.clock.advance(120_000);
    await new ResumeSweep(t.ctx, { intervalMs: 1000 }).tick(); // resumes both
    await dispatcher.tick();
    const got = s.got().map((r) => verified(s.secret, r)).map((p) => [p.data.contract.id, p.type, p.data.event.actor.type]);
    expect(got).toEqual([
      [a.id, 'contract.paused', 'api_key'],
      [b.id, 'contract.paused', 'mcp'],
      [a.id, 'contract.resumed', 'scheduler'],
      [b.id, 'contract.resumed', 'scheduler'],
    ]);

    // A read that finds a resume due resumes it, and that is delivered too.
    const before = s.got().length;
    await act(s.key, a.id, { action: 'pause', resumeAt: new Date(t.clock.now().getTime() + 60_000).toISOString() });
    t.clock.advance(120_000);
    expect((await t.inject({ url: `${API}/${a.id}`, headers: bearer(s.key) })).json().contract.status).toBe('ACTIVE');
    await dispatcher.tick();
    expect(s.got().slice(before).map((r) => verified(s.secret, r).type)).toEqual(['contract.paused', 'contract.resumed']);
  });

  it('only the subscribed event types are sent', async () => {
    const s = await shopWithEndpoint(['contract.cancelled']);
    const [c] = await t.seed(s.shopId, 1);
    await act(s.key, c.id, { action: 'skip' });
    await act(s.key, c.id, { action: 'cancel', reason: 'moving' });
    await dispatcher.tick();
    expect(s.got().map((r) => verified(s.secret, r).type)).toEqual(['contract.cancelled']);
  });

  it('one contract\'s events reach the endpoint in order, even across failures and retries; versions only grow', async () => {
    const s = await shopWithEndpoint();
    const [c] = await t.seed(s.shopId, 1);
    for (const body of [{ action: 'skip' }, { action: 'pause' }, { action: 'resume' }, { action: 'cancel' }]) expect((await act(s.key, c.id, body)).statusCode).toBe(200);
    receiver.answers.push({ status: 500 }, { status: 503, headers: { 'retry-after': '30' } });
    await dispatcher.tick(); // the first fails (500): the others wait behind it
    expect(s.got()).toHaveLength(1);
    t.clock.advance(4_000);
    await dispatcher.tick(); // not yet: the second attempt is 5 s (±10 %) after the first
    expect(s.got()).toHaveLength(1);
    t.clock.advance(1_500);
    await dispatcher.tick(); // the second attempt: 503 with Retry-After 30 s; the schedule's 5 min is later, and wins
    expect(s.got()).toHaveLength(2);
    t.clock.advance(300_000 * 1.1);
    await dispatcher.tick();
    const payloads = s.got().map((r) => verified(s.secret, r));
    expect(payloads.map((p) => p.type)).toEqual(['contract.skipped', 'contract.skipped', 'contract.skipped', 'contract.paused', 'contract.resumed', 'contract.cancelled']);
    const ids = s.got().map((r) => r.headers['webhook-id']);
    expect(ids[0]).toBe(ids[1]); // the same webhook-id on every attempt
    expect(new Set(ids.slice(2)).size).toBe(4);
    expect(payloads.slice(2).map((p) => p.data.version)).toEqual([1, 2, 3, 4]);
  });

  it('a test event of any type, and a resend with the same webhook-id; the delivery log has every attempt', async () => {
    const s = await shopWithEndpoint();
    receiver.answers.push({ status: 500, body: 'x'.repeat(10_000) });
    const test = await t.inject({ method: 'POST', url: `${WEBHOOKS}/${s.endpoint.id}/test`, headers: { ...json, ...bearer(s.key) }, payload: { type: 'contract.cancelled' } });
    expect(test.statusCode).toBe(202);
    await dispatcher.tick();
    const log = (await t.inject({ url: `${WEBHOOKS}/${s.endpoint.id}/deliveries`, headers: bearer(s.key) })).json().deliveries;
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ type: 'contract.cancelled', test: true, status: 'pending', attempts: 1 });
    expect(log[0].attemptLog[0]).toMatchObject({ statusCode: 500, error: 'HTTP 500' });
    expect(log[0].attemptLog[0].responseBody).toHaveLength(4096);
    const resend = await t.inject({ method: 'POST', url: `${WEBHOOKS}/${s.endpoint.id}/deliveries/${log[0].id}/resend`, headers: bearer(s.key) });
    expect(resend.statusCode).toBe(202);
    await dispatcher.tick();
    expect(s.got().map((r) => r.headers['webhook-id'])).toEqual([log[0].webhookId, log[0].webhookId]);
    expect(verified(s.secret, s.got()[1]).data.event.data).toEqual({ test: true });
    // The log counts every attempt, the one before the resend included, and lists each.
    const after = (await t.inject({ url: `${WEBHOOKS}/${s.endpoint.id}/deliveries`, headers: bearer(s.key) })).json().deliveries;
    expect(after[0]).toMatchObject({ id: log[0].id, status: 'succeeded', attempts: 2 });
    expect(after[0].attemptLog.map((a: { statusCode: number }) => a.statusCode)).toEqual([500, 200]);
    // A second resend: the answer already counts the two, and the next attempt makes three.
    const again = await t.inject({ method: 'POST', url: `${WEBHOOKS}/${s.endpoint.id}/deliveries/${log[0].id}/resend`, headers: bearer(s.key) });
    expect(again.json().delivery ?? again.json()).toMatchObject({ attempts: 2 });
    await dispatcher.tick();
    expect((await t.inject({ url: `${WEBHOOKS}/${s.endpoint.id}/deliveries`, headers: bearer(s.key) })).json().deliveries[0].attempts).toBe(3);
  });

  it('a test event is coherent: the status its type leads to, a sample contract in that state, version 0 and test: true', async () => {
    const s = await shopWithEndpoint();
    const expected = {
      'contract.cancelled': { from: 'ACTIVE', to: 'CANCELLED' },
      'contract.paused': { from: 'ACTIVE', to: 'PAUSED' },
      'contract.resumed': { from: 'PAUSED', to: 'ACTIVE' },
      'contract.created': { from: null, to: 'ACTIVE' },
    } as const;
    for (const type of Object.keys(expected)) {
      const sent = await t.inject({ method: 'POST', url: `${WEBHOOKS}/${s.endpoint.id}/test`, headers: { ...json, ...bearer(s.key) }, payload: { type } });
      expect(sent.statusCode).toBe(202);
    }
    await dispatcher.tick();
    const payloads = s.got().map((r) => verified(s.secret, r));
    expect(payloads.map((p) => p.type).sort()).toEqual(Object.keys(expected).sort());
    for (const p of payloads) {
      const { from, to } = expected[p.type as keyof typeof expected];
      expect(p.test).toBe(true);
      expect(p.data.version).toBe(0);
      expect(p.data.event).toMatchObject({ type: p.type, from, to, data: { test: true } });
      expect(p.timestamp).toBe(p.data.event.at);
      expect(p.data.contract).toMatchObject({ id: '0', status: to, pausedAt: to === 'PAUSED' ? p.data.event.at : null, cancelledAt: to === 'CANCELLED' ? p.data.event.at : null });
      // The contract has the shape of every delivery's (the API's contract resource).
      expect(Object.keys(p.data.contract).sort()).toEqual(Object.keys(ContractSchema.shape).sort());
    }
    // A real event's payload carries no test flag.
    const [c] = await t.seed(s.shopId, 1);
    await act(s.key, c.id, { action: 'skip' });
    await dispatcher.tick();
    const real = verified(s.secret, s.got()[payloads.length]);
    expect(real.type).toBe('contract.skipped');
    expect(real.test).toBeUndefined();
    expect(real.data.version).toBeGreaterThan(0);
  });

  it('rotating the secret signs with both for 24 hours, then with the new one only', async () => {
    // The rotation's 24 hours run on the service clock, a signature's time is the wall clock's (receivers check it
    // against theirs): the service clock is brought to now first, as it is in production.
    t.clock.advance(Math.max(0, Date.now() - t.clock.now().getTime()));
    const s = await shopWithEndpoint();
    const rotated = (await t.inject({ method: 'POST', url: `${WEBHOOKS}/${s.endpoint.id}/rotate-secret`, headers: bearer(s.key) })).json();
    expect(rotated.secret).not.toBe(s.secret);
    await t.inject({ method: 'POST', url: `${WEBHOOKS}/${s.endpoint.id}/test`, headers: bearer(s.key) });
    await dispatcher.tick();
    const [during] = s.got();
    expect(String(during.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(() => verified(s.secret, during)).not.toThrow();
    expect(() => verified(rotated.secret, during)).not.toThrow();
    t.clock.advance(24 * 3_600_000 + 1000);
    await dispatcher.tick();
    // The signing time is the wall clock's (receivers check it against theirs): sign a fresh test event after 24 h
    // of the service clock by moving the dispatcher's signing clock along.
    const later = new WebhookDispatcher(t.ctx, { signingClock: { now: () => new Date(Date.now() + 24 * 3_600_000 + 1000) } });
    await t.inject({ method: 'POST', url: `${WEBHOOKS}/${s.endpoint.id}/test`, headers: bearer(s.key) });
    await later.tick();
    const after = s.got()[1];
    expect(String(after.headers['webhook-signature']).split(' ')).toHaveLength(1);
  });
});

describe('giving way to requests', () => {
  it('while the instance is crowded, deliveries go out 10 at a time with a pause between, and all of them arrive', async () => {
    const s = await shopWithEndpoint();
    const contracts = await t.seed(s.shopId, 25);
    for (const c of contracts) await act(s.key, c.id, { action: 'skip' });
    const started = Date.now();
    await new WebhookDispatcher(t.ctx, { busy: () => true }).tick();
    expect(s.got()).toHaveLength(25);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250); // three batches, each followed by a 100 ms pause
  });

  it("while the instance's renewals work through a storm, its dispatcher gives way the same, and all of them arrive", async () => {
    const s = await shopWithEndpoint();
    const contracts = await t.seed(s.shopId, 25);
    for (const c of contracts) await act(s.key, c.id, { action: 'skip' });
    const workers = createWorkers(t.ctx, { resumeIntervalMs: 1000, billing: { intervalMs: 1000, maxLateMs: 86_400_000, concurrency: 8 } });
    workers.billing!.catchingUp = true; // set by a billing round that finds more due than one batch (billing.happy.test.ts)
    const started = Date.now();
    await workers.webhookDispatcher.tick();
    expect(s.got()).toHaveLength(25);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250); // three batches, each followed by a 100 ms pause
  });
});

describe('the delivery log', () => {
  it('is kept 30 days: finished deliveries older than that go, with their attempts; newer ones and unfinished ones stay', async () => {
    const s = await shopWithEndpoint();
    const [c] = await t.seed(s.shopId, 1);
    await act(s.key, c.id, { action: 'skip' });
    await dispatcher.tick();
    t.clock.advance(31 * 24 * 3_600_000);
    await act(s.key, c.id, { action: 'skip' });
    await new WebhookDispatcher(t.ctx).tick(); // a fresh dispatcher cleans up on its first round
    const rows = await sql<{ type: string; status: string }>(t, 'SELECT type, status FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY id', [s.endpoint.id]);
    expect(rows).toEqual([{ type: 'contract.skipped', status: 'succeeded' }]);
    expect((await t.inject({ url: `${WEBHOOKS}/${s.endpoint.id}/deliveries`, headers: bearer(s.key) })).json().deliveries).toHaveLength(1);
  });
});

describe('the admin API', () => {
  it('reveals the secret on request, and sees the same endpoints as the API', async () => {
    const s = await shopWithEndpoint();
    const headers = await adminAuth(t, s.domain);
    expect((await t.inject({ url: '/admin/api/webhook-endpoints', headers })).json().endpoints).toEqual([s.endpoint]);
    const revealed = await t.inject({ url: `/admin/api/webhook-endpoints/${s.endpoint.id}/secret`, headers });
    expect(revealed.json().secret).toBe(s.secret);
    expect(revealed.headers['cache-control']).toBe('no-store');
  });
});

describe('stored deliveries', () => {
  it('are written in the commit of their event: as many as events times subscribed endpoints', async () => {
    const s = await shopWithEndpoint();
    await t.inject({ method: 'POST', url: WEBHOOKS, headers: { ...json, ...bearer(s.key) }, payload: { url: `${receiver.url}/second`, events: ['contract.skipped'] } });
    const [c] = await t.seed(s.shopId, 1);
    await act(s.key, c.id, { action: 'skip' });
    await act(s.key, c.id, { action: 'pause' });
    const rows = await sql<{ type: string }>(t, 'SELECT type FROM webhook_deliveries WHERE shop_id = $1 ORDER BY id', [s.shopId]);
    expect(rows.map((r) => r.type)).toEqual(['contract.skipped', 'contract.skipped', 'contract.paused']);
  });
});
