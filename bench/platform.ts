/**
 * npm run bench:platform: platform mode (docs/product.md §9) on this machine, against the stand-in of the platform answering
 * at once (its cost buckets out of reach). svc runs as its own process, as `npm start` runs it, on the PostgreSQL of
 * DATABASE_URL (required; in a fresh schema). The stand-in runs in a process of its own (this file with --stand-in),
 * so svc, the platform and the load generator do not share an event loop. Figures:
 * - webhooks accepted per second at POST /webhooks/shopify: signed contract webhooks, each with its own
 *   X-Shopify-Webhook-Id and its own body (svc takes a body it already has for a replay), for BENCH_SECONDS
 *   (default 10) at 50 connections, nothing processing them meanwhile;
 * - webhooks processed per second: BENCH_INBOX (default 5,000) contracts paused on the platform, their webhooks
 *   stored while no worker runs, then an instance with its workers starts; from the first processed to the last
 *   (claim, re-read, apply, mark done), with the CPU each webhook cost svc, the stand-in and PostgreSQL;
 * - the import of BENCH_IMPORT (default 100,000) contracts through a bulk operation: from opening the admin to the
 *   import completed (the stand-in writes the bulk file beforehand, as the platform does on its own machines), and
 *   svc's peak RSS (a fresh process, so the peak is the import's);
 * - pause/resume actions in platform mode against standalone mode in the same run: after BENCH_WARMUP seconds
 *   (default 3) of each, not counted, BENCH_ROUNDS rounds (default 3) of BENCH_ROUND_SECONDS (default 5) standalone
 *   and then platform, with the CPU per action; the ratio is the median of the rounds' (this machine's speed moves
 *   within a minute, and a process measured from its first request shows its warm-up). Then both at a steady 200
 *   per second (open loop) for BENCH_SECONDS: p50 and p99.
 * - contract edits: the platform calls of a committed edit and of a preview, counted by the stand-in (at most 3 and 2);
 * BENCH_ONLY=accept,process,edits,actions,import runs some of them; BENCH_PROFILE=dir writes svc's CPU profiles;
 * BENCH_SVC_LOG=file keeps svc's log (BENCH_TRACE_GC=1 adds V8's GC lines to it; the stand-in's go to the output). The last line printed is one JSON object.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { createWriteStream, readFileSync } from 'node:fs';
import os from 'node:os';
import autocannon from 'autocannon';
import type { Database } from '../src/db/client.js';
import { createServiceContext, systemClock, type ServiceContext } from '../src/services/context.js';
import { generateKey } from '../src/services/generateKey.js';
import { seedContracts } from '../src/services/seedContracts.js';
import { setShopPlan } from '../src/services/shops.js';
import { benchDatabase, buildServer, cpuMs, freePort, mean, median, pauseResumeNext, pauseResumeRequests, peakRssMb, root, steadyRate } from './support.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
/** The actions' comparison: after BENCH_WARMUP seconds of each, BENCH_ROUNDS rounds of BENCH_ROUND_SECONDS each. */
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const ROUND_SECONDS = Number(process.env.BENCH_ROUND_SECONDS ?? 5);
const INBOX = Number(process.env.BENCH_INBOX ?? 5000);
const IMPORT = Number(process.env.BENCH_IMPORT ?? 100_000);
const ACTION_CONTRACTS = 1000;
const CONNECTIONS = 50;
const RATE = 200;
const APP = { key: 'bench-platform-app', secret: 'bench-platform-secret-0123456789' };
const TARGETS = { acceptedPerSec: 1000, processedPerSec: 500, importSeconds: 60, importPeakRssMb: 200, actionsRatio: 0.5, fixedRateP99Ms: 30, editCommitCalls: 3, editPreviewCalls: 2 };

// ---- the stand-in, in its own process ----------------------------------------------------------------------------

type Call = { id: number; method: string; args: unknown[] };
type Reply = { id: number; result?: unknown; error?: string };

