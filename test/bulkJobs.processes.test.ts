import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addInterval } from '../src/domain/time.js';
import { createServiceContext, systemClock, type ServiceContext } from '../src/services/context.js';
import { generateKey } from '../src/services/generateKey.js';
import { setShopPlan } from '../src/services/shops.js';
import { uniqueShop } from './support/app.js';
import { createTestDatabase, type TestDatabase } from './support/db.js';
import { insertManyContracts } from './support/manyContracts.js';
import { call, needsPostgres, startServer, stopAllServers, type ServerProcess } from './support/processes.js';

/**
 * A bulk job across real processes on one PostgreSQL schema (docs/product.md §15, Rules): two svc instances share a
 * skip over thousands of contracts; each is killed with SIGKILL in turn in the middle of it (its claimed batch
 * rolled back, its claim left to lapse) and started again. The job completes and every contract was skipped exactly
 * once: one event of the job per contract, its next billing date moved one cycle, counts that add up to what it
 * matched, no item left pending. A skip is not idempotent, so a contract changed twice would show.
 */
describe.skipIf(needsPostgres('test/bulkJobs.processes.test.ts'))('a bulk job on two instances', { timeout: 180_000 }, () => {
  const CONTRACTS = Number(process.env.BULK_PROCESSES_CONTRACTS ?? 5000);
  // A killed instance's claim lapses after this (60 s by default): the test waits for it, so it is short here.
  const env = { BILLING: 'off', BULK_JOB_LEASE_MS: '2000' };
  let database: TestDatabase;
  let ctx: ServiceContext;

  beforeAll(async () => {
    database = await createTestDatabase();
    ctx = createServiceContext({ db: database.db, clock: systemClock, freeUntil: null });
  });
  afterAll(async () => {
    await stopAllServers();
    await database?.drop();
  });

  const query = <T>(text: string, params: unknown[] = []) => database.db.withSession((run) => run<T>(text, params));
  const settled = async (jobId: string) => {
    const [r] = await query<{ n: number }>(`SELECT count(*)::int AS n FROM bulk_job_items WHERE job_id = $1 AND status <> 'pending'`, [jobId]);
    return r.n;
  };

  it(`kill -9 each of two instances in turn mid-job and restart it: ${CONTRACTS} contracts, each skipped exactly once`, async () => {
    const shop = await setShopPlan({ ctx, input: { domain: uniqueShop('bulkkill'), plan: 'enterprise' } });
    const { secret: key } = await generateKey({ ctx, input: { shopId: shop.id, name: 'bulk' } });
    await insertManyContracts({ database, clock: systemClock }, shop.id, CONTRACTS, { ids: false });
    // Every one active, so the skip changes each.
    await query(`UPDATE subscription_contracts SET status = 'ACTIVE', paused_at = NULL, cancelled_at = NULL WHERE shop_id = $1`, [shop.id]);
    const before = new Map(
      (await query<{ id: string; next: Date }>(`SELECT id::text AS id, next_billing_date AS next FROM subscription_contracts WHERE shop_id = $1`, [shop.id])).map((r) => [r.id, r.next]),
    );
    expect(before.size).toBe(CONTRACTS);

    const servers: ServerProcess[] = await Promise.all([startServer({ databaseUrl: database.url!, env }), startServer({ databaseUrl: database.url!, env })]);
    const started = Date.now();
    const created = await call(servers[0].url, '/api/v1/bulk-jobs', { auth: key, body: { selector: { filter: {} }, change: { action: 'skip' } } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const jobId: string = created.body.bulkJob.id;
    expect(created.body.bulkJob.counts.matched).toBe(CONTRACTS);

    // Each instance killed in turn once a further share of the job is done, and started again (the second kill does
    // not wait for the first instance's restart: for a moment, none runs).
    const kills: { instance: number; settled: number; at: number }[] = [];
    const restarts: Promise<void>[] = [];
    for (const [instance, share] of [
      [0, 0.2],
      [1, 0.5],
    ] as const) {
      await expect.poll(() => settled(jobId), { timeout: 120_000, interval: 10 }).toBeGreaterThanOrEqual(CONTRACTS * share);
      servers[instance].kill('SIGKILL');
      expect((await servers[instance].exited).signal).toBe('SIGKILL');
      const atKill = await settled(jobId);
      expect(atKill, 'the job was over before the kill').toBeLessThan(CONTRACTS);
      kills.push({ instance, settled: atKill, at: Date.now() - started });
      restarts.push(startServer({ databaseUrl: database.url!, env }).then((s) => void (servers[instance] = s)));
    }
    await Promise.all(restarts);

    // The event: the job completed, as either instance tells it.
    await expect
      .poll(async () => (await call(servers[0].url, `/api/v1/bulk-jobs/${jobId}`, { auth: key })).body.bulkJob?.status, { timeout: 120_000, interval: 100 })
      .toBe('completed');
    const seconds = (Date.now() - started) / 1000;
    console.log(`[bulk processes] ${CONTRACTS} contracts, kills ${JSON.stringify(kills)}, completed in ${seconds.toFixed(1)} s`);

    for (const server of servers) {
      const job = (await call(server.url, `/api/v1/bulk-jobs/${jobId}`, { auth: key })).body.bulkJob;
      expect(job).toMatchObject({ status: 'completed', counts: { matched: CONTRACTS, pending: 0, succeeded: CONTRACTS, failed: 0, skipped: 0 } });
    }
    const [items] = await query<{ pending: number; succeeded: number; withEvent: number }>(
      `SELECT count(*) FILTER (WHERE status = 'pending')::int AS pending, count(*) FILTER (WHERE status = 'succeeded')::int AS succeeded,
              count(event_id)::int AS "withEvent"
         FROM bulk_job_items WHERE job_id = $1`,
      [jobId],
    );
    expect(items).toEqual({ pending: 0, succeeded: CONTRACTS, withEvent: CONTRACTS });

    // Exactly one event of the job per contract, and it is the one its result names.
    const events = await query<{ contractId: string; n: number; types: string[]; eventId: string }>(
      `SELECT e.contract_id::text AS "contractId", count(*)::int AS n, array_agg(DISTINCT e.type) AS types, min(e.id)::text AS "eventId"
         FROM contract_events e WHERE e.shop_id = $1 AND e.actor_type = 'bulk_job' AND e.actor_id = $2 GROUP BY e.contract_id`,
      [shop.id, jobId],
    );
    expect(events).toHaveLength(CONTRACTS);
    expect(events.filter((e) => e.n !== 1)).toEqual([]);
    expect(new Set(events.flatMap((e) => e.types))).toEqual(new Set(['contract.skipped']));
    const named = new Map((await query<{ contractId: string; eventId: string }>(`SELECT contract_id::text AS "contractId", event_id::text AS "eventId" FROM bulk_job_items WHERE job_id = $1`, [jobId])).map((r) => [r.contractId, r.eventId]));
    expect(events.filter((e) => named.get(e.contractId) !== e.eventId)).toEqual([]);
    // No other event on any of them, and each next billing date moved exactly one cycle.
    const [{ others }] = await query<{ others: number }>(`SELECT count(*)::int AS others FROM contract_events WHERE shop_id = $1 AND (actor_type <> 'bulk_job' OR actor_id <> $2)`, [shop.id, jobId]);
    expect(others).toBe(0);
    const after = await query<{ id: string; next: Date; version: number }>(`SELECT id::text AS id, next_billing_date AS next, version FROM subscription_contracts WHERE shop_id = $1`, [shop.id]);
    const wrong = after.filter((r) => r.next.getTime() !== addInterval(before.get(r.id)!, 'MONTH', 1).getTime());
    expect(wrong.map((r) => r.id)).toEqual([]);
  });
});
