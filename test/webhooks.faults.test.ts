import { adminPrincipal } from '../src/services/principal.js';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServiceContext, systemClock, type ServiceContext } from '../src/services/context.js';
import { generateKey } from '../src/services/generateKey.js';
import { seedContracts } from '../src/services/seedContracts.js';
import { setShopPlan } from '../src/services/shops.js';
import { createWebhookEndpoint } from '../src/services/webhookEndpoints.js';
import { systemResolve } from '../src/webhooks/addressGuard.js';
import { WebhookDispatcher } from '../src/workers/webhookDispatcher.js';
import { bearer, startTestApp, uniqueShop, type TestApp } from './support/app.js';
import { createTestDatabase, type TestDatabase } from './support/db.js';
import { API } from './support/fixtures.js';
import { call, needsPostgres, startServer, stopAllServers } from './support/processes.js';
import { startReceiver, type Received } from './support/receiver.js';

/**
 * Webhooks out under faults (docs/product.md §10): a receiver down for an hour, a dispatcher woken at once by the outbox, a
 * server killed in the middle of a burst of deliveries, and two instances sending one outbox.
 */

const json = { 'content-type': 'application/json' };
type Payload = { type: string; data: { contract: { id: string }; version: number } };
const payloadsOf = (secret: string, received: Received[]) => received.map((r) => new Webhook(secret).verify(r.body, r.headers as Record<string, string>) as Payload);