/** Runs the stand-in and answers the bench's calls over IPC. */
async function standInProcess(): Promise<void> {
  const { startStandIn, toJsonl } = await import('../test/support/shopify/index.js');
  const { contractPayload } = await import('../test/support/shopify/payloads.js');
  const standIn = await startStandIn({
    appKey: APP.key,
    appSecret: APP.secret,
    // Answering at once: no shop runs out of query cost (the real platform's limits are its own business).
    bucket: { maximumAvailable: 1e12, restoreRate: 1e12 },
    webhookTimeoutMs: 30_000,
    keepLog: false,
  });
  /**
   * The platform writes a bulk operation's file on its own machines while the app polls; the stand-in would write it
   * in its only thread, answering nothing meanwhile (seconds for a large shop), so every poll would time out. Here
   * the file of a large shop is written before svc asks (`prepareBulk`), and the operation completes with it at once.
   */
  const { executeAdmin } = await import('../test/support/shopify/graphql.js');
  const { parse } = await import('graphql');
  const { BULK_CONTRACTS_QUERY } = await import('../src/platform/shopify/documents.js');
  const prepared = new Map<string, { content: string; lines: number; roots: number }>();
  const bulk: { domain: string; completedAt: number }[] = [];
  const runner = standIn.bulk as unknown as { finish(shop: unknown, op: unknown, status: 'COMPLETED', errorCode: null): void };
  const complete = standIn.bulk.complete.bind(standIn.bulk);
  standIn.bulk.complete = async (...args: Parameters<typeof complete>) => {
    const [shop, op, errorCode] = args;
    const ready = prepared.get(shop.domain);
    if (!ready || errorCode || op.query !== BULK_CONTRACTS_QUERY || (op.status !== 'RUNNING' && op.status !== 'CREATED')) {
      await complete(...args);
      bulk.push({ domain: shop.domain, completedAt: Date.now() });
      return;
    }
    prepared.delete(shop.domain);
    const token = randomBytes(12).toString('hex');
    standIn.bulk.files.set(token, ready.content);
    op.objectCount = ready.lines;
    op.rootObjectCount = ready.roots;
    op.fileSize = Buffer.byteLength(ready.content);
    op.url = `${standIn.url}/_standin/bulk/${token}.jsonl`;
    runner.finish(shop, op, 'COMPLETED', null);
    bulk.push({ domain: shop.domain, completedAt: Date.now() });
  };
  const methods: Record<string, (...args: any[]) => unknown> = {
    info: () => ({ url: standIn.url, shopUrlTemplate: standIn.shopUrlTemplate, pid: process.pid }),
    createShop: (domain: string, contracts: number) => {
      standIn.createShop(domain);
      const ids: string[] = [];
      for (let i = 0; i < contracts; i++) ids.push(String(standIn.createContract(domain, {}, { silent: true }).id));
      return ids;
    },
    sessionToken: (domain: string) => standIn.sessionToken(domain),
    payload: (domain: string, id: string) => JSON.stringify(contractPayload(standIn.contract(domain, id))),
    /** Pauses contracts on the platform; their webhooks go out (200 at a time) and are delivered before it returns. */
    pause: async (domain: string, ids: string[]) => {
      for (let i = 0; i < ids.length; i += 200) {
        for (const id of ids.slice(i, i + 200)) standIn.platform.pause(domain, id);
        await standIn.webhooks.flush();
      }
      return ids.length;
    },
    flush: () => standIn.webhooks.flush(),
    /** Writes the shop's bulk file now (the query svc's import runs), for its operation to complete at once. */
    prepareBulk: async (domain: string) => {
      const started = Date.now();
      const result = await executeAdmin(parse(BULK_CONTRACTS_QUERY), {}, undefined, { ...standIn.context(standIn.shop(domain)), bulk: true });
      if (result.errors?.length || !result.data) throw new Error(`the bulk query failed: ${result.errors?.[0]?.message}`);
      const { lines, rootObjectCount } = toJsonl(result.data as Record<string, unknown>);
      prepared.set(domain, { content: `${lines.join('\n')}\n`, lines: lines.length, roots: rootObjectCount });
      return (Date.now() - started) / 1000;
    },
    bulkTimes: () => bulk,
    /** Admin API GraphQL requests the shop has received so far. */
    graphqlCalls: (domain: string) => standIn.graphqlCalls.get(domain) ?? 0,
    /** A variant and a discount code for the edits' scenario. */
    editCatalog: (domain: string) => {
      const variant = standIn.createVariant(domain, { productTitle: 'Oat milk', price: '9.80' });
      standIn.createDiscountCode(domain, 'BENCH10', { percentage: 10 });
      return { variantId: String(variant.id) };
    },
    /** Whether each draft made of the contract was committed. */
    drafts: (domain: string, id: string) => standIn.drafts(domain, id).map((d) => d.committed),
  };
  process.on('message', (m: Call) => {
    Promise.resolve()
      .then(() => methods[m.method](...m.args))
      .then(
        (result) => process.send!({ id: m.id, result } satisfies Reply),
        (err: Error) => process.send!({ id: m.id, error: err.message } satisfies Reply),
      );
  });
  process.on('disconnect', () => void standIn.close().finally(() => process.exit(0)));
  process.send!({ id: 0, result: 'ready' } satisfies Reply);
}

type StandInClient = { child: ChildProcess; call<T>(method: string, ...args: unknown[]): Promise<T>; close(): void };

