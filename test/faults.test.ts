import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../src/db/client.js';
import { createServiceContext, systemClock, type ServiceContext } from '../src/services/context.js';
import { generateKey } from '../src/services/generateKey.js';
import { seedContracts } from '../src/services/seedContracts.js';
import { signSessionToken } from '../src/services/sessionTokens.js';
import { setShopPlan } from '../src/services/shops.js';
import { uniqueShop } from './support/app.js';
import { createTestDatabase, type TestDatabase } from './support/db.js';
import {
  call,
  connectionRefused,
  holdRowLock,
  needsPostgres,
  PROCESS_CREDENTIALS,
  startServer,
  stopAllServers,
  type HttpResult,
} from './support/processes.js';
import { startTcpProxy, viaPort, type TcpProxy } from './support/tcpProxy.js';

/**
 * What a real process does when the world misbehaves: the database goes away and comes back, the process is killed
 * with SIGKILL under load, or it is asked to stop with SIGTERM while requests are in flight.
 */
describe.skipIf(needsPostgres('test/faults.test.ts'))('faults', { timeout: 60_000 }, () => {
  let database: TestDatabase;
  let ctx: ServiceContext;
  let proxy: TcpProxy | undefined;

  beforeAll(async () => {
    database = await createTestDatabase();
    ctx = createServiceContext({ db: database.db, clock: systemClock, freeUntil: null });
  });
  afterAll(async () => {
    await stopAllServers();
    await proxy?.close();
    await database?.drop();
  });

  const shopWithContracts = async (count: number) => {
    const domain = uniqueShop('faults');
    const shop = await setShopPlan({ ctx, input: { domain, plan: 'enterprise' } });
    const { secret } = await generateKey({ ctx, input: { shopId: shop.id } });
    const seeded = await seedContracts({ ctx, input: { shopId: shop.id, count } });
    return { domain, key: secret, ids: seeded.map((c) => c.id) };
  };

  const expectUnavailable = (res: HttpResult) => {
    expect(res.status).toBe(503);
    expect(res.body.error).toMatchObject({ code: 'unavailable', requestId: expect.any(String) });
    expect(res.headers.get('retry-after')).toBeTruthy();
  };

  it('database unreachable: 503 unavailable, /readyz 503, /healthz 200, and it serves again when the database returns', async () => {
    const { domain, key, ids } = await shopWithContracts(1);
    const contractPath = `/api/v1/subscription-contracts/${ids[0]}`;
    const pgUrl = new URL(database.url!);
    proxy = await startTcpProxy({ host: pgUrl.hostname, port: Number(pgUrl.port || 5432) });
    const appName = `svc-outage-${process.pid}-${Date.now()}`;
    const url = new URL(viaPort(database.url!, proxy.port));
    url.searchParams.set('application_name', appName);
    const server = await startServer({ databaseUrl: url.toString(), env: { SCHEDULER_INTERVAL_MS: '200' } });
    const token = await signSessionToken(PROCESS_CREDENTIALS, domain);

    expect((await call(server.url, contractPath, { auth: key })).status).toBe(200);
    expect((await call(server.url, '/readyz')).status).toBe(200);

    // One request is inside its transaction when the database goes (its connection checked out of the pool,
    // waiting on a row another writer holds): it must get 503, and the process must not go down with it.
    const releaseLock = await holdRowLock(database.db, ids[0]);
    const midTransaction = call(server.url, `${contractPath}/actions`, { auth: key, body: { action: 'skip' } });
    await expect.poll(() => waitingOnLocks(database.db, appName), { timeout: 10_000, interval: 50 }).toBe(1);
    await proxy.cut();
    expectUnavailable(await midTransaction);
    await releaseLock();
    expectUnavailable(await call(server.url, contractPath, { auth: key }));
    expectUnavailable(await call(server.url, `${contractPath}/actions`, { auth: key, body: { action: 'skip' } }));
    expectUnavailable(await call(server.url, '/admin/api/keys', { auth: token }));
    expectUnavailable(await call(server.url, '/readyz'));
    // A request the key's check would refuse anyway, or one with a client error, from a key this process knows: the
    // key cannot be checked, so 503 in the envelope (nothing of the database's address), not the client's 4xx.
    for (const [path, body] of [
      [`${contractPath}/actions`, { action: 'bogus' }],
      [`${contractPath}/actions`, '{'],
      ['/api/v1/subscription-contracts/abc', undefined],
      ['/api/v1/subscription-contracts/99999999999999999999', undefined],
      ['/mcp', '{'],
    ] as const) {
      const res = await call(server.url, path, { auth: key, body, raw: typeof body === 'string' });
      expectUnavailable(res);
      expect(JSON.stringify(res.body)).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|statusCode/);
    }
    expect(await call(server.url, '/healthz')).toMatchObject({ status: 200, body: { status: 'ok' } });
    // Several failed sweeps later the process is still up and still answering.
    await server.waitForLog((l) => l.msg === 'resume sweep failed; retrying next tick');
    await new Promise((r) => setTimeout(r, 500));
    expect(server.alive()).toBe(true);
    expectUnavailable(await call(server.url, contractPath, { auth: key }));
    // The failures are logged, the key is not.
    expect(server.lines.join('\n')).not.toContain(key);

    await proxy.restore();
    await expect.poll(async () => (await call(server.url, '/readyz')).status, { timeout: 10_000, interval: 200 }).toBe(200);
    const skipped = await call(server.url, `${contractPath}/actions`, { auth: key, body: { action: 'skip' } });
    expect(skipped.status).toBe(200);
    expect((await call(server.url, '/admin/api/keys', { auth: token })).status).toBe(200);
    const events = await call(server.url, `${contractPath}/events`, { auth: key });
    // Only the skip made after the database returned happened; the ones answered 503 left no trace.
    expect(events.body.events.map((e: { type: string }) => e.type)).toEqual(['contract.skipped']);
    expect(server.alive()).toBe(true);
  });

  it('database silent (accepts, never answers): requests fail with 503 in bounded time, and recover', async () => {
    const { key, ids } = await shopWithContracts(1);
    const contractPath = `/api/v1/subscription-contracts/${ids[0]}`;
    const pgUrl = new URL(database.url!);
    const silent = await startTcpProxy({ host: pgUrl.hostname, port: Number(pgUrl.port || 5432) });
    try {
      // A short query timeout keeps the test quick; the default is QUERY_TIMEOUT_MS.
      const url = new URL(viaPort(database.url!, silent.port));
      url.searchParams.set('query_timeout', '1500');
      const server = await startServer({ databaseUrl: url.toString(), env: { SCHEDULER_INTERVAL_MS: '200' } });
      expect((await call(server.url, contractPath, { auth: key })).status).toBe(200);

      silent.stall();
      for (const request of [() => call(server.url, contractPath, { auth: key }), () => call(server.url, `${contractPath}/actions`, { auth: key, body: { action: 'skip' } })]) {
        const started = Date.now();
        expectUnavailable(await request());
        // The query timeout (1.5 s) or the connect timeout (3 s), not the kernel's minutes.
        expect(Date.now() - started).toBeLessThan(5000);
      }
      expectUnavailable(await call(server.url, '/readyz'));
      expect((await call(server.url, '/healthz')).status).toBe(200);

      await silent.restore();
      await expect.poll(async () => (await call(server.url, '/readyz')).status, { timeout: 10_000, interval: 200 }).toBe(200);
      await expect.poll(async () => (await call(server.url, `${contractPath}/actions`, { auth: key, body: { action: 'skip' } })).status, { timeout: 10_000, interval: 200 }).toBe(200);
      const events = await call(server.url, `${contractPath}/events`, { auth: key });
      expect(events.body.events.map((e: { type: string }) => e.type)).toEqual(['contract.skipped']);
      expect(server.alive()).toBe(true);
      server.kill('SIGKILL');
    } finally {
      await silent.close();
    }
  });

  it('kill -9 in the middle of a load of actions loses no acknowledged action', async () => {
    const clients = 6;
    const { key, ids } = await shopWithContracts(clients);
    let server = await startServer({ databaseUrl: database.url! });
    const cycle = ['skip', 'pause', 'resume'] as const;
    const eventType = { skip: 'contract.skipped', pause: 'contract.paused', resume: 'contract.resumed' } as const;
    type Acked = { action: (typeof cycle)[number]; contract: { updatedAt: string; status: string; nextBillingDate: string } };
    const acked: Acked[][] = ids.map(() => []);
    const unknown: ((typeof cycle)[number] | null)[] = ids.map(() => null);

    // Each client owns one contract and acts on it in a fixed cycle, so every action is valid and the expected
    // history is exactly the acknowledged actions, plus possibly the one whose answer the kill swallowed.
    const run = async (i: number) => {
      for (let n = 0; ; n++) {
        const action = cycle[n % cycle.length];
        let res: HttpResult;
        try {
          res = await call(server.url, `/api/v1/subscription-contracts/${ids[i]}/actions`, { auth: key, body: { action } });
        } catch {
          unknown[i] = action;
          return;
        }
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        acked[i].push({ action, contract: res.body.contract });
      }
    };
    const load = ids.map((_, i) => run(i));
    // Kill after a second of load, and not before every client has had a few actions acknowledged (slow machines).
    const started = Date.now();
    await expect.poll(() => Date.now() - started >= 1000 && acked.every((a) => a.length >= 3), { timeout: 15_000, interval: 20 }).toBe(true);
    server.kill('SIGKILL');
    await Promise.all(load);
    expect(await server.exited).toMatchObject({ signal: 'SIGKILL' });

    server = await startServer({ databaseUrl: database.url! });
    for (const [i, id] of ids.entries()) {
      const events = await allEvents(server.url, key, id);
      const history = events.map((e) => e.type);
      const expected = acked[i].map((a) => eventType[a.action]);
      const extra = history.slice(expected.length);
      expect(history.slice(0, expected.length), `contract ${id}`).toEqual(expected);
      // At most the one action in flight at the kill, committed before its answer could be sent.
      expect(extra.length === 0 || (extra.length === 1 && unknown[i] !== null && extra[0] === eventType[unknown[i]!])).toBe(true);
      for (const [n, a] of acked[i].entries()) expect(events[n].at, `event ${n} of contract ${id}`).toBe(a.contract.updatedAt);

      const now = (await call(server.url, `/api/v1/subscription-contracts/${id}`, { auth: key })).body.contract;
      const last = events[events.length - 1];
      expect(now.status).toBe(last.to);
      if (extra.length === 0 && acked[i].length) {
        const lastAcked = acked[i][acked[i].length - 1].contract;
        expect({ status: now.status, nextBillingDate: now.nextBillingDate, updatedAt: now.updatedAt }).toEqual({
          status: lastAcked.status,
          nextBillingDate: lastAcked.nextBillingDate,
          updatedAt: lastAcked.updatedAt,
        });
      }
    }
  });

  it('SIGTERM drains in-flight requests, stops the scheduler and exits 0; new connections are refused', async () => {
    const { key, ids } = await shopWithContracts(1);
    const appName = `svc-drain-${process.pid}-${Date.now()}`;
    const url = new URL(database.url!);
    url.searchParams.set('application_name', appName);
    const server = await startServer({ databaseUrl: url.toString(), env: { SCHEDULER_INTERVAL_MS: '100', SHUTDOWN_TIMEOUT_MS: '8000' } });

    // Another writer holds the contract's row: the actions sent now are in flight, waiting on it, when SIGTERM comes.
    const releaseLock = await holdRowLock(database.db, ids[0]);
    const inFlight = 8;
    let settled = 0;
    const requests = Array.from({ length: inFlight }, () =>
      call(server.url, `/api/v1/subscription-contracts/${ids[0]}/actions`, { auth: key, body: { action: 'skip' } }).finally(() => settled++),
    );
    await expect.poll(() => waitingOnLocks(database.db, appName), { timeout: 10_000, interval: 50 }).toBe(inFlight);

    server.kill('SIGTERM');
    await server.waitForLog((l) => String(l.msg).startsWith('shutting down'));
    await expect.poll(() => connectionRefused(server.port), { timeout: 5000, interval: 50 }).toBe(true);
    expect(settled).toBe(0);
    expect(server.alive()).toBe(true);

    const releasedAt = Date.now();
    await releaseLock();
    const results = await Promise.all(requests);
    expect(results.map((r) => r.status)).toEqual(Array(inFlight).fill(200));
    const exit = await server.exited;
    const output = server.lines.filter((l) => !l.includes('"msg":"request"')).join('\n');
    expect(exit, output).toEqual({ code: 0, signal: null });
    // Done as soon as the last response is out, not at the shutdown timeout (nor the keep-alive timeout).
    expect(Date.now() - releasedAt).toBeLessThan(3000);
    expect(server.logs().some((l) => l.msg === 'stopped')).toBe(true);
    // Nothing failed on the way down: no sweep cut off mid-way, no error.
    expect(server.logs().filter((l) => Number(l.level) >= 50)).toEqual([]);

    const events = await allEventsDirect(database.db, ids[0]);
    expect(events.filter((t) => t === 'contract.skipped')).toHaveLength(inFlight);
  });
});

type EventOut = { type: string; at: string; to: string };

/** A contract's whole history through the API, oldest first. */
async function allEvents(baseUrl: string, key: string, id: string): Promise<EventOut[]> {
  const out: EventOut[] = [];
  let cursor: string | null = null;
  do {
    const res: HttpResult = await call(baseUrl, `/api/v1/subscription-contracts/${id}/events?limit=100${cursor ? `&cursor=${cursor}` : ''}`, { auth: key });
    expect(res.status).toBe(200);
    out.push(...res.body.events);
    cursor = res.body.nextCursor;
  } while (cursor);
  return out.reverse();
}

async function allEventsDirect(db: Database, id: string): Promise<string[]> {
  return db.withSession(async (run) =>
    (await run<{ type: string }>('SELECT type FROM contract_events WHERE contract_id = $1 ORDER BY id', [id])).map((r) => r.type),
  );
}

/** How many of the server's database sessions are waiting for a lock. */
async function waitingOnLocks(db: Database, applicationName: string): Promise<number> {
  const [row] = await db.withSession((run) =>
    run<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'",
      [applicationName],
    ),
  );
  return row.n;
}
