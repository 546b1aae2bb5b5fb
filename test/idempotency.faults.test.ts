import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../src/db/client.js';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { createTestDatabase, onPostgres, type TestDatabase } from './support/db.js';
import { API, contractRow, expectError, insertContract } from './support/fixtures.js';
import { holdRowLock } from './support/processes.js';
import { startTcpProxy, viaPort, type TcpProxy } from './support/tcpProxy.js';

/**
 * A 5xx frees its Idempotency-Key (README, Idempotency) even when the database that should record the release is the
 * very thing that failed: the release is made once the database is back, so a retry with the same key runs, instead
 * of meeting 409 idempotency_in_progress until the lock times out. The app reaches PostgreSQL through a proxy the test
 * can cut; PGlite cannot be taken away from the process that holds it.
 */
describe.skipIf(!onPostgres())('an Idempotency-Key after a 503 whose release failed', { timeout: 60_000 }, () => {
  let database: TestDatabase;
  let proxy: TcpProxy;
  let proxied: Database;
  let t: TestApp;
  const appName = `svc-idem-${process.pid}-${Date.now()}`;

  beforeAll(async () => {
    database = await createTestDatabase();
    const pg = new URL(database.url!);
    proxy = await startTcpProxy({ host: pg.hostname, port: Number(pg.port || 5432) });
    const url = new URL(viaPort(database.url!, proxy.port));
    url.searchParams.set('application_name', appName);
    proxied = await openDatabase({ kind: 'postgres', url: url.toString(), onPoolError: () => {} });
    t = await startTestApp({ database: { ...database, db: proxied } });
  });
  afterAll(async () => {
    await t?.close();
    await proxied?.close().catch(() => undefined);
    await proxy?.close();
    await database?.drop();
  });

  const waitingOnLocks = async () =>
    (await database.db.withSession((run) => run<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'", [appName])))[0].n;

  it('is free again as soon as the database is back: the retry runs the action once', async () => {
    const { key, shopId } = await t.shopWithKey();
    const c = await insertContract(t, shopId);
    const action = () => t.inject({ method: 'POST', url: `${API}/${c.id}/actions`, headers: { ...bearer(key), 'idempotency-key': 'skip-once' }, payload: { action: 'skip' } });

    // The key is claimed, then the action waits on a row another writer holds; the database goes away under it.
    const releaseLock = await holdRowLock(database.db, c.id);
    const first = action();
    await expect.poll(waitingOnLocks, { timeout: 10_000, interval: 50 }).toBe(1);
    await proxy.cut();
    expectError(await first, 503, 'unavailable');
    await releaseLock();
    // Its release could not be recorded: the key is still held.
    const [held] = await database.db.withSession((run) => run<{ state: string }>('SELECT state FROM idempotency_keys WHERE shop_id = $1', [shopId]));
    expect(held.state).toBe('in_progress');

    // The database is back (the test clock stands still: the lock timeout never passes here).
    await proxy.restore();
    await expect
      .poll(async () => (await action()).statusCode, { timeout: 15_000, interval: 200 })
      .toBe(200);
    expect((await contractRow(t, c.id)).nextBillingDate.toISOString()).toBe('2027-01-01T00:00:00.000Z');
    // And the retry's outcome is what the key now replays.
    const replay = await action();
    expect(replay.statusCode).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
  });
});