async function startStandInProcess(): Promise<StandInClient> {
  const profile = process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];
  const gc = process.env.BENCH_TRACE_GC ? ['--trace-gc'] : [];
  // NODE_ENV=production: in development, graphql-js checks every instanceof of its execution against copies of itself
  // from other realms (a guard for development bundles); the platform's GraphQL server is its own, and what it costs
  // here is the stand-in's, not svc's, on the cores they share.
  const child = spawn(process.execPath, [...profile, ...gc, ...(process.env.STANDIN_ARGS?.split(' ').filter(Boolean) ?? []), '--import', 'tsx', 'bench/platform.ts', '--stand-in'], {
    cwd: root,
    env: { ...process.env, NODE_ENV: 'production' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const waiting = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  let next = 1;
  const ready = new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the stand-in exited with ${code}`)));
    child.on('message', (m: Reply) => {
      if (m.id === 0) return resolve();
      const w = waiting.get(m.id);
      waiting.delete(m.id);
      if (m.error !== undefined) w?.reject(new Error(`stand-in: ${m.error}`));
      else w?.resolve(m.result);
    });
  });
  await ready;
  return {
    child,
    call: <T>(method: string, ...args: unknown[]) =>
      new Promise<T>((resolve, reject) => {
        const id = next++;
        waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
        child.send({ id, method, args } satisfies Call);
      }),
    close: () => child.disconnect(),
  };
}

// ---- svc ----------------------------------------------------------------------------------------------------------

/** Every svc process started and not yet gone: stopped at the end, whatever happened. */
const running = new Set<ChildProcess>();

/**
 * svc as `npm start` runs it, on a port chosen here: platform mode needs PUBLIC_URL before it starts, and the
 * platform's webhook subscriptions point there, so every platform-mode process of the run listens on the same port.
 */
async function startSvc(env: NodeJS.ProcessEnv, nodeArgs: string[], port: number): Promise<{ child: ChildProcess; url: string }> {
  const url = `http://127.0.0.1:${port}`;
  const log = process.env.BENCH_SVC_LOG;
  const child = spawn(process.execPath, [...nodeArgs, 'dist/main.js'], { cwd: root, env: { ...process.env, ...env, PORT: String(port) }, stdio: ['ignore', log ? 'pipe' : 'ignore', 'pipe'] });
  if (log) child.stdout!.pipe(createWriteStream(log, { flags: 'a' }));
  running.add(child);
  child.once('exit', () => running.delete(child));
  let exited: Error | null = null;
  child.stderr!.on('data', (b) => process.stderr.write(b));
  child.on('exit', (code) => (exited = new Error(`svc exited with ${code}`)));
  for (let i = 0; i < 300; i++) {
    if (exited) throw exited;
    if (await fetch(`${url}/healthz`).then((r) => r.ok, () => false)) return { child, url };
    await sleep(100);
  }
  child.kill('SIGKILL');
  throw new Error(`svc did not answer on ${url} within 30 s`);
}

async function stopSvc(svc: { child: ChildProcess }): Promise<void> {
  if (svc.child.exitCode !== null) return;
  const exited = new Promise((r) => svc.child.once('exit', r));
  svc.child.kill('SIGTERM');
  await exited;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const rssMb = (pid: number) => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : NaN;
};

async function one<T>(db: Database, sql: string, params: unknown[] = []): Promise<T> {
  return (await db.withSession((q) => q<T & object>(sql, params)))[0] as T;
}

/** Transactions PostgreSQL has ended in this database (its statistics are a second late at most). */
async function transactions(db: Database): Promise<number> {
  const row = await one<{ n: string }>(db, `SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()`);
  return Number(row.n);
}

/** Waits for the shop's import to finish; returns its row. */
async function importDone(db: Database, shopId: string, timeoutMs: number, onTick?: () => void) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    onTick?.();
    const row = await one<{ import_status: string; import_done: number; import_error: string | null; import_finished_at: Date | null } | undefined>(
      db,
      `SELECT import_status, import_done, import_error, import_finished_at FROM platform_installations WHERE shop_id = $1`,
      [shopId],
    );
    if (row?.import_status === 'completed') return { ...row, finishedAt: new Date(row.import_finished_at!).getTime() };
    if (row?.import_status === 'failed') throw new Error(`the import failed: ${row.import_error}`);
    if (Date.now() > deadline) throw new Error(`the import did not finish in ${timeoutMs / 1000} s (${JSON.stringify(row)})`);
    await sleep(100);
  }
}

/** Opens the shop's admin with a session token from the platform: installs the shop (the import goes on after). */
async function openAdmin(db: Database, svcUrl: string, standIn: StandInClient, domain: string): Promise<string> {
  const token = await standIn.call<string>('sessionToken', domain);
  const res = await fetch(`${svcUrl}/admin/api/shop`, { headers: { authorization: `Bearer ${token}` } });
  if (res.status !== 200) throw new Error(`admin /shop answered ${res.status}: ${await res.text()}`);
  return (await one<{ id: string }>(db, `SELECT id::text AS id FROM shops WHERE domain = $1`, [domain])).id;
}

async function pausedAmong(db: Database, shopId: string, ids: string[]): Promise<Set<string>> {
  const rows = await db.withSession((q) =>
    q<{ id: string }>(`SELECT id::text AS id FROM subscription_contracts WHERE shop_id = $1 AND status = 'PAUSED' AND id = ANY($2::bigint[])`, [shopId, ids]),
  );
  return new Set(rows.map((r) => r.id));
}

