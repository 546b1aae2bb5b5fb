/**
 * npm run bench:bulk: bulk jobs at scale on this machine. svc runs as its own process, as `npm start` runs it, on
 * PostgreSQL when DATABASE_URL is set (in a fresh schema; the recommended deployment), else on a fresh embedded
 * database.
 *
 * BENCH_BULK_CONTRACTS (default 100,000) ACTIVE contracts of one shop, written by one INSERT … SELECT, each with one
 * line of the same variant. Then, with the API under a steady, open-loop load of 200 requests per second (half GETs
 * of the job's contracts, half pause/resume actions on other contracts of the shop), first alone for comparison:
 * - a preview of `set_price` on that variant over every one of them (by filter): from the POST to `previewed`;
 * - a pause of every one of them (by their ids, the 2 MiB body): from the POST to `completed`;
 * - svc's peak RSS over the run, the API's p50/p99 during each job, and the contracts changed twice by a job (events of
 *   the job per contract above one: must be 0), and whether the preview changed anything;
 * - the machine's ceiling: on a second shop's copy of the same contracts, the rate at which PostgreSQL alone writes
 *   what the pause wrote (each contract's row, its event, its item's outcome) in batches of the worker's size with no
 *   svc in between; the job's rate as a ratio of it, so that two machines' figures compare;
 * - platform mode (bench/bulkPlatform.ts): BENCH_BULK_PLATFORM_CONTRACTS (default 5,000) contracts paused by one job
 *   against the platform's stand-in with a real cost bucket: the share of its restore rate used, THROTTLED failures,
 *   duplicates (0 to skip it).
 * One line per row; the last line printed is one JSON object.
 */
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import type { Database } from '../src/db/client.js';
import { createServiceContext, systemClock } from '../src/services/context.js';
import { generateKey } from '../src/services/generateKey.js';
import { seedContracts } from '../src/services/seedContracts.js';
import { setShopPlan } from '../src/services/shops.js';
import { bulkPlatformScenario, type BulkPlatformResult } from './bulkPlatform.js';
import { benchDatabase, buildServer, cpuMs, latencyWindow, pauseResumeNext, peakRssMb, startChild, steadyRate, stopChild, type SteadyRequest, type SteadyResult } from './support.js';

