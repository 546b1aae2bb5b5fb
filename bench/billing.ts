/**
 * npm run bench:billing: renewals under load on this machine. svc runs as its own process, as `npm start` runs it
 * (BILLING=on, standalone mode: payments through the built-in test gateway), on PostgreSQL when DATABASE_URL is set
 * (in a fresh schema), else on a fresh embedded database (then the database's CPU is inside svc's process).
 *
 * The storm: BENCH_BILLING_CONTRACTS (default 100,000) ACTIVE contracts of one shop, written by one INSERT … SELECT
 * over generate_series from a few realistic contracts, all due at one moment BENCH_BILLING_LEAD seconds (default 30)
 * after they are written: the storm begins by the clock, as renewals do, once svc runs and its API has been measured
 * alone (no statement of the benchmark's own writes 100,000 rows while the API is measured). From that moment to the
 * moment every one of their attempts has its outcome committed (the
 * attempt completed, its events and its webhook outbox row written in the same statement, by the change path):
 * - the time it took, and the number of attempts completed per second;
 * - svc's peak RSS (VmHWM) over the whole run;
 * - duplicates: cycles (contract, cycle date) with more than one successful attempt, and order names given twice;
 * - CPU per billed contract of svc and of PostgreSQL (all its processes), net of the API load below (the requests
 *   answered meanwhile, at the CPU per request measured first with the API alone) and as measured (with it);
 * - the API meanwhile: a steady, open-loop 200 requests per second (support.ts steadyRate), half GETs of contracts
 *   being billed, half pause/resume actions on other contracts of the shop (never due), p50 and p99; the same load is
 *   first run alone for BENCH_API_SECONDS (default 5), for comparison.
 * A webhook endpoint of the shop subscribes to the billing outcomes (so each outcome writes an outbox row), pointing
 * at a receiver in a process of its own (bench/webhookReceiver.ts); the deliveries received by the end are counted.
 *
 * Then the platform scenario (bench/billingPlatform.ts, when present): billing on the platform stand-in against its
 * cost bucket. One line per row, and the last line printed is one JSON object. BENCH_PROFILE=dir writes a CPU
 * profile of the svc process; BENCH_BILLING_TIMEOUT (seconds, default 600) ends a storm that does not finish.
 * svc runs as the README recommends for renewals at scale: the API on one instance (SCHEDULER_ENABLED=false) and
 * the workers on another at a lower CPU priority (`chrt --batch 0 nice -n 3`; BENCH_BILLING_WORKERS_NICE=n and
 * BENCH_BILLING_WORKERS_SCHED=other change it). svc's CPU is then both processes', the RSS each one's (the JSON's
 * peakRssMb the larger), and the event-loop delay the API instance's. BENCH_BILLING_WORKERS=together runs one
 * instance with both, as a bare `npm start` does.
 * Renewals come before their webhooks: the deliveries give way while a storm is billed and catch up after. The API's
 * load goes on until the receiver has every webhook of the storm; its latency is reported during the storm and
 * while the webhooks catch up, and the JSON has when the last webhook arrived.
 */
import { adminPrincipal } from '../src/services/principal.js';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Database } from '../src/db/client.js';
import { createServiceContext, systemClock, type ServiceContext } from '../src/services/context.js';
import { generateKey } from '../src/services/generateKey.js';
import { seedContracts } from '../src/services/seedContracts.js';
import { setShopPlan } from '../src/services/shops.js';
import { createWebhookEndpoint } from '../src/services/webhookEndpoints.js';
import { systemResolve } from '../src/webhooks/addressGuard.js';
import { batchDelta, batchStats, benchDatabase, eventLoopLag, buildServer, cpuMs, latencyWindow, pauseResumeNext, peakRssMb, root, startChild, steadyRate, stopChild, type SteadyRequest, type SteadyResult } from './support.js';