// ---- the run ------------------------------------------------------------------------------------------------------

async function main() {
  // The bench reads the database while svc runs (the inbox, the import's progress): PostgreSQL only.
  if (!process.env.DATABASE_URL) throw new Error('bench:platform runs on PostgreSQL: set DATABASE_URL, e.g. postgres://postgres@127.0.0.1:5432/test');
  const bench = await benchDatabase();
  const db = bench.db;
  const standIn = await startStandInProcess();
  try {
    console.log(JSON.stringify(await measure(bench, standIn)));
  } finally {
    await Promise.all([...running].map((child) => Promise.race([stopSvc({ child }), sleep(5000)])));
    for (const child of running) child.kill('SIGKILL');
    standIn.close();
    await db.close();
    await bench.cleanup();
  }
}

type Svc = { child: ChildProcess; url: string };
type Setup = {
  bench: Awaited<ReturnType<typeof benchDatabase>>;
  db: Database;
  ctx: ServiceContext;
  standIn: StandInClient;
  standInPid: number;
  nodeArgs: string[];
  port: number;
  common: NodeJS.ProcessEnv;
  platformEnv: NodeJS.ProcessEnv;
};

const ONLY = process.env.BENCH_ONLY?.split(',');
const wanted = (name: 'accept' | 'process' | 'edits' | 'actions' | 'import') => !ONLY || ONLY.includes(name);

async function measure(bench: Awaited<ReturnType<typeof benchDatabase>>, standIn: StandInClient) {
  const db = bench.db;
  const { shopUrlTemplate, pid: standInPid } = await standIn.call<{ url: string; shopUrlTemplate: string; pid: number }>('info');
  const port = await freePort();
  const common = {
    ...bench.env,
    HOST: '127.0.0.1',
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
    RATE_LIMIT_PER_MINUTE: '100000000',
    AUTH_FAILURE_LIMIT_PER_MINUTE: '100000000',
    SHOPIFY_API_KEY: APP.key,
    SHOPIFY_API_SECRET: APP.secret,
  };
  const setup: Setup = {
    bench,
    db,
    ctx: createServiceContext({ db, clock: systemClock, freeUntil: null }),
    standIn,
    standInPid,
    nodeArgs: buildServer([...(process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : []), ...(process.env.BENCH_TRACE_GC ? ['--trace-gc'] : [])]),
    port,
    common,
    platformEnv: {
      ...common,
      PLATFORM: 'shopify',
      TOKEN_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      SHOPIFY_SHOP_URL: shopUrlTemplate,
      SHOPIFY_BILLING_TEST: 'true',
    },
  };
  console.log(`svc on ${bench.where}; the platform's stand-in ${shopUrlTemplate}; node ${process.version}; ${os.cpus().length} cores`);

  let shop: Awaited<ReturnType<typeof installPlatformShop>> | null = null;
  if (wanted('accept') || wanted('process') || wanted('edits') || wanted('actions')) shop = await installPlatformShop(setup);
  const accepted = shop && wanted('accept') ? await acceptWebhooks(setup, shop) : null;
  // Before the instance with workers starts: every Admin API call of the shop meanwhile is then the edits' own.
  const edits = shop && wanted('edits') ? await measureEdits(setup, shop) : null;
  const processed = shop && wanted('process') ? await processWebhooks(setup, shop) : null;
  const actions = shop && wanted('actions') ? await compareActions(setup, shop) : null;
  if (shop) await stopSvc(shop.svc);
  const imported = wanted('import') ? await importLargeShop(setup) : null;

  return {
    database: bench.where === 'PostgreSQL' ? 'postgres' : 'pglite',
    webhooksAcceptedPerSec: accepted?.perSec ?? null,
    webhooksProcessedPerSec: processed?.perSec ?? null,
    processing: processed && { webhooks: processed.webhooks, seconds: processed.seconds, failed: processed.failed, cpuPerWebhookUs: processed.cpu },
    import: imported,
    edits,
    actions: actions && { standalone: actions.standalone, platform: actions.platform, ratio: actions.ratio, cpuPerActionUs: actions.cpu },
    fixedRate: actions && { rate: RATE, platform: actions.fixedPlatform, standalone: actions.fixedStandalone },
    targetsMet: {
      accepted: accepted ? accepted.perSec >= TARGETS.acceptedPerSec : null,
      processed: processed ? processed.perSec >= TARGETS.processedPerSec : null,
      importSeconds: imported ? imported.seconds <= TARGETS.importSeconds : null,
      importRss: imported ? imported.peakRssMb <= TARGETS.importPeakRssMb : null,
      actionsRatio: actions ? actions.ratio >= TARGETS.actionsRatio : null,
      fixedRateP99: actions ? actions.fixedPlatform.p99 <= TARGETS.fixedRateP99Ms : null,
      editCalls: edits ? edits.committedCalls <= TARGETS.editCommitCalls && edits.previewCalls <= TARGETS.editPreviewCalls : null,
    },
  };
}

