import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServiceContext, systemClock, type ServiceContext } from '../src/services/context.js';
import { generateKey } from '../src/services/generateKey.js';
import { seedContracts } from '../src/services/seedContracts.js';
import { setShopPlan } from '../src/services/shops.js';
import { uniqueShop } from './support/app.js';
import { createTestDatabase, type TestDatabase } from './support/db.js';
import { API } from './support/fixtures.js';
import { call, needsPostgres, startServer, stopAllServers, type ServerProcess } from './support/processes.js';
import { startReceiver } from './support/receiver.js';

/**
 * Renewals across real processes on one PostgreSQL schema: two svc instances bill the same shop's due contracts
 * through the test gateway (standalone mode), one is killed with SIGKILL in the middle of the storm (attempts
 * committed and not yet handed over, attempts handed over whose outcome its in-process gateway had not told yet) and
 * started again. Every cycle is billed exactly once: one attempt and one order per (contract, cycle), none left
 * pending, every contract's next billing date moved on.
 */
describe.skipIf(needsPostgres('test/billing.processes.test.ts'))('billing on two instances', { timeout: 240_000 }, () => {
  const CONTRACTS = 2000;
  let database: TestDatabase;
  let ctx: ServiceContext;
  // Both sweep often, so both really race for the same due contracts.
  const env = { BILLING: 'on', SCHEDULER_INTERVAL_MS: '100' };

  beforeAll(async () => {
    database = await createTestDatabase();
    ctx = createServiceContext({ db: database.db, clock: systemClock, freeUntil: null });
  });
  afterAll(async () => {
    await stopAllServers();
    await database?.drop();
  });

  const query = <T>(text: string, params: unknown[] = []) => database.db.withSession((run) => run<T>(text, params));

  const progress = async (shopId: string) => {
    const [r] = await query<{ attempts: string; pending: string; handedOver: string; billed: string }>(
      `SELECT count(*)::text AS attempts, count(*) FILTER (WHERE status = 'pending')::text AS pending,
              count(*) FILTER (WHERE status = 'pending' AND submitted_at IS NOT NULL)::text AS "handedOver",
              count(DISTINCT contract_id) FILTER (WHERE status = 'succeeded')::text AS billed
         FROM billing_attempts WHERE shop_id = $1`,
      [shopId],
    );
    return { attempts: Number(r.attempts), pending: Number(r.pending), handedOver: Number(r.handedOver), billed: Number(r.billed) };
  };

  it('kill -9 one of two instances mid-storm, restart it: exactly one order per (contract, cycle), nothing pending', async () => {
    const shop = await setShopPlan({ ctx, input: { domain: uniqueShop('storm'), plan: 'enterprise' } });
    const { secret: key } = await generateKey({ ctx, input: { shopId: shop.id, name: 'storm' } });
    const ids = (await seedContracts({ ctx, input: { shopId: shop.id, count: CONTRACTS } })).map((c) => c.id);

    let a: ServerProcess = await startServer({ databaseUrl: database.url!, env });
    const b = await startServer({ databaseUrl: database.url!, env });

    // Every contract falls due at the same moment: the cycle each is billed for is this date.
    const [{ due }] = await query<{ due: Date }>(
      `UPDATE subscription_contracts SET next_billing_date = date_trunc('second', now()) WHERE shop_id = $1 RETURNING next_billing_date AS due`,
      [shop.id],
    );
    // Mid-storm: attempts exist, some already handed to a gateway whose outcome (told about a second later) is
    // still to come, and contracts are still due.
    await expect
      .poll(async () => {
        const p = await progress(shop.id);
        return p.attempts >= CONTRACTS / 4 && p.handedOver > 0;
      }, { timeout: 60_000, interval: 5 })
      .toBe(true);
    a.kill('SIGKILL');
    expect((await a.exited).signal).toBe('SIGKILL');
    const atKill = await progress(shop.id);
    expect(atKill.billed, 'the storm was over before the kill').toBeLessThan(CONTRACTS);

    a = await startServer({ databaseUrl: database.url!, env });
    // The event: every due contract has its successful attempt and no attempt is pending.
    await expect
      .poll(async () => progress(shop.id), { timeout: 180_000, interval: 250 })
      .toMatchObject({ billed: CONTRACTS, pending: 0 });
    expect(a.alive() && b.alive()).toBe(true);

    const perCycle = await query<{ contractId: string; cycleDate: Date; attempts: string; succeeded: string; orders: string }>(
      `SELECT contract_id::text AS "contractId", cycle_date AS "cycleDate", count(*)::text AS attempts,
              count(*) FILTER (WHERE status = 'succeeded')::text AS succeeded, count("order")::text AS orders
         FROM billing_attempts WHERE shop_id = $1 GROUP BY contract_id, cycle_date`,
      [shop.id],
    );
    expect(perCycle).toHaveLength(CONTRACTS);
    expect(new Set(perCycle.map((c) => c.contractId))).toEqual(new Set(ids));
    for (const c of perCycle) {
      expect(c, `contract ${c.contractId}`).toMatchObject({ attempts: '1', succeeded: '1', orders: '1' });
      expect(new Date(c.cycleDate).getTime()).toBe(new Date(due).getTime());
    }
    // Order names are never given twice (a gap after the crash is allowed).
    const [names] = await query<{ orders: string; names: string }>(
      `SELECT count(*)::text AS orders, count(DISTINCT "order" ->> 'name')::text AS names FROM billing_attempts WHERE shop_id = $1 AND "order" IS NOT NULL`,
      [shop.id],
    );
    expect(names).toEqual({ orders: String(CONTRACTS), names: String(CONTRACTS) });
    // One billing.attempted and one billing.succeeded event per contract, and each contract's schedule moved on.
    const events = await query<{ type: string; n: string; contracts: string }>(
      `SELECT type, count(*)::text AS n, count(DISTINCT contract_id)::text AS contracts FROM contract_events
        WHERE shop_id = $1 AND type LIKE 'billing.%' GROUP BY type ORDER BY type`,
      [shop.id],
    );
    expect(events).toEqual([
      { type: 'billing.attempted', n: String(CONTRACTS), contracts: String(CONTRACTS) },
      { type: 'billing.succeeded', n: String(CONTRACTS), contracts: String(CONTRACTS) },
    ]);
    const [stillDue] = await query<{ n: string }>(`SELECT count(*)::text AS n FROM subscription_contracts WHERE shop_id = $1 AND next_billing_date <= $2`, [shop.id, due]);
    expect(stillDue.n).toBe('0');

    // Seen from the outside: a contract's attempts, through either instance, show the one order of its cycle.
    for (const server of [a, b]) {
      const res = await call(server.url, `${API}/${ids[0]}/billing-attempts`, { auth: key });
      expect(res.status).toBe(200);
      const attempts = res.body.billingAttempts;
      expect(attempts).toHaveLength(1);
      expect(attempts[0]).toMatchObject({ contractId: ids[0], status: 'succeeded', attempt: 1 });
      expect(attempts[0].order.name).toMatch(/^#\d+$/);
    }
  });
  it('renewals at scale as the README deploys them: the API instance (SCHEDULER_ENABLED=false) serves and bills nothing; the workers\' instance bills every due contract and delivers its webhooks', async () => {
    const N = 300;
    // A database of its own: no instance of another test works on it.
    const own = await createTestDatabase();
    const ownCtx = createServiceContext({ db: own.db, clock: systemClock, freeUntil: null });
    const ownQuery = <T>(text: string, params: unknown[] = []) => own.db.withSession((run) => run<T>(text, params));
    const receiver = await startReceiver();
    try {
      const shop = await setShopPlan({ ctx: ownCtx, input: { domain: uniqueShop('apart'), plan: 'enterprise' } });
      const { secret: key } = await generateKey({ ctx: ownCtx, input: { shopId: shop.id, name: 'apart' } });
      const ids = (await seedContracts({ ctx: ownCtx, input: { shopId: shop.id, count: N } })).map((c) => c.id);
      const apartEnv = { ...env, WEBHOOKS_ALLOW_PRIVATE: 'true' };
      const api = await startServer({ databaseUrl: own.url!, env: { ...apartEnv, SCHEDULER_ENABLED: 'false' } });
      const workers = await startServer({ databaseUrl: own.url!, env: apartEnv });
      const endpoint = await call(api.url, '/api/v1/webhook-endpoints', { auth: key, body: { url: `${receiver.url}/hook`, events: ['billing.succeeded'] } });
      expect(endpoint.status).toBe(201);

      await ownQuery(`UPDATE subscription_contracts SET next_billing_date = date_trunc('second', now()) WHERE shop_id = $1`, [shop.id]);
      // The API answers meanwhile.
      expect((await call(api.url, `${API}/${ids[0]}`, { auth: key })).status).toBe(200);
      // The event: every contract billed, nothing pending, and every outcome's webhook received.
      const billed = async () => {
        const [r] = await ownQuery<{ billed: string; pending: string }>(
          `SELECT count(DISTINCT contract_id) FILTER (WHERE status = 'succeeded')::text AS billed, count(*) FILTER (WHERE status = 'pending')::text AS pending
             FROM billing_attempts WHERE shop_id = $1`,
          [shop.id],
        );
        return { billed: Number(r.billed), pending: Number(r.pending) };
      };
      await expect.poll(billed, { timeout: 120_000, interval: 250 }).toEqual({ billed: N, pending: 0 });
      await receiver.waitFor(N, 120_000);
      expect(new Set(receiver.received.map((r) => JSON.parse(r.body).data.contract.id))).toEqual(new Set(ids));

      // All of it was the workers' instance's work: the API instance created no attempt and sent no webhook.
      const counter = async (server: ServerProcess, name: string) => {
        const text = (await fetch(`${server.url}/metrics`).then((r) => r.text())).split('\n').find((l) => l.startsWith(`${name} `));
        return Number(text?.split(' ')[1] ?? NaN);
      };
      expect(await counter(api, 'svc_billing_attempts_total')).toBe(0);
      expect(await counter(api, 'svc_webhook_attempts_total')).toBe(0);
      expect(await counter(workers, 'svc_billing_attempts_total')).toBe(N);
      expect(await counter(workers, 'svc_webhook_attempts_total')).toBe(N);
    } finally {
      await stopAllServers();
      await receiver.close();
      await own.drop();
    }
  });
});