const CONTRACTS = Number(process.env.BENCH_BULK_CONTRACTS ?? 100_000);
const TIMEOUT_S = Number(process.env.BENCH_BULK_TIMEOUT ?? 600);
const API_SECONDS = Number(process.env.BENCH_API_SECONDS ?? 5);
const RATE = 200;
const CONNECTIONS = 50;
const ACTION_CONTRACTS = 2000;
/** The worker's standalone batch (workers/bulkJobs.ts): the ceiling writes in batches of the same size. */
const CEILING_BATCH = 100;
const PLATFORM_CONTRACTS = Number(process.env.BENCH_BULK_PLATFORM_CONTRACTS ?? 5000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const q = <T>(db: Database, text: string, params: unknown[] = []) => db.withSession((run) => run(text, params)) as Promise<T[]>;

/** `count` ACTIVE contracts of the shop, copies of one template with its lines set to one line of `variantId`. Their ids. */
async function insertContracts(db: Database, shopId: string, templateId: string, variantId: string, count: number): Promise<string[]> {
  const rows = await q<{ id: string }>(
    db,
    `WITH t AS (SELECT * FROM subscription_contracts WHERE id = $2::bigint)
     INSERT INTO subscription_contracts (shop_id, status, customer_id, customer_email, billing_interval, billing_interval_count,
       delivery_interval, delivery_interval_count, next_billing_date, lines, shipping_address, delivery_price, discounts, totals,
       created_at, updated_at)
     SELECT $1::bigint, 'ACTIVE', (7000000 + i)::text, format('bulk%s@example.com', i), t.billing_interval, t.billing_interval_count,
       t.delivery_interval, t.delivery_interval_count, now() + interval '20 days' + i * interval '1 second',
       json_build_array(json_build_object('id', gen_random_uuid(), 'title', 'Coffee 1kg', 'variantId', $4::text, 'quantity', 2,
         'price', json_build_object('amount', '24.00', 'currencyCode', 'EUR'))),
       t.shipping_address, NULL, '[]'::json,
       json_build_object('subtotal', '48.00', 'discounts', '0.00', 'shipping', '0.00', 'total', '48.00', 'currencyCode', 'EUR'),
       t.created_at, t.created_at
       FROM generate_series(1, $3::int) AS i, t
     RETURNING id::text AS id`,
    [shopId, templateId, count, variantId],
  );
  return rows.map((r) => r.id);
}

/**
 * The ceiling: PostgreSQL alone writing what a bulk pause writes, batch by batch, one transaction each: the contracts'
 * rows, one event each, and the items' outcomes naming them. Answers contracts per second.
 */
async function ceiling(db: Database, shopId: string, ids: string[]): Promise<number> {
  const jobId = randomUUID();
  await q(db, `INSERT INTO bulk_jobs (id, shop_id, status, preview, selector, change, created_by, matched, created_at, started_at)
               VALUES ($1, $2, 'running', false, '{"contractIds":{"count":0}}', '{"action":"pause"}', '{"type":"admin"}', $3, now(), now())`, [jobId, shopId, ids.length]);
  await q(db, `INSERT INTO bulk_job_items (job_id, contract_id) SELECT $1, unnest($2::bigint[])`, [jobId, ids]);
  const started = performance.now();
  for (let i = 0; i < ids.length; i += CEILING_BATCH) {
    const batch = ids.slice(i, i + CEILING_BATCH);
    await db.transaction(async (run) => {
      await run(
        `WITH c AS (SELECT id FROM subscription_contracts WHERE id = ANY ($1::bigint[]) ORDER BY id FOR UPDATE),
         u AS (UPDATE subscription_contracts s SET status = 'PAUSED', paused_at = now(), updated_at = now()
                 FROM c WHERE s.id = c.id RETURNING s.id, s.shop_id),
         e AS (INSERT INTO contract_events (contract_id, shop_id, type, at, actor_type, actor_id, from_status, to_status, data)
                 SELECT id, shop_id, 'contract.paused', now(), 'bulk_job', $2, 'ACTIVE', 'PAUSED', '{}' FROM u RETURNING id, contract_id)
         UPDATE bulk_job_items i SET status = 'succeeded', event_id = e.id FROM e WHERE i.job_id = $3 AND i.contract_id = e.contract_id`,
        [batch, jobId, jobId],
      );
    });
  }
  return ids.length / ((performance.now() - started) / 1000);
}

type Job = { id: string; status: string; counts: Record<string, number>; totals: { currencyCode: string; before: string; after: string }[] };

async function main(): Promise<void> {
  const cleanups: (() => Promise<void> | void)[] = [];
  const bench = await benchDatabase();
  cleanups.push(() => bench.cleanup());
  const { db, where } = bench;
  const ctx = createServiceContext({ db, clock: systemClock, freeUntil: null });
  const shop = await setShopPlan({ ctx, input: { domain: 'bulk-bench.myshopify.com', plan: 'enterprise' } });
  const { secret } = await generateKey({ ctx, input: { shopId: shop.id, name: 'bench' } });
  const [template] = await seedContracts({ ctx, input: { shopId: shop.id, count: 1 } });
  const actionIds = (await seedContracts({ ctx, input: { shopId: shop.id, count: ACTION_CONTRACTS } })).map((c) => c.id);
  const VARIANT = '880001';
  let t0 = performance.now();
  const ids = await insertContracts(db, shop.id, template.id, VARIANT, CONTRACTS);
  await q(db, 'ANALYZE subscription_contracts');
  console.log(`seeded ${CONTRACTS} contracts in ${Math.round(performance.now() - t0)} ms (one INSERT … SELECT), each with one line of variant ${VARIANT}`);

  const env: NodeJS.ProcessEnv = {
    ...bench.env,
    HOST: '127.0.0.1',
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
    // The benchmark measures the jobs and latency, not the limiter: raised for this run only.
    RATE_LIMIT_PER_MINUTE: '100000000',
    AUTH_FAILURE_LIMIT_PER_MINUTE: '100000000',
  };
  const svc = await startChild('dist/main.js', env, buildServer());
  cleanups.unshift(() => stopChild(svc.child));
  const pid = svc.child.pid!;
  const load = () => os.loadavg().map((x) => x.toFixed(1)).join(' ');
  console.log(`svc ${svc.url} on ${where}; node ${process.version}; ${os.cpus().length} cores; load average ${load()}`);

  const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
  const paused = new Set<string>();
  const act = pauseResumeNext(svc.url, () => actionIds[Math.floor(Math.random() * actionIds.length)], paused);
  let n = 0;
  const mixed = (): SteadyRequest => (n++ % 2 ? act() : { method: 'GET', url: `${svc.url}/api/v1/subscription-contracts/${ids[Math.floor(Math.random() * ids.length)]}` });
  const api = (path: string, init: RequestInit = {}) => fetch(`${svc.url}${path}`, { ...init, headers: { ...headers, ...(init.headers ?? {}) } });
  const job = async (id: string): Promise<Job> => ((await (await api(`/api/v1/bulk-jobs/${id}`)).json()) as { bulkJob: Job }).bulkJob;

  const alone = await steadyRate({ rate: RATE, seconds: API_SECONDS, connections: CONNECTIONS, headers, next: mixed });
  console.log(`API at ${RATE}/s alone: p50 ${alone.p50} ms  p99 ${alone.p99} ms  non-2xx ${alone.non2xx}`);

  /** Runs a job from its POST to one of `ends`, with the API's load meanwhile: the seconds, the job, the API's window. */
  const timed = async (body: unknown, ends: string[], then?: (j: Job) => Promise<void>) => {
    let done = false;
    let loadFrom = 0;
    const apiLoad = steadyRate({ rate: RATE, seconds: TIMEOUT_S + 10, connections: CONNECTIONS, headers, next: mixed, until: () => done, onStart: () => (loadFrom = performance.now()) });
    await sleep(1100);
    const svcCpu0 = cpuMs({ pid });
    const pgCpu0 = cpuMs({ name: 'postgres' });
    const started = performance.now();
    const res = await api('/api/v1/bulk-jobs', { method: 'POST', body: JSON.stringify(body) });
    if (res.status !== 201) throw new Error(`creating the job: ${res.status} ${await res.text()}`);
    let j = ((await res.json()) as { bulkJob: Job }).bulkJob;
    let last = started;
    for (;;) {
      j = await job(j.id);
      if (ends.includes(j.status)) break;
      if (then && j.status === 'previewed') {
        await then(j);
        then = undefined;
        continue;
      }
      if (performance.now() - started > TIMEOUT_S * 1000) throw new Error(`the job did not end within ${TIMEOUT_S} s: ${JSON.stringify(j)}`);
      if (performance.now() - last > 10_000) {
        last = performance.now();
        console.log(`  ${((last - started) / 1000).toFixed(0).padStart(4)} s: ${j.status} ${JSON.stringify(j.counts)}  svc rss ${peakRssMb(pid)} MB peak`);
      }
      await sleep(200);
    }
    const seconds = (performance.now() - started) / 1000;
    const cpu = { svcUs: Math.round(((cpuMs({ pid }) - svcCpu0) * 1000) / CONTRACTS), pgUs: Math.round(((cpuMs({ name: 'postgres' }) - pgCpu0) * 1000) / CONTRACTS) };
    done = true;
    const run: SteadyResult = await apiLoad;
    const during = latencyWindow(run.samples, started - loadFrom, performance.now() - loadFrom);
    return { seconds, job: j, during, cpu };
  };

  // 1. A preview of a price rise over every contract: nothing changes.
  const preview = await timed({ selector: { filter: { variantId: VARIANT } }, change: { operations: [{ op: 'set_price', variantId: VARIANT, price: '26.00' }] }, preview: true }, ['previewed', 'failed']);
  const changedByPreview = Number(
    (await q<{ n: string }>(db, `SELECT count(*)::text AS n FROM contract_events WHERE shop_id = $1 AND actor_type = 'bulk_job'`, [shop.id]))[0].n,
  );
  console.log(
    `preview of set_price over ${CONTRACTS}: ${preview.seconds.toFixed(1)} s (${Math.round(CONTRACTS / preview.seconds)}/s)  ${JSON.stringify(preview.job.counts)}  totals ${JSON.stringify(preview.job.totals)}  ` +
      `events of the job ${changedByPreview}  API p50 ${preview.during.p50} / p99 ${preview.during.p99} ms  cpu/contract svc ${preview.cpu.svcUs} µs, postgres ${preview.cpu.pgUs} µs`,
  );
  await api(`/api/v1/bulk-jobs/${preview.job.id}/cancel`, { method: 'POST' });

  // 2. A pause of every contract, by id.
  const pause = await timed({ selector: { contractIds: ids }, change: { action: 'pause' } }, ['completed', 'failed', 'cancelled']);
  const [twice] = await q<{ n: string }>(
    db,
    `SELECT count(*)::text AS n FROM (SELECT contract_id FROM contract_events WHERE actor_type = 'bulk_job' AND actor_id = $1 GROUP BY contract_id HAVING count(*) > 1) d`,
    [pause.job.id],
  );
  const pauseRate = CONTRACTS / pause.seconds;
  console.log(
    `pause of ${CONTRACTS}: ${pause.seconds.toFixed(1)} s (${Math.round(pauseRate)}/s)  ${JSON.stringify(pause.job.counts)}  changed twice ${twice.n}  ` +
      `API p50 ${pause.during.p50} / p99 ${pause.during.p99} ms (${pause.during.answers} answers)  cpu/contract svc ${pause.cpu.svcUs} µs, postgres ${pause.cpu.pgUs} µs`,
  );
  const rss = peakRssMb(pid);
  await stopChild(svc.child);
  cleanups.shift();

  // 3. The machine's ceiling, svc stopped: the same writes on a second shop's copy of the contracts.
  const other = await setShopPlan({ ctx, input: { domain: 'bulk-ceiling.myshopify.com', plan: 'enterprise' } });
  t0 = performance.now();
  const otherIds = await insertContracts(db, other.id, template.id, VARIANT, CONTRACTS);
  await q(db, 'ANALYZE subscription_contracts');
  const ceilingRate = await ceiling(db, other.id, otherIds);
  console.log(`ceiling: PostgreSQL alone writes the pause's rows in batches of ${CEILING_BATCH} at ${Math.round(ceilingRate)} contracts/s; the job ran at ${(pauseRate / ceilingRate).toFixed(2)} of it`);
  console.log(`svc peak rss ${rss} MB; load average ${load()} (other work on this machine counts in every figure)`);

  for (const c of cleanups) await c();

  // 4. Platform mode, against the stand-in's cost bucket.
  let platform: BulkPlatformResult | null = null;
  if (PLATFORM_CONTRACTS > 0) {
    platform = await bulkPlatformScenario({ contracts: PLATFORM_CONTRACTS });
    console.log(
      `platform: pause of ${platform.paused}/${platform.contracts} in ${platform.seconds} s  bucket use ${platform.bucketUseRatio} of its restore rate ` +
        `(${platform.pointsPerSecond} points/s)  THROTTLED failures ${platform.throttledFailures} (answers met and retried: ${platform.throttledAnswers})  ` +
        `failed ${platform.failed}  duplicates ${platform.duplicates}`,
    );
  }
  console.log(
    JSON.stringify({
      bench: 'bulk',
      where,
      node: process.version,
      contracts: CONTRACTS,
      previewSetPriceS: Math.round(preview.seconds * 10) / 10,
      previewChangedEvents: changedByPreview,
      pauseS: Math.round(pause.seconds * 10) / 10,
      pausePerS: Math.round(pauseRate),
      changedTwice: Number(twice.n),
      counts: pause.job.counts,
      peakRssMb: rss,
      apiAloneP99Ms: alone.p99,
      apiP99MsDuringPreview: preview.during.p99,
      apiP99MsDuringPause: pause.during.p99,
      cpuPerContractUs: { preview: preview.cpu, pause: pause.cpu },
      ceilingPerS: Math.round(ceilingRate),
      ratioToCeiling: Math.round((pauseRate / ceilingRate) * 100) / 100,
      platform,
    }),
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