/** A platform shop of INBOX + ACTION_CONTRACTS contracts, installed in svc (no workers), on Enterprise with a key. */
async function installPlatformShop(s: Setup) {
  const domain = 'bench-platform.myshopify.com';
  const ids = await s.standIn.call<string[]>('createShop', domain, INBOX + ACTION_CONTRACTS);
  const svc = await startSvc({ ...s.platformEnv, SCHEDULER_ENABLED: 'false' }, s.nodeArgs, s.port);
  const shopId = await openAdmin(s.db, svc.url, s.standIn, domain);
  await importDone(s.db, shopId, 300_000);
  // The install set the plan from the shop's app subscriptions (none here): the operator's override gives API access.
  await setShopPlan({ ctx: s.ctx, input: { domain, plan: 'enterprise' } });
  const key = (await generateKey({ ctx: s.ctx, input: { shopId, name: 'bench' } })).secret;
  console.log(`installed ${domain}: ${ids.length} contracts imported`);
  return { domain, shopId, ids, svc: svc as Svc, auth: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } };
}

/**
 * 1. Webhooks accepted: signed bodies of real contracts, a new webhook id and a body of its own each (a field the
 * platform does not send, which svc ignores: a body svc has already received is a duplicate, not stored again);
 * nothing processes them meanwhile.
 */
async function acceptWebhooks(s: Setup, shop: Awaited<ReturnType<typeof installPlatformShop>>) {
  const samples = await Promise.all(shop.ids.slice(0, 100).map((id) => s.standIn.call<string>('payload', shop.domain, id)));
  let sent = 0;
  const r = await autocannon({
    url: `${shop.svc.url}/webhooks/shopify`,
    connections: CONNECTIONS,
    duration: SECONDS,
    requests: [
      {
        method: 'POST',
        setupRequest: (req: any) => {
          const sample = samples[Math.floor(Math.random() * samples.length)];
          const body = `${sample.slice(0, -1)},"bench_delivery":${++sent}}`;
          return {
            ...req,
            body,
            headers: {
              'content-type': 'application/json',
              'x-shopify-topic': 'subscription_contracts/update',
              'x-shopify-shop-domain': shop.domain,
              'x-shopify-api-version': '2026-10',
              'x-shopify-hmac-sha256': createHmac('sha256', APP.secret).update(body, 'utf8').digest('base64'),
              'x-shopify-webhook-id': randomUUID(),
              'x-shopify-triggered-at': new Date().toISOString(),
            },
          };
        },
      },
    ],
  });
  const perSec = Math.round(r['2xx'] / r.duration);
  const stored = await one<{ n: number }>(s.db, `SELECT count(*)::int AS n FROM platform_webhooks WHERE shop_domain = $1`, [shop.domain]);
  console.log(
    `webhooks accepted: ${r['2xx']} in ${r.duration.toFixed(1)} s → ${perSec}/s (p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms; non-2xx ${r.non2xx}, errors ${r.errors + r.timeouts}; ${stored.n} stored)`,
  );
  await s.db.withSession((q) => q(`DELETE FROM platform_webhooks`));
  return { perSec };
}

/**
 * 2. Webhooks processed: INBOX contracts paused on the platform, their webhooks stored while no worker runs; then an
 * instance with its workers starts (it goes on serving the actions after).
 */
async function processWebhooks(s: Setup, shop: Awaited<ReturnType<typeof installPlatformShop>>) {
  const inboxIds = shop.ids.slice(0, INBOX);
  await s.standIn.call('pause', shop.domain, inboxIds);
  const backlog = await one<{ n: number }>(s.db, `SELECT count(*)::int AS n FROM platform_webhooks WHERE processed_at IS NULL`);
  await stopSvc(shop.svc);
  // The reconciliation sweep that runs when an instance starts would re-read the same contracts: it is pointed past
  // them, so the figure is the inbox's alone.
  await s.db.withSession((q) => q(`UPDATE platform_installations SET synced_until = now() + interval '1 hour'`));
  const pgBefore = cpuMs({ name: 'postgres' });
  const standInBefore = cpuMs({ pid: s.standInPid });
  shop.svc = await startSvc(s.platformEnv, s.nodeArgs, s.port);
  const svcBefore = cpuMs({ pid: shop.svc.child.pid! });
  const deadline = Date.now() + 600_000;
  let left = backlog.n;
  while (left > 0 && Date.now() < deadline) {
    await sleep(100);
    left = (await one<{ n: number }>(s.db, `SELECT count(*)::int AS n FROM platform_webhooks WHERE processed_at IS NULL`)).n;
  }
  const svcCpu = cpuMs({ pid: shop.svc.child.pid! }) - svcBefore;
  const span = await one<{ first: Date; last: Date; n: number; failed: number }>(
    s.db,
    `SELECT min(processed_at) AS first, max(processed_at) AS last, count(*)::int AS n, count(*) FILTER (WHERE last_error IS NOT NULL)::int AS failed FROM platform_webhooks`,
  );
  const seconds = (new Date(span.last).getTime() - new Date(span.first).getTime()) / 1000;
  const perSec = Math.round(span.n / seconds);
  const per = (ms: number) => Math.round((ms * 1000) / span.n);
  const cpu = { svc: per(svcCpu), standIn: per(cpuMs({ pid: s.standInPid }) - standInBefore), postgres: per(cpuMs({ name: 'postgres' }) - pgBefore) };
  const applied = await one<{ n: number }>(
    s.db,
    `SELECT count(*)::int AS n FROM subscription_contracts WHERE shop_id = $1 AND status = 'PAUSED' AND id = ANY($2::bigint[])`,
    [shop.shopId, inboxIds],
  );
  console.log(
    `webhooks processed: ${span.n} of ${backlog.n} in ${seconds.toFixed(2)} s → ${perSec}/s (${span.failed} with an error; ${applied.n} contracts paused in the mirror); ` +
      `wall ${Math.round((seconds * 1e6) / span.n)} µs/webhook, cpu/webhook: svc ${cpu.svc} µs, platform ${cpu.standIn} µs, postgres ${cpu.postgres} µs`,
  );
  return { perSec, webhooks: span.n, seconds, failed: span.failed, cpu };
}