const CONTRACTS = Number(process.env.BENCH_BILLING_CONTRACTS ?? 100_000);
const TIMEOUT_S = Number(process.env.BENCH_BILLING_TIMEOUT ?? 600);
const API_SECONDS = Number(process.env.BENCH_API_SECONDS ?? 5);
const LEAD_S = Number(process.env.BENCH_BILLING_LEAD ?? 30);
const PROFILE_DIR = process.env.BENCH_PROFILE;
/** BENCH_BILLING_ONLY=storm or =platform runs one part. */
const ONLY = process.env.BENCH_BILLING_ONLY?.split(',');
const PLATFORM_CONTRACTS = Number(process.env.BENCH_BILLING_PLATFORM_CONTRACTS ?? 5000);
/** BENCH_API=off: the storm without the API load (its CPU then needs no estimate); BENCH_WEBHOOKS=off: no endpoint. */
const API_ON = process.env.BENCH_API !== 'off';
const WEBHOOKS_ON = process.env.BENCH_WEBHOOKS !== 'off';
const WORKERS_APART = process.env.BENCH_BILLING_WORKERS !== 'together';
const WORKERS_NICE = WORKERS_APART ? Number(process.env.BENCH_BILLING_WORKERS_NICE ?? 3) : 0;
/** The workers' instance under `chrt --batch 0` (Linux's SCHED_BATCH) where chrt is there, unless BENCH_BILLING_WORKERS_SCHED=other. */
const WORKERS_BATCH = WORKERS_APART && process.env.BENCH_BILLING_WORKERS_SCHED !== 'other' && spawnSync('chrt', ['--version']).status === 0;
const WORKERS_UNDER = [...(WORKERS_BATCH ? ['chrt', '--batch', '0'] : []), ...(WORKERS_NICE ? ['nice', '-n', String(WORKERS_NICE)] : [])];
/** Realistic contracts the storm's rows are copied from (lines, address, policy), and the contracts the actions use. */
const TEMPLATES = 50;
const ACTION_CONTRACTS = 2000;
const RATE = 200;
const CONNECTIONS = 50;
const BILLING_OUTCOMES = ['billing.succeeded', 'billing.failed', 'billing.action_required'];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const q = <T>(db: Database, text: string, params: unknown[] = []) => db.withSession((run) => run(text, params)) as Promise<T[]>;

/** The webhook receiver (bench/webhookReceiver.ts), in a process of its own: answers 200 at once, counts. */
async function startReceiver() {
  const { child, url } = await startChild('bench/webhookReceiver.ts', {}, [], '/count');
  return {
    url: `${url}/hook`,
    received: async () => ((await (await fetch(`${url}/count`)).json()) as { received: number }).received,
    close: () => stopChild(child),
    cpuMs: () => cpuMs({ pid: child.pid! }),
  };
}

/**
 * The storm's contracts: copies of the templates (round robin), ACTIVE, their payment method `succeeds`, all due at
 * the whole second `leadS` seconds from now. One statement. Answers the new ids' range and that moment.
 */
async function insertStorm(db: Database, shopId: string, templateIds: string[], count: number, leadS: number): Promise<{ first: string; last: string; dueAtMs: number }> {
  const [r] = await q<{ first: string; last: string; n: string; dueAt: string }>(
    db,
    `WITH t AS (SELECT c.*, row_number() OVER (ORDER BY id) - 1 AS k FROM subscription_contracts c WHERE c.id = ANY ($2::bigint[])),
     ins AS (
       INSERT INTO subscription_contracts (shop_id, status, customer_id, customer_email, billing_interval, billing_interval_count,
         delivery_interval, delivery_interval_count, next_billing_date, lines, shipping_address, delivery_price, discounts, totals,
         created_at, updated_at, payment_behaviour)
       SELECT $1::bigint, 'ACTIVE', (9000000 + i)::text, format('storm%s@example.com', i), t.billing_interval, t.billing_interval_count,
         t.delivery_interval, t.delivery_interval_count, date_trunc('second', now()) + $5::int * interval '1 second', t.lines, t.shipping_address, t.delivery_price,
         t.discounts, t.totals, t.created_at, t.created_at, 'succeeds'
         FROM generate_series(0, $3::int - 1) AS i JOIN t ON t.k = i % $4::int
       RETURNING id)
     SELECT min(id)::text AS first, max(id)::text AS last, count(*)::text AS n,
            (extract(epoch FROM date_trunc('second', now()) + $5::int * interval '1 second') * 1000)::bigint::text AS "dueAt"
       FROM ins`,
    [shopId, templateIds, count, templateIds.length, leadS],
  );
  if (Number(r.n) !== count) throw new Error(`inserted ${r.n} storm contracts, not ${count}`);
  return { first: r.first, last: r.last, dueAtMs: Number(r.dueAt) };
}

/** Renewals' batches (workers/billing.ts plans a hundred due contracts at a time): the ceiling writes the same. */
const CEILING_BATCH = 100;

/**
 * The ceiling: PostgreSQL alone writing what a renewal writes, batch by batch, with no svc in between: an attempt and
 * its `billing.attempted` event (one transaction), then the outcome (another): the attempt succeeded, the contract's
 * next billing date moved on, a `billing.succeeded` event. Answers contracts per second.
 */