describe('in one process', () => {
  let t: TestApp;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    t = await startTestApp();
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
    await t?.close();
  });

  async function shopWithEndpoint(path: string) {
    const s = await t.shopWithKey();
    const made = await t.inject({ method: 'POST', url: '/api/v1/webhook-endpoints', headers: { ...json, ...bearer(s.key) }, payload: { url: `${receiver.url}${path}` } });
    return { ...s, secret: made.json().secret as string, got: () => receiver.received.filter((r) => r.path === path) };
  }

  it('a receiver down for an hour gets everything when it returns, in order per contract', async () => {
    const s = await shopWithEndpoint('/down');
    const contracts = await t.seed(s.shopId, 3);
    receiver.down = true;
    const dispatcher = new WebhookDispatcher(t.ctx);
    for (const c of contracts) {
      for (const action of ['skip', 'pause', 'resume', 'skip']) {
        expect((await t.inject({ method: 'POST', url: `${API}/${c.id}/actions`, headers: { ...json, ...bearer(s.key) }, payload: { action } })).statusCode).toBe(200);
      }
    }
    // An hour of retries against a receiver that cuts every connection.
    for (let minute = 0; minute < 60; minute += 5) {
      await dispatcher.tick();
      t.clock.advance(5 * 60_000);
    }
    expect(s.got()).toHaveLength(0);
    receiver.down = false;
    // Each contract's first delivery made its fourth attempt at minute 40, 45 or 50 (the 5 s, 5 min and 30 min
    // delays, each ±10 %, met 5-minute ticks); its fifth is 2 h ±10 % after that, so by 3 h 15 min it has come.
    t.clock.advance(2.25 * 3_600_000);
    await dispatcher.tick();
    const payloads = payloadsOf(s.secret, s.got());
    expect(payloads).toHaveLength(12);
    for (const c of contracts) {
      const mine = payloads.filter((p) => p.data.contract.id === c.id);
      expect(mine.map((p) => p.type)).toEqual(['contract.skipped', 'contract.paused', 'contract.resumed', 'contract.skipped']);
      expect(mine.map((p) => p.data.version)).toEqual([1, 2, 3, 4]);
    }
  });

  type LoggedDelivery = { id: string; status: string; nextAttemptAt: string | null; contractId: string };
  async function deliveryLog(key: string, endpointId: string): Promise<LoggedDelivery[]> {
    const res = await t.inject({ method: 'GET', url: `/api/v1/webhook-endpoints/${endpointId}/deliveries?limit=100`, headers: bearer(key) });
    expect(res.statusCode).toBe(200);
    return (res.json().deliveries as LoggedDelivery[]).reverse(); // oldest first
  }
  const endpointIdOf = async (key: string) =>
    (await t.inject({ method: 'GET', url: '/api/v1/webhook-endpoints', headers: bearer(key) })).json().endpoints[0].id as string;

  it('deliveries waiting behind a retrying one are due at its next attempt; sent again now, it takes them with it, in order', async () => {
    const s = await shopWithEndpoint('/resend-follows');
    const endpointId = await endpointIdOf(s.key);
    const [c] = await t.seed(s.shopId, 1);
    receiver.down = true;
    const dispatcher = new WebhookDispatcher(t.ctx);
    for (const action of ['skip', 'pause', 'resume']) {
      expect((await t.inject({ method: 'POST', url: `${API}/${c.id}/actions`, headers: { ...json, ...bearer(s.key) }, payload: { action } })).statusCode).toBe(200);
    }
    // Two failed attempts of the first: its next is about 5 minutes away.
    await dispatcher.tick();
    t.clock.advance(10_000);
    await dispatcher.tick();
    const [first, ...rest] = await deliveryLog(s.key, endpointId);
    expect(Date.parse(first.nextAttemptAt!)).toBeGreaterThan(t.clock.now().getTime() + 60_000);
    // The two behind it cannot go before it, and say so.
    for (const d of rest) expect(d).toMatchObject({ status: 'pending', nextAttemptAt: first.nextAttemptAt });

    receiver.down = false;
    expect((await t.inject({ method: 'POST', url: `/api/v1/webhook-endpoints/${endpointId}/deliveries/${first.id}/resend`, headers: bearer(s.key) })).statusCode).toBe(202);
    await dispatcher.tick(); // the clock has not moved: nothing waits for the first one's old retry time
    const payloads = payloadsOf(s.secret, s.got());
    expect(payloads.map((p) => p.type)).toEqual(['contract.skipped', 'contract.paused', 'contract.resumed']);
    expect(payloads.map((p) => p.data.version)).toEqual([1, 2, 3]);
  });

  it('deliveries held while an endpoint is disabled are not planned, and go out in order when it is enabled again', async () => {
    const s = await shopWithEndpoint('/held');
    const endpointId = await endpointIdOf(s.key);
    const contracts = await t.seed(s.shopId, 2);
    for (const c of contracts) {
      for (const action of ['pause', 'resume']) {
        expect((await t.inject({ method: 'POST', url: `${API}/${c.id}/actions`, headers: { ...json, ...bearer(s.key) }, payload: { action } })).statusCode).toBe(200);
      }
    }
    const patch = (status: string) =>
      t.inject({ method: 'PATCH', url: `/api/v1/webhook-endpoints/${endpointId}`, headers: { ...json, ...bearer(s.key) }, payload: { status } });
    expect((await patch('disabled')).statusCode).toBe(200);
    const dispatcher = new WebhookDispatcher(t.ctx);
    await dispatcher.tick();
    t.clock.advance(24 * 3_600_000);
    await dispatcher.tick();
    expect(s.got()).toHaveLength(0);
    const held = await deliveryLog(s.key, endpointId);
    expect(held).toHaveLength(4);
    for (const d of held) expect(d).toMatchObject({ status: 'pending', nextAttemptAt: null });

    expect((await patch('enabled')).statusCode).toBe(200);
    for (const d of await deliveryLog(s.key, endpointId)) expect(Date.parse(d.nextAttemptAt!)).toBeLessThanOrEqual(t.clock.now().getTime());
    await dispatcher.tick();
    const payloads = payloadsOf(s.secret, s.got());
    expect(payloads).toHaveLength(4);
    for (const c of contracts) {
      expect(payloads.filter((p) => p.data.contract.id === c.id).map((p) => p.type)).toEqual(['contract.paused', 'contract.resumed']);
    }
  });

  it('a running dispatcher is woken at once when deliveries are written (LISTEN/NOTIFY), not at its interval', async () => {
    const s = await shopWithEndpoint('/wake');
    const [c] = await t.seed(s.shopId, 1);
    const dispatcher = new WebhookDispatcher(t.ctx, { intervalMs: 60_000 });
    dispatcher.start();
    try {
      await new Promise((r) => setTimeout(r, 300)); // its first round is done; the next is a minute away
      const started = Date.now();
      await t.inject({ method: 'POST', url: `${API}/${c.id}/actions`, headers: { ...json, ...bearer(s.key) }, payload: { action: 'skip' } });
      await expect.poll(() => s.got().length, { timeout: 5000, interval: 10 }).toBe(1);
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      await dispatcher.stop();
    }
  });
});