/**
 * 5. Contract edits in platform mode: how many calls svc makes to the platform for one edit of four or five
 * operations (a quantity, a line with its price, the frequency, a discount code; from the second round the code's
 * removal first), previewed and committed, counted by the platform's stand-in (no worker runs meanwhile, so no other
 * call of svc's is counted); EDIT_ROUNDS times each, with the median time. Then one edit that adds a line without a
 * price (its variant's price is read alongside the draft's creation). The commits' webhooks are cleared after, so
 * the inbox's figure is its own.
 */
const EDIT_ROUNDS = 10;
async function measureEdits(s: Setup, shop: Awaited<ReturnType<typeof installPlatformShop>>) {
  const { variantId } = await s.standIn.call<{ variantId: string }>('editCatalog', shop.domain);
  const id = shop.ids[shop.ids.length - 1];
  const url = `${shop.svc.url}/api/v1/subscription-contracts/${id}`;
  const lineId = ((await (await fetch(url, { headers: shop.auth })).json()) as { contract: { lines: { id: string }[] } }).contract.lines[0].id;
  const calls = () => s.standIn.call<number>('graphqlCalls', shop.domain);
  const post = async (body: object) => {
    const before = await calls();
    const started = performance.now();
    const res = await fetch(`${url}/edits`, { method: 'POST', headers: shop.auth, body: JSON.stringify(body) });
    const ms = performance.now() - started;
    if (res.status !== 200) throw new Error(`an edit answered ${res.status}: ${await res.text()}`);
    return { calls: (await calls()) - before, ms };
  };
  const operations = (i: number) => [
    { op: 'set_quantity', lineId, quantity: 2 + (i % 5) },
    { op: 'add_line', variantId, quantity: 1, price: '9.80' },
    { op: 'set_frequency', interval: i % 2 ? 'WEEK' : 'MONTH', intervalCount: 2 },
    { op: 'apply_discount_code', code: 'BENCH10' },
  ];
  const preview: { calls: number; ms: number }[] = [];
  const committed: { calls: number; ms: number }[] = [];
  for (let i = 0; i < EDIT_ROUNDS; i++) {
    // The code applied by the previous round is taken off first, so each round applies it again.
    const current = ((await (await fetch(url, { headers: shop.auth })).json()) as { contract: { discounts: { id: string }[] } }).contract.discounts;
    const ops = [...current.map((d) => ({ op: 'remove_discount', discountId: d.id })), ...operations(i)];
    preview.push(await post({ preview: true, operations: ops }));
    committed.push(await post({ operations: ops }));
  }
  const unpriced = await post({ operations: [{ op: 'add_line', variantId, quantity: 1 }] });
  const drafts = await s.standIn.call<boolean[]>('drafts', shop.domain, id);
  await s.standIn.call('flush');
  await s.db.withSession((q) => q(`DELETE FROM platform_webhooks`));
  const result = {
    committedCalls: Math.max(...committed.map((r) => r.calls)),
    previewCalls: Math.max(...preview.map((r) => r.calls)),
    unpricedCommittedCalls: unpriced.calls,
    committedMedianMs: Math.round(median(committed.map((r) => r.ms)) * 10) / 10,
    previewMedianMs: Math.round(median(preview.map((r) => r.ms)) * 10) / 10,
    draftsCommitted: drafts.filter(Boolean).length,
    draftsLeftUncommitted: drafts.filter((c) => !c).length,
  };
  console.log(
    `edits (4–5 operations): committed ${result.committedCalls} platform calls (median ${result.committedMedianMs} ms), preview ${result.previewCalls} calls (median ${result.previewMedianMs} ms); ` +
      `a line added without a price: ${result.unpricedCommittedCalls} calls; drafts committed ${result.draftsCommitted}, left uncommitted ${result.draftsLeftUncommitted}`,
  );
  return result;
}