async function ceiling(db: Database, shopId: string, range: { first: string; last: string }): Promise<number> {
  const ids = (await q<{ id: string }>(db, `SELECT id::text AS id FROM subscription_contracts WHERE shop_id = $1 AND id BETWEEN $2 AND $3 ORDER BY id`, [shopId, range.first, range.last])).map((r) => r.id);
  const started = performance.now();
  for (let i = 0; i < ids.length; i += CEILING_BATCH) {
    const batch = ids.slice(i, i + CEILING_BATCH);
    await db.transaction((run) =>
      run(
        `WITH c AS (SELECT id, shop_id, next_billing_date, totals FROM subscription_contracts WHERE id = ANY ($1::bigint[]) ORDER BY id FOR UPDATE),
         a AS (INSERT INTO billing_attempts (id, shop_id, contract_id, cycle_date, attempt, trigger, status, amount, currency_code, idempotency_key, created_at)
                 SELECT gen_random_uuid(), shop_id, id, next_billing_date, 1, 'schedule', 'pending', (totals->>'total')::numeric, totals->>'currencyCode',
                        gen_random_uuid()::text, now() FROM c RETURNING contract_id)
         INSERT INTO contract_events (contract_id, shop_id, type, at, actor_type, from_status, to_status, data)
         SELECT c.id, c.shop_id, 'billing.attempted', now(), 'scheduler', 'ACTIVE', 'ACTIVE', '{}' FROM c JOIN a ON a.contract_id = c.id`,
        [batch],
      ),
    );
    await db.transaction((run) =>
      run(
        `WITH a AS (UPDATE billing_attempts SET status = 'succeeded', completed_at = now() WHERE contract_id = ANY ($1::bigint[]) AND status = 'pending' RETURNING contract_id),
         u AS (UPDATE subscription_contracts s SET next_billing_date = s.next_billing_date + interval '1 month', updated_at = now()
                 FROM a WHERE s.id = a.contract_id RETURNING s.id, s.shop_id)
         INSERT INTO contract_events (contract_id, shop_id, type, at, actor_type, from_status, to_status, data)
         SELECT id, shop_id, 'billing.succeeded', now(), 'scheduler', 'ACTIVE', 'ACTIVE', '{}' FROM u`,
        [batch],
      ),
    );
  }
  return ids.length / ((performance.now() - started) / 1000);
}

type StormCounts = { attempts: number; done: number };

/**
 * How far the storm is: two counts of small partial indexes (the contracts still due, the attempts still pending).
 * Counting what is still due reads every due contract (~100 ms of PostgreSQL at 100,000), so it is asked for the
 * progress line only; whether the storm is over is asked every half second, as two EXISTS that stop at the first row.
 * Nothing else of the shop is due or pending during the storm (the seeded contracts are due days later), and every
 * storm contract is due once: billed, its next date is a month away.
 */
async function stormCounts(db: Database, shopId: string): Promise<StormCounts> {
  const [r] = await q<{ due: string; pending: string }>(
    db,
    `SELECT (SELECT count(*) FROM subscription_contracts WHERE billing_due_at <= now() AND shop_id = $1)::text AS due,
            (SELECT count(*) FROM billing_attempts WHERE status = 'pending' AND shop_id = $1)::text AS pending`,
    [shopId],
  );
  const attempts = CONTRACTS - Number(r.due);
  return { attempts, done: attempts - Number(r.pending) };
}

/** PostgreSQL's WAL position and committed transactions (null on PGlite). */
async function walCounters(db: Database, where: string): Promise<{ bytes: number; commits: number } | null> {
  if (where !== 'PostgreSQL') return null;
  const [r] = await q<{ bytes: string; commits: string }>(
    db,
    `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::text AS bytes, (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())::text AS commits`,
  );
  return { bytes: Number(r.bytes), commits: Number(r.commits) };
}

async function stormOver(db: Database, shopId: string): Promise<boolean> {
  const [r] = await q<{ busy: boolean }>(
    db,
    `SELECT EXISTS (SELECT 1 FROM subscription_contracts WHERE billing_due_at <= now() AND shop_id = $1)
         OR EXISTS (SELECT 1 FROM billing_attempts WHERE status = 'pending' AND shop_id = $1) AS busy`,
    [shopId],
  );
  return !r.busy;
}