describe.skipIf(needsPostgres('test/webhooks.faults.test.ts'))('server processes on one PostgreSQL', { timeout: 90_000 }, () => {
  let database: TestDatabase;
  let ctx: ServiceContext;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  const env = { WEBHOOKS_ALLOW_PRIVATE: 'true', WEBHOOK_DISPATCH_INTERVAL_MS: '200', WEBHOOK_TIMEOUT_MS: '2000' };

  beforeAll(async () => {
    database = await createTestDatabase();
    ctx = createServiceContext({ db: database.db, clock: systemClock, freeUntil: null, webhookAddresses: { allowPrivate: true, resolve: systemResolve } });
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await stopAllServers();
    await receiver?.close();
    await database?.drop();
  });

  const query = <T>(text: string, params: unknown[]) => database.db.withSession((run) => run<T>(text, params));

  async function shopWithEndpoint(path: string, contracts: number) {
    const shop = await setShopPlan({ ctx, input: { domain: uniqueShop('hooks'), plan: 'enterprise' } });
    const { secret: key } = await generateKey({ ctx, input: { shopId: shop.id, name: 'faults' } });
    const { endpoint, secret } = await createWebhookEndpoint({ ctx, input: { principal: adminPrincipal(shop.id), body: { url: `${receiver.url}${path}` } } });
    const ids = (await seedContracts({ ctx, input: { shopId: shop.id, count: contracts } })).map((c) => c.id);
    return { shopId: shop.id, key, endpoint, secret, ids, got: () => receiver.received.filter((r) => r.path === path) };
  }

  it('kill -9 in the middle of a burst: after a restart every event is delivered at least once, with its webhook-id', async () => {
    const s = await shopWithEndpoint('/killed', 10);
    receiver.delayMs = 50; // deliveries are in flight when the process dies
    let server = await startServer({ databaseUrl: database.url!, env });
    await Promise.all(
      s.ids.map(async (id) => {
        for (const action of ['skip', 'pause', 'resume', 'skip', 'skip']) {
          expect((await call(server.url, `${API}/${id}/actions`, { auth: s.key, body: { action } })).status).toBe(200);
        }
      }),
    );
    await expect.poll(() => s.got().length, { timeout: 10_000, interval: 5 }).toBeGreaterThanOrEqual(5);
    server.kill('SIGKILL');
    await server.exited;
    const sentBefore = s.got().length;
    expect(sentBefore).toBeLessThan(50);
    server = await startServer({ databaseUrl: database.url!, env });
    const expected = (await query<{ id: string }>('SELECT id::text FROM webhook_deliveries WHERE endpoint_id = $1', [s.endpoint.id])).map((r) => `msg_${r.id}`);
    expect(expected).toHaveLength(50);
    // The deliveries the dead process had claimed go out once their lease has run out (timeout + 5 s).
    await expect.poll(() => new Set(s.got().map((r) => r.headers['webhook-id'])).size, { timeout: 30_000, interval: 100 }).toBe(50);
    expect([...new Set(s.got().map((r) => r.headers['webhook-id']))].sort()).toEqual([...expected].sort());
    // And in order per contract, whatever was sent twice.
    for (const id of s.ids) {
      const versions = payloadsOf(s.secret, s.got()).filter((p) => p.data.contract.id === id).map((p) => p.data.version);
      expect([...new Set(versions)]).toEqual([1, 2, 3, 4, 5]);
    }
    receiver.delayMs = 0;
    server.kill('SIGTERM');
    await server.exited;
  });

  it('two instances send one outbox: no delivery attempt is made twice', async () => {
    const s = await shopWithEndpoint('/two', 20);
    const [a, b] = await Promise.all([startServer({ databaseUrl: database.url!, env }), startServer({ databaseUrl: database.url!, env })]);
    await Promise.all(
      s.ids.map(async (id, i) => {
        const server = i % 2 ? a : b;
        for (const action of ['skip', 'pause', 'resume', 'skip', 'skip']) expect((await call(server.url, `${API}/${id}/actions`, { auth: s.key, body: { action } })).status).toBe(200);
      }),
    );
    await expect.poll(() => s.got().length, { timeout: 20_000, interval: 50 }).toBe(100);
    await new Promise((r) => setTimeout(r, 500)); // anything sent twice would arrive by now
    const ids = s.got().map((r) => r.headers['webhook-id']);
    expect(new Set(ids).size).toBe(100);
    expect(ids).toHaveLength(100);
    const [{ n }] = await query<{ n: string }>(`SELECT count(*) AS n FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.endpoint_id = $1`, [s.endpoint.id]);
    expect(Number(n)).toBe(100);
  });
});