/**
 * 4. Pause/resume in platform mode (the shop's instance, its workers processing the platform's echoes) against
 * standalone mode (a shop of svc's own contracts, its own instance), alternating; then both at a steady 200/s.
 */
async function compareActions(s: Setup, shop: Awaited<ReturnType<typeof installPlatformShop>>) {
  if (shop.svc.child.exitCode !== null || !wanted('process')) {
    await stopSvc(shop.svc);
    shop.svc = await startSvc(s.platformEnv, s.nodeArgs, s.port);
  }
  const standaloneShop = await setShopPlan({ ctx: s.ctx, input: { domain: 'bench-standalone.myshopify.com', plan: 'enterprise' } });
  const standaloneKey = (await generateKey({ ctx: s.ctx, input: { shopId: standaloneShop.id, name: 'bench' } })).secret;
  const standaloneIds = (await seedContracts({ ctx: s.ctx, input: { shopId: standaloneShop.id, count: ACTION_CONTRACTS } })).map((c) => c.id);
  const standaloneAuth = { authorization: `Bearer ${standaloneKey}`, 'content-type': 'application/json' };
  const standalone = await startSvc(s.common, s.nodeArgs, await freePort());
  const actionIds = shop.ids.slice(INBOX);
  /** One autocannon run of pause/resume, with the CPU each action cost svc, the platform and PostgreSQL. */
  const run = async (target: Svc, auth: Record<string, string>, shopId: string, ids: string[], seconds = ROUND_SECONDS) => {
    const paused = await pausedAmong(s.db, shopId, ids);
    const xactsBefore = await transactions(s.db);
    const before = { svc: cpuMs({ pid: target.child.pid! }), standIn: cpuMs({ pid: s.standInPid }), postgres: cpuMs({ name: 'postgres' }) };
    const statuses: Record<number, number> = {};
    const r = await autocannon({ url: target.url, connections: CONNECTIONS, duration: seconds, headers: auth, requests: [pauseResumeRequests(ids, { paused, statuses })] });
    const us = (ms: number) => Math.round((ms * 1000) / (r.requests.total || 1));
    const cpu = { svc: us(cpuMs({ pid: target.child.pid! }) - before.svc), standIn: us(cpuMs({ pid: s.standInPid }) - before.standIn), postgres: us(cpuMs({ name: 'postgres' }) - before.postgres) };
    // Statements (each its own transaction, or one transaction of several) PostgreSQL ran per action, all of svc's.
    await sleep(1100);
    const xacts = Math.round((((await transactions(s.db)) - xactsBefore) / (r.requests.total || 1)) * 100) / 100;
    return { rps: r.requests.average, p99: r.latency.p99, non2xx: r.non2xx, statuses, cpu, xacts };
  };
  const runs = { standalone: [] as Awaited<ReturnType<typeof run>>[], platform: [] as Awaited<ReturnType<typeof run>>[] };
  if (WARMUP > 0) {
    await run(standalone, standaloneAuth, standaloneShop.id, standaloneIds, WARMUP);
    await run(shop.svc, shop.auth, shop.shopId, actionIds, WARMUP);
  }
  for (let i = 0; i < ROUNDS; i++) {
    const a = await run(standalone, standaloneAuth, standaloneShop.id, standaloneIds);
    const b = await run(shop.svc, shop.auth, shop.shopId, actionIds);
    runs.standalone.push(a);
    runs.platform.push(b);
    console.log(
      `actions/s standalone ${Math.round(a.rps)} (p99 ${a.p99} ms, statuses ${JSON.stringify(a.statuses)}; cpu/action svc ${a.cpu.svc} µs, postgres ${a.cpu.postgres} µs; ${a.xacts} transactions/action), ` +
        `platform ${Math.round(b.rps)} (p99 ${b.p99} ms, statuses ${JSON.stringify(b.statuses)}; cpu/action svc ${b.cpu.svc} µs, platform ${b.cpu.standIn} µs, postgres ${b.cpu.postgres} µs; ${b.xacts} transactions/action)`,
    );
  }
  console.log(`actions ratio ${median(runs.platform.map((r, i) => r.rps / runs.standalone[i].rps)).toFixed(3)} (rounds: ${runs.platform.map((r, i) => (r.rps / runs.standalone[i].rps).toFixed(3)).join(', ')})`);
  await s.standIn.call('flush');
  const pickAction = () => actionIds[Math.floor(Math.random() * actionIds.length)];
  const fixedPlatform = await steadyRate({ rate: RATE, seconds: SECONDS, connections: CONNECTIONS, headers: shop.auth, next: pauseResumeNext(shop.svc.url, pickAction, await pausedAmong(s.db, shop.shopId, actionIds)) });
  console.log(`platform actions at ${RATE}/s: p50 ${fixedPlatform.p50} ms, p99 ${fixedPlatform.p99} ms (statuses ${JSON.stringify(fixedPlatform.statuses)}, errors ${fixedPlatform.errors})`);
  const pickStandalone = () => standaloneIds[Math.floor(Math.random() * standaloneIds.length)];
  const fixedStandalone = await steadyRate({ rate: RATE, seconds: SECONDS, connections: CONNECTIONS, headers: standaloneAuth, next: pauseResumeNext(standalone.url, pickStandalone, await pausedAmong(s.db, standaloneShop.id, standaloneIds)) });
  console.log(`standalone actions at ${RATE}/s: p50 ${fixedStandalone.p50} ms, p99 ${fixedStandalone.p99} ms (statuses ${JSON.stringify(fixedStandalone.statuses)}, errors ${fixedStandalone.errors})`);
  await s.standIn.call('flush');
  await stopSvc(standalone);
  const avg = (xs: Awaited<ReturnType<typeof run>>[], f: (r: Awaited<ReturnType<typeof run>>) => number) => Math.round(mean(xs.map(f)));
  return {
    standalone: avg(runs.standalone, (r) => r.rps),
    platform: avg(runs.platform, (r) => r.rps),
    ratio: Math.round(median(runs.platform.map((r, i) => r.rps / runs.standalone[i].rps)) * 1000) / 1000,
    cpu: {
      standalone: { svc: avg(runs.standalone, (r) => r.cpu.svc), postgres: avg(runs.standalone, (r) => r.cpu.postgres) },
      platform: { svc: avg(runs.platform, (r) => r.cpu.svc), standIn: avg(runs.platform, (r) => r.cpu.standIn), postgres: avg(runs.platform, (r) => r.cpu.postgres) },
    },
    fixedPlatform: { p50: fixedPlatform.p50, p99: fixedPlatform.p99, non2xx: fixedPlatform.non2xx },
    fixedStandalone: { p50: fixedStandalone.p50, p99: fixedStandalone.p99, non2xx: fixedStandalone.non2xx },
  };
}