/** What the storm left in the database: everything committed, once each. */
async function stormChecks(db: Database, shopId: string, range: { first: string; last: string }) {
  const p = [shopId, range.first, range.last];
  const [r] = await q<Record<string, string>>(
    db,
    `SELECT
       (SELECT count(*) FROM (SELECT 1 FROM billing_attempts WHERE shop_id = $1 AND contract_id BETWEEN $2 AND $3 AND status = 'succeeded'
                               GROUP BY contract_id, cycle_date HAVING count(*) > 1) d)::text AS "duplicateCycles",
       (SELECT count(*) FROM (SELECT 1 FROM billing_attempts WHERE shop_id = $1 AND "order" IS NOT NULL
                               GROUP BY "order" ->> 'name' HAVING count(*) > 1) d)::text AS "duplicateOrderNames",
       (SELECT count(*) FROM billing_attempts WHERE shop_id = $1 AND contract_id BETWEEN $2 AND $3 AND status = 'pending')::text AS pending,
       (SELECT count(DISTINCT contract_id) FROM billing_attempts WHERE shop_id = $1 AND contract_id BETWEEN $2 AND $3 AND status = 'succeeded')::text AS "contractsBilled",
       (SELECT count(*) FROM contract_events WHERE shop_id = $1 AND contract_id BETWEEN $2 AND $3 AND type = 'billing.attempted')::text AS "attemptedEvents",
       (SELECT count(*) FROM contract_events WHERE shop_id = $1 AND contract_id BETWEEN $2 AND $3 AND type = ANY ($4::text[]))::text AS "outcomeEvents",
       (SELECT count(*) FROM webhook_deliveries WHERE shop_id = $1 AND contract_id BETWEEN $2 AND $3 AND type = ANY ($4::text[]))::text AS "outboxRows",
       (SELECT count(*) FROM subscription_contracts WHERE shop_id = $1 AND id BETWEEN $2 AND $3 AND next_billing_date <= now())::text AS "stillDue"`,
    [...p, BILLING_OUTCOMES],
  );
  return Object.fromEntries(Object.entries(r).map(([k, v]) => [k, Number(v)])) as Record<string, number>;
}

function apiRow(name: string, r: SteadyResult, extra = ''): void {
  console.log(`${name.padEnd(34)} ${String(r.rps).padStart(5)} req/s  p50 ${String(r.p50).padStart(5)} ms  p99 ${String(r.p99).padStart(5)} ms  non-2xx ${r.non2xx}  errors ${r.errors}${extra}`);
  const kinds = Object.entries(r.byMethod).map(([m, x]) => `${m} p50 ${x.p50} / p99 ${x.p99} ms`);
  if (kinds.length) console.log(`${''.padEnd(34)} by method: ${kinds.join(', ')}`);
  // BENCH_SHOW_SLOWEST=1: the slowest answers, to tell a steady tail from a few stalls.
  if (process.env.BENCH_SHOW_SLOWEST && r.slowest.length) {
    console.log(`${''.padEnd(34)} slowest (s after start: method ms): ${r.slowest.map((x) => `${(x.at / 1000).toFixed(1)}: ${x.method} ${x.ms}`).join(', ')}`);
    console.log(`${''.padEnd(34)} p99 of each 5 s: ${r.p99Every5s.join(', ')} ms`);
  }
}

/**
 * Platform mode (bench/billingPlatform.ts): PLATFORM_CONTRACTS due contracts billed through the platform's billing
 * attempts against the stand-in's cost bucket (2,000 points, 1,000 restored a second). svc and the stand-in run in
 * this process there, so "svc" CPU per billed contract is this process's, the stand-in's included.
 */
async function platformScenario(): Promise<Record<string, unknown> | null> {
  const file = path.join(root, 'bench', 'billingPlatform.ts');
  if (!existsSync(file)) {
    console.log('platform billing: bench/billingPlatform.ts is not there; the platform scenario was not run');
    return null;
  }
  type Scenario = (opts: { contracts: number }) => Promise<{ billed: number; seconds: number; bucketUseRatio: number; throttledFailures: number; duplicates: number; throttledAnswers: number; pointsPerSecond: number }>;
  const { billingPlatformScenario } = (await import(pathToFileURL(file).href)) as { billingPlatformScenario: Scenario };
  const svc0 = cpuMs({ pid: process.pid });
  const pg0 = cpuMs({ name: 'postgres' });
  const r = await billingPlatformScenario({ contracts: PLATFORM_CONTRACTS });
  const per = (ms: number) => Math.round((ms * 1000) / Math.max(1, r.billed));
  const cpu = { svcAndStandInUs: per(cpuMs({ pid: process.pid }) - svc0), pgUs: per(cpuMs({ name: 'postgres' }) - pg0) };
  console.log(
    `platform billing: ${r.billed}/${PLATFORM_CONTRACTS} in ${r.seconds} s  bucket use ${r.bucketUseRatio} of its restore rate (${r.pointsPerSecond} points/s)  ` +
      `THROTTLED failures ${r.throttledFailures} (answers met and retried: ${r.throttledAnswers})  duplicates ${r.duplicates}  ` +
      `cpu/contract: svc+stand-in ${cpu.svcAndStandInUs} µs, postgres ${cpu.pgUs} µs`,
  );
  return { ...r, cpuPerContract: cpu };
}

/** The storm in standalone mode, with the API load: its figures for the JSON line. */
async function stormScenario(): Promise<Record<string, unknown>> {
  const cleanups: (() => Promise<void> | void)[] = [];
  const bench = await benchDatabase();
  cleanups.push(() => bench.cleanup());
  const { db, where } = bench;
  const receiver = await startReceiver();
  cleanups.push(() => receiver.close());

  const ctx: ServiceContext = createServiceContext({ db, clock: systemClock, freeUntil: null, webhookAddresses: { allowPrivate: true, resolve: systemResolve } });
  const shop = await setShopPlan({ ctx, input: { domain: 'billing-bench.myshopify.com', plan: 'enterprise' } });
  const { secret } = await generateKey({ ctx, input: { shopId: shop.id, name: 'bench' } });
  if (WEBHOOKS_ON) await createWebhookEndpoint({ ctx, input: { principal: adminPrincipal(shop.id), body: { url: receiver.url, events: BILLING_OUTCOMES } } });
  // The templates and the actions' contracts are due a day or more from now: only the storm's contracts come due.
  const templates = await seedContracts({ ctx, input: { shopId: shop.id, count: TEMPLATES } });
  const actionIds = (await seedContracts({ ctx, input: { shopId: shop.id, count: ACTION_CONTRACTS } })).map((c) => c.id);
  const t0 = performance.now();
  const range = await insertStorm(db, shop.id, templates.map((c) => c.id), CONTRACTS, LEAD_S);
  await q(db, 'ANALYZE subscription_contracts');
  console.log(`seeded ${CONTRACTS} storm contracts in ${Math.round(performance.now() - t0)} ms (one INSERT … SELECT generate_series), all due at ${new Date(range.dueAtMs).toISOString()}`);

  const env: NodeJS.ProcessEnv = {
    ...bench.env,
    HOST: '127.0.0.1',
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
    BILLING: 'on',
    WEBHOOKS_ALLOW_PRIVATE: 'true',
    // The benchmark measures billing and latency, not the limiter: raised for this run only.
    RATE_LIMIT_PER_MINUTE: '100000000',
    AUTH_FAILURE_LIMIT_PER_MINUTE: '100000000',
  };
  const nodeArgs = buildServer(PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : []);
  // The API on one instance (SCHEDULER_ENABLED=false) and the workers on another, at a lower CPU priority, as the
  // README's deployment for renewals at scale runs them; or both on one (BENCH_BILLING_WORKERS=together).
  const svc = await startChild('dist/main.js', WORKERS_APART ? { ...env, SCHEDULER_ENABLED: 'false' } : env, nodeArgs);
  cleanups.unshift(() => stopChild(svc.child));
  const workers = WORKERS_APART ? await startChild('dist/main.js', env, nodeArgs, '/healthz', WORKERS_UNDER) : null;
  if (workers) cleanups.unshift(() => stopChild(workers.child));
  const svcPid = svc.child.pid!;
  const pids = [svcPid, ...(workers ? [workers.child.pid!] : [])];
  const svcCpuMs = () => pids.reduce((sum, pid) => sum + cpuMs({ pid }), 0);
  const rssMb = () => Math.max(...pids.map(peakRssMb));
  const rssEach = () => pids.map(peakRssMb).join(' + ');
  // The batched statements' counters of every instance (apart, the workers' and the API's), summed.
  const allBatchStats = async () => {
    const out: Awaited<ReturnType<typeof batchStats>> = {};
    for (const stats of await Promise.all([svc.url, ...(workers ? [workers.url] : [])].map(batchStats))) {
      for (const [name, s] of Object.entries(stats)) {
        const sum = (out[name] ??= { statements: 0, inputs: 0 });
        sum.statements += s.statements;
        sum.inputs += s.inputs;
      }
    }
    return out;
  };
  const load = () => os.loadavg().map((x) => x.toFixed(1)).join(' ');
  console.log(
    `svc ${svc.url} on ${where} (BILLING=on, standalone: the test gateway${workers ? `; the workers apart, on ${workers.url}, under \`${WORKERS_UNDER.join(' ')}\`` : '; API and workers in one instance'}); ` +
      `node ${process.version}; ${os.cpus().length} cores; load average ${load()}`,
  );

  const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
  const stormIds = { first: BigInt(range.first), span: BigInt(range.last) - BigInt(range.first) + 1n };
  const randomStormId = () => String(stormIds.first + BigInt(Math.floor(Math.random() * Number(stormIds.span))));
  const paused = new Set<string>();
  const act = pauseResumeNext(svc.url, () => actionIds[Math.floor(Math.random() * actionIds.length)], paused);
  let n = 0;
  const mixed = (): SteadyRequest => (n++ % 2 ? act() : { method: 'GET', url: `${svc.url}/api/v1/subscription-contracts/${randomStormId()}` });

  // The API alone first: its latency without a storm, and its CPU per request, taken off the storm's CPU below.
  let svcBefore = 0;
  let pgBefore = 0;
  const alone = await steadyRate({
    rate: RATE,
    seconds: API_SECONDS,
    connections: CONNECTIONS,
    headers,
    next: mixed,
    onStart: () => {
      svcBefore = svcCpuMs();
      pgBefore = cpuMs({ name: 'postgres' });
    },
  });
  const served = (r: SteadyResult) => Object.values(r.statuses).reduce((a, b) => a + b, 0) || 1;
  const apiSvcMsPerReq = (svcCpuMs() - svcBefore) / served(alone);
  const apiPgMsPerReq = (cpuMs({ name: 'postgres' }) - pgBefore) / served(alone);
  apiRow(`API at ${RATE}/s alone (GET + actions)`, alone, `  cpu/req: svc ${Math.round(apiSvcMsPerReq * 1000)} µs, postgres ${Math.round(apiPgMsPerReq * 1000)} µs`);

  // The storm: the API load starts (one uncounted second), then the moment every storm contract is due comes.
  let stormStart = 0;
  let stormEnd = 0;
  let svcCpu0 = 0;
  let pgCpu0 = 0;
  let timedOut = false;
  // When the receiver had every webhook of the storm (the API's load lasts until then), and when that load's counted
  // part began.
  let drainedAt = 0;
  let drainTimedOut = false;
  let loadFrom = 0;
  // BENCH_CLIENT_NICE=n (e.g. -10; needs the privilege): the load generator's thread at a higher CPU priority, so that
  // its own turn on a crowded machine's cores does not count in svc's latency (its latencies count from each
  // request's due time).
  if (process.env.BENCH_CLIENT_NICE) os.setPriority(Number(process.env.BENCH_CLIENT_NICE));
  // The load's uncounted second ends as the storm's moment comes: what is counted is the API during the storm.
  const lead = range.dueAtMs - Date.now() - 1100;
  if (lead < 0) console.log(`warning: the storm's moment came ${Math.round(-lead)} ms too soon for the API's load to be counted from it; raise BENCH_BILLING_LEAD (now ${LEAD_S} s)`);
  await sleep(Math.max(0, lead));
  const apiLoad = API_ON ? steadyRate({ rate: RATE, seconds: TIMEOUT_S + 10, connections: CONNECTIONS, headers, next: mixed, until: () => drainedAt > 0 || timedOut, onStart: () => (loadFrom = performance.now()) }) : null;
  if (apiLoad) await sleep(900);
  svcCpu0 = svcCpuMs();
  pgCpu0 = cpuMs({ name: 'postgres' });
  const world0 = { receiver: receiver.cpuMs(), generator: process.cpuUsage() };
  const batches0 = await allBatchStats();
  const wal0 = await walCounters(db, where);
  await eventLoopLag(svc.url);
  const untilDue = range.dueAtMs - Date.now();
  await sleep(Math.max(0, untilDue));
  stormStart = performance.now() - Math.max(0, -untilDue);
  console.log(`storm: ${CONTRACTS} contracts due now`);
  let counts: StormCounts = { attempts: 0, done: 0 };
  let lastPrint = stormStart;
  for (;;) {
    const over = await stormOver(db, shop.id);
    const now = performance.now();
    if (over) {
      stormEnd = now;
      counts = await stormCounts(db, shop.id);
      break;
    }
    if (now - stormStart > TIMEOUT_S * 1000) {
      timedOut = true;
      stormEnd = now;
      counts = await stormCounts(db, shop.id);
      break;
    }
    // Every 10 s: counting what is still due costs PostgreSQL ~0.1 s at the storm's start.
    if (now - lastPrint >= 10_000) {
      lastPrint = now;
      counts = await stormCounts(db, shop.id);
      console.log(`  ${((now - stormStart) / 1000).toFixed(0).padStart(4)} s: ${counts.attempts} attempts created, ${counts.done} with their outcome; svc rss ${rssMb()} MB peak`);
    }
    await sleep(500);
  }
  const stormS = (stormEnd - stormStart) / 1000;
  const svcCpu = svcCpuMs() - svcCpu0;
  const pgCpu = cpuMs({ name: 'postgres' }) - pgCpu0;
  const generatorUsage = process.cpuUsage(world0.generator);
  const world = { receiverMs: Math.round(receiver.cpuMs() - world0.receiver), generatorMs: Math.round((generatorUsage.user + generatorUsage.system) / 1000) };
  const batches = batchDelta(batches0, await allBatchStats(), Math.max(1, counts.done));
  const wal1 = await walCounters(db, where);
  const lag = await eventLoopLag(svc.url);
  // The storm's webhooks: while renewals work through a storm their deliveries give way, and catch up after; the API's
  // load goes on until the receiver has every one, and its latency meanwhile counts too.
  const receivedAtStormEnd = await receiver.received();
  while (WEBHOOKS_ON && !timedOut && (await receiver.received()) < CONTRACTS) {
    if (performance.now() - stormStart > TIMEOUT_S * 1000) {
      drainTimedOut = true;
      break;
    }
    await sleep(250);
  }
  drainedAt = performance.now();
  const apiRun: SteadyResult = (await apiLoad) ?? { rps: 0, p50: NaN, p99: NaN, errors: 0, non2xx: 0, statuses: {}, byMethod: {}, slowest: [], p99Every5s: [], samples: [] };
  const during = latencyWindow(apiRun.samples, 0, stormEnd - loadFrom);
  const catchUp = latencyWindow(apiRun.samples, stormEnd - loadFrom, drainedAt - loadFrom);
  const rss = rssMb();
  const rssApart = rssEach();
  const checks = await stormChecks(db, shop.id, range);
  const billed = Math.max(1, counts.done);
  const perContract = (ms: number) => Math.round((ms * 1000) / billed);
  // The API requests answered meanwhile, at what each cost when the API ran alone, are not the storm's.
  const answered = apiLoad ? during.answers : 0;
  // An estimate: a request costs less CPU in a busy process (its statements batched with others) than alone, so with
  // the API on, what is taken off can exceed the truth; null when it comes out below zero (BENCH_API=off measures
  // the storm alone).
  const netOf = (total: number, perReq: number) => (total - perReq * answered >= 0 ? perContract(total - perReq * answered) : null);
  const net = { svcUs: netOf(svcCpu, apiSvcMsPerReq), pgUs: netOf(pgCpu, apiPgMsPerReq) };
  const gross = { svcUs: perContract(svcCpu), pgUs: perContract(pgCpu) };
  console.log(
    `storm ${timedOut ? 'NOT FINISHED' : 'billed'}: ${counts.done}/${CONTRACTS} in ${stormS.toFixed(1)} s (${Math.round(counts.done / stormS)}/s)  peak rss ${workers ? `${rssApart} MB (API + workers)` : `${rss} MB`}  ` +
      `duplicates ${checks.duplicateCycles} (order names twice: ${checks.duplicateOrderNames})  cpu/contract net of the API (estimate): svc ${net.svcUs ?? '?'} µs, postgres ${net.pgUs ?? '?'} µs ` +
      `(with the API load: svc ${gross.svcUs} µs, postgres ${gross.pgUs} µs)`,
  );
  console.log(
    `  committed: ${checks.contractsBilled} contracts billed, ${checks.attemptedEvents} billing.attempted and ${checks.outcomeEvents} outcome events, ` +
      `${checks.outboxRows} outbox rows, ${checks.pending} attempts pending, ${checks.stillDue} contracts still due; ${receivedAtStormEnd} webhooks received by the end`,
  );
  const webhooksAllInS = WEBHOOKS_ON && !timedOut && !drainTimedOut ? Math.round((drainedAt - stormStart) / 100) / 10 : null;
  if (WEBHOOKS_ON) console.log(`  every webhook of the storm received ${webhooksAllInS === null ? 'NOT within the timeout' : `${webhooksAllInS} s after its moment`} (renewals first: deliveries give way while a storm is billed)`);
  console.log(`  batched statements per billed contract (mean batch), API requests included: ${batches}`);
  console.log(`  svc's event-loop delay during the storm: p99 ${lag.p99} ms, max ${lag.max} ms`);
  console.log(`  the outside world's CPU on this machine meanwhile: the webhook receiver ${world.receiverMs} ms, this load generator ${world.generatorMs} ms`);
  const walPerContract = wal0 && wal1 ? { bytes: Math.round((wal1.bytes - wal0.bytes) / billed), commits: Math.round(((wal1.commits - wal0.commits) / billed) * 100) / 100 } : null;
  if (walPerContract) console.log(`  PostgreSQL per billed contract, API requests included: ${walPerContract.bytes} bytes of WAL, ${walPerContract.commits} commits`);
  if (apiLoad) {
    apiRow(`API at ${RATE}/s, the whole run`, apiRun, `  (${Object.entries(apiRun.statuses).map(([s, k]) => `${s}: ${k}`).join(', ')})`);
    const windowRow = (name: string, w: typeof during) =>
      console.log(`${name.padEnd(34)} ${String(w.answers).padStart(6)} answers  p50 ${String(w.p50).padStart(5)} ms  p99 ${String(w.p99).padStart(5)} ms  by method: ${Object.entries(w.byMethod).map(([m, x]) => `${m} p50 ${x.p50} / p99 ${x.p99} ms`).join(', ')}`);
    windowRow('  of it, during the storm', during);
    if (catchUp.answers) windowRow('  of it, while its webhooks catch up', catchUp);
  }

  // The machine's ceiling, svc stopped: the same rows written by PostgreSQL alone, on a second shop's copy.
  await stopChild(svc.child);
  if (workers) await stopChild(workers.child);
  const other = await setShopPlan({ ctx, input: { domain: 'billing-ceiling.myshopify.com', plan: 'enterprise' } });
  const otherRange = await insertStorm(db, other.id, templates.map((c) => c.id), CONTRACTS, 86_400);
  await q(db, 'ANALYZE subscription_contracts');
  const ceilingRate = await ceiling(db, other.id, otherRange);
  const stormRate = counts.done / stormS;
  console.log(`ceiling: PostgreSQL alone writes a renewal's rows in batches of ${CEILING_BATCH} at ${Math.round(ceilingRate)} contracts/s; the storm ran at ${(stormRate / ceilingRate).toFixed(2)} of it`);
  console.log(`load average ${load()} (other work on this machine counts in every figure)`);

  const ok = !timedOut && checks.duplicateCycles === 0 && checks.duplicateOrderNames === 0 && checks.pending === 0 && checks.contractsBilled === CONTRACTS && checks.outboxRows === (WEBHOOKS_ON ? CONTRACTS : 0);
  if (!ok) console.log('warning: the storm did not bill every contract exactly once with its events and outbox rows (see the lines above)');
  if (drainTimedOut) console.log(`warning: not every webhook of the storm arrived within ${TIMEOUT_S} s of its moment`);
  for (const c of cleanups) await c();
  const summary = {
    storm: {
      contracts: CONTRACTS,
      billed: counts.done,
      seconds: Math.round(stormS * 10) / 10,
      perSecond: Math.round(counts.done / stormS),
      finished: !timedOut,
      peakRssMb: rss,
      duplicates: checks.duplicateCycles,
      duplicateOrderNames: checks.duplicateOrderNames,
      pending: checks.pending,
      outcomeEvents: checks.outcomeEvents,
      outboxRows: checks.outboxRows,
      cpuPerContract: net,
      cpuPerContractWithApi: gross,
      walPerContract,
      webhooksAllReceivedS: webhooksAllInS,
      eventLoopDelayMs: lag,
      workersApart: WORKERS_APART,
      workersUnder: WORKERS_UNDER.join(' ') || null,
      ceilingPerS: Math.round(ceilingRate),
      ratioToCeiling: Math.round((stormRate / ceilingRate) * 100) / 100,
    },
    api: { alone: { p50: alone.p50, p99: alone.p99 }, duringStorm: { rps: apiRun.rps, p50: during.p50, p99: during.p99, byMethod: during.byMethod, non2xx: apiRun.non2xx, errors: apiRun.errors }, whileWebhooksCatchUp: catchUp.answers ? { p50: catchUp.p50, p99: catchUp.p99, byMethod: catchUp.byMethod } : null },
    database: where,
    loadAverage: os.loadavg()[0],
  };
  return summary;
}

async function main() {
  const summary: Record<string, unknown> = {};
  if (!ONLY || ONLY.includes('storm')) Object.assign(summary, await stormScenario());
  summary.platform = !ONLY || ONLY.includes('platform') ? await platformScenario() : null;
  console.log(JSON.stringify(summary));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