/** 3. The import of a large shop through a bulk operation, in a fresh process (its peak RSS is the import's). */
async function importLargeShop(s: Setup) {
  const domain = 'bench-import.myshopify.com';
  await s.standIn.call('createShop', domain, IMPORT);
  const platformSeconds = await s.standIn.call<number>('prepareBulk', domain);
  const svc = await startSvc({ ...s.platformEnv, SCHEDULER_ENABLED: 'false' }, s.nodeArgs, s.port);
  const pid = svc.child.pid!;
  let sampledPeak = rssMb(pid);
  const sample = () => (sampledPeak = Math.max(sampledPeak, rssMb(pid)));
  const started = Date.now();
  const shopId = await openAdmin(s.db, svc.url, s.standIn, domain);
  // An import that fails is taken up again when the merchant opens the app (or by the next reconciliation round),
  // from where it stopped: that is done here at once, and every failure is reported.
  const errors: string[] = [];
  let done: Awaited<ReturnType<typeof importDone>> | null = null;
  while (!done) {
    try {
      done = await importDone(s.db, shopId, 900_000, sample);
    } catch (err) {
      errors.push((err as Error).message);
      console.log(`import attempt ${errors.length} failed: ${(err as Error).message}`);
      if (errors.length >= 3) throw err;
      await openAdmin(s.db, svc.url, s.standIn, domain);
      for (let i = 0; i < 100; i++) {
        const row = await one<{ import_status: string }>(s.db, `SELECT import_status FROM platform_installations WHERE shop_id = $1`, [shopId]);
        if (row.import_status !== 'failed') break;
        await sleep(100);
      }
    }
  }
  const seconds = (Date.now() - started) / 1000;
  const peak = Math.max(sampledPeak, peakRssMb(pid));
  const completedAt = (await s.standIn.call<{ domain: string; completedAt: number }[]>('bulkTimes')).findLast((b) => b.domain === domain)?.completedAt;
  // svc's own share: from the bulk operation completed (its file ready) to the import done.
  const readSeconds = completedAt ? (done.finishedAt - completedAt) / 1000 : NaN;
  const imported = await one<{ n: number }>(s.db, `SELECT count(*)::int AS n FROM subscription_contracts WHERE shop_id = $1`, [shopId]);
  console.log(
    `import of ${IMPORT}: completed in ${seconds.toFixed(1)} s (${done.import_done} imported, ${imported.n} in the mirror; ${readSeconds.toFixed(1)} s of it reading the bulk file; the stand-in took ${platformSeconds.toFixed(1)} s to write that file, beforehand), svc peak RSS ${peak} MB`,
  );
  await stopSvc(svc);
  return {
    contracts: imported.n,
    seconds: Math.round(seconds * 10) / 10,
    bulkFileReadSeconds: Math.round(readSeconds * 10) / 10,
    peakRssMb: peak,
    attempts: errors.length + 1,
    errors,
  };
}

if (process.argv.includes('--stand-in')) {
  standInProcess().catch((err) => {
    console.error(err);
    process.exit(1);
  });
} else {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
