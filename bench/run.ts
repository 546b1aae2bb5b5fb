/**
 * npm run bench: svc against a bare Fastify baseline on this machine (the performance targets live here, never
 * in a timed test). Starts svc as a child process on PostgreSQL when DATABASE_URL is set (in a fresh schema), else on
 * a fresh embedded database; seeds a shop, a key and 2,000 contracts; then runs each scenario at 50 connections in
 * BENCH_ROUNDS rounds (default 3) of BENCH_SECONDS each (default 4), each round a baseline run of the scenario's method
 * and then the scenario, and gives the median of the rounds' ratios: this machine's speed moves by tens of percent
 * within minutes (other tenants), and the baseline (a bare echo) moves more than svc does, so one pair of runs can
 * land on two different machines; three short pairs, alternating, see the same ones. Each side is measured after
 * BENCH_WARMUP seconds (default 3) of the same load that are not counted: a running service has its code compiled
 * and its connections open, and a JIT-compiled process measured from its first request shows its warm-up instead
 * (an action's CPU falls by a quarter or more over its first seconds of load). The last line printed is one JSON
 * object.
 */
import os from 'node:os';
import autocannon from 'autocannon';
import { newRawKey } from '../src/domain/keys.js';
import { createServiceContext, systemClock, type ServiceContext } from '../src/services/context.js';
import { generateKey } from '../src/services/generateKey.js';
import { seedContracts } from '../src/services/seedContracts.js';
import { setShopPlan } from '../src/services/shops.js';
import { batchDelta, batchStats, benchDatabase, buildServer, cpuMs, mean, median, pauseResumeNext, pauseResumeRequests, peakRssMb, startChild, steadyRate, type SteadyRequest } from './support.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3);
/** The fixed-rate runs, one each: long enough for a p99 of thousands of requests. */
const FIXED_SECONDS = Number(process.env.BENCH_FIXED_SECONDS ?? 10);
const CONNECTIONS = 50;
const CONTRACTS = 2000;
const FIXED_RATE = 500;

type Result = { rps: number; p50: number; p99: number; errors: number; non2xx: number; svcUs?: number; pgUs?: number };

// BENCH_PROFILE=dir writes a CPU profile of the svc process; BENCH_ONLY=get,action,… runs only those scenarios;
// BENCH_NODE_ARGS passes node options to svc.
const PROFILE_DIR = process.env.BENCH_PROFILE;
const ONLY = process.env.BENCH_ONLY?.split(',');
const wanted = (name: string) => !ONLY || ONLY.includes(name);

const SKIPPED: Result = { rps: NaN, p50: NaN, p99: NaN, errors: 0, non2xx: 0, svcUs: NaN, pgUs: NaN };

// The CPU each request costs the server and the database: steadier than requests per second on a shared machine.
let svcPid = 0;
let basePid = 0;
let baseUrl = '';
let svcUrl = '';

async function run(name: string, opts: autocannon.Options): Promise<Result> {
  const target = baseUrl && String(opts.url).startsWith(baseUrl) ? basePid : svcPid;
  const svcBefore = target ? cpuMs({ pid: target }) : 0;
  const pgBefore = cpuMs({ name: 'postgres' });
  const batchesBefore = target === svcPid ? await batchStats(svcUrl) : null;
  const r = await autocannon({ connections: CONNECTIONS, duration: SECONDS, ...opts });
  const served = r.requests.total || 1;
  const svcUs = target ? Math.round(((cpuMs({ pid: target }) - svcBefore) * 1000) / served) : 0;
  const pgUs = Math.round(((cpuMs({ name: 'postgres' }) - pgBefore) * 1000) / served);
  const res = {
    rps: Math.round(r.requests.average),
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx,
    svcUs,
    pgUs,
  };
  const cpu = `  cpu/req: ${target === basePid ? 'baseline' : 'svc'} ${svcUs} µs, postgres ${pgUs} µs`;
  console.log(`${name.padEnd(28)} ${String(res.rps).padStart(7)} req/s  p50 ${String(res.p50).padStart(4)} ms  p99 ${String(res.p99).padStart(4)} ms  non-2xx ${res.non2xx}  errors ${res.errors}${cpu}`);
  if (batchesBefore) console.log(`${''.padEnd(28)} batched statements (per request, mean batch): ${batchDelta(batchesBefore, await batchStats(svcUrl), served)}`);
  return res;
}

/**
 * A scenario against the baseline of its method: both warmed up, then ROUNDS rounds of a baseline run and a scenario
 * run. The scenario's figures over its rounds (mean rate, median p50, worst p99, all errors), the baseline's mean
 * rate, and the median of the rounds' ratios.
 */
async function paired(key: string, names: [string, string], baseline: autocannon.Options, scenario: autocannon.Options): Promise<{ svc: Result; base: number; ratio: number }> {
  if (!wanted(key)) return { svc: SKIPPED, base: NaN, ratio: NaN };
  if (WARMUP > 0) {
    await autocannon({ connections: CONNECTIONS, ...baseline, duration: WARMUP });
    await autocannon({ connections: CONNECTIONS, ...scenario, duration: WARMUP });
  }
  const rounds: { base: Result; svc: Result }[] = [];
  for (let i = 0; i < ROUNDS; i++) rounds.push({ base: await run(names[0], baseline), svc: await run(names[1], scenario) });
  const svc: Result = {
    rps: Math.round(mean(rounds.map((r) => r.svc.rps))),
    p50: median(rounds.map((r) => r.svc.p50)),
    p99: Math.max(...rounds.map((r) => r.svc.p99)),
    errors: rounds.reduce((n, r) => n + r.svc.errors, 0),
    non2xx: rounds.reduce((n, r) => n + r.svc.non2xx, 0),
    // CPU per request: the median of the rounds, as the ratio is.
    svcUs: median(rounds.map((r) => r.svc.svcUs!)),
    pgUs: median(rounds.map((r) => r.svc.pgUs!)),
  };
  const ratios = rounds.map((r) => r.svc.rps / r.base.rps);
  const ratio = Math.round(median(ratios) * 1000) / 1000;
  console.log(`${''.padEnd(28)} ratio ${ratio} (rounds: ${ratios.map((x) => x.toFixed(3)).join(', ')})`);
  return { svc, base: Math.round(mean(rounds.map((r) => r.base.rps))), ratio };
}

/** Latency at a steady rate (support.ts steadyRate), printed as a row. */
async function steadyRow(name: string, key: string, rate: number, next: () => SteadyRequest, headers: Record<string, string>): Promise<Result> {
  if (!wanted(key)) return SKIPPED;
  const res = await steadyRate({ rate, seconds: FIXED_SECONDS, connections: CONNECTIONS, headers, next });
  console.log(`${name.padEnd(28)} ${String(res.rps).padStart(7)} req/s  p50 ${String(res.p50).padStart(4)} ms  p99 ${String(res.p99).padStart(4)} ms  non-2xx ${res.non2xx}  errors ${res.errors}  (steady, open loop)`);
  return res;
}

async function main() {
  const cleanups: (() => Promise<void> | void)[] = [];
  const env: NodeJS.ProcessEnv = {
    HOST: '127.0.0.1',
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info', // as in production: one access line per request
    // The benchmark measures throughput, not the limiter: both limits are raised for this run only.
    RATE_LIMIT_PER_MINUTE: '100000000',
    AUTH_FAILURE_LIMIT_PER_MINUTE: '100000000',
  };
  const bench = await benchDatabase();
  Object.assign(env, bench.env);
  cleanups.push(() => bench.cleanup());
  const { db, where } = bench;
  const ctx: ServiceContext = createServiceContext({ db, clock: systemClock, freeUntil: null });
  const shop = await setShopPlan({ ctx, input: { domain: 'bench.myshopify.com', plan: 'enterprise' } });
  const { secret } = await generateKey({ ctx, input: { shopId: shop.id, name: 'bench' } });
  const seeded = await seedContracts({ ctx, input: { shopId: shop.id, count: CONTRACTS } });
  const ids = seeded.map((c) => c.id);
  // An edit names a line: each contract's first line, with a quantity that changes on every request.
  const firstLine = new Map(seeded.map((c) => [c.id, c.lines[0].id]));
  await db.close();

  // As `npm start` does: compile, then run the JavaScript with node (BENCH_NODE_ARGS: extra options for svc alone).
  const nodeArgs = buildServer(PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : []);
  const svc = await startChild('dist/main.js', env, nodeArgs);
  svcPid = svc.child.pid!;
  svcUrl = svc.url;
  const base = await startChild('bench/baseline.ts', {}, PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}/baseline`] : [], '/echo/1');
  basePid = base.child.pid!;
  baseUrl = base.url;
  cleanups.unshift(() => {
    svc.child.kill('SIGTERM');
    base.child.kill('SIGTERM');
  });
  console.log('rate limits raised for this run only (RATE_LIMIT_PER_MINUTE and AUTH_FAILURE_LIMIT_PER_MINUTE = 100,000,000): this measures throughput, not the limiter');
  console.log(`svc ${svc.url} on ${where}; baseline ${base.url}; ${CONTRACTS} contracts; per scenario ${ROUNDS} rounds of ${SECONDS}s against the baseline's (after ${WARMUP}s of warm-up each) at ${CONNECTIONS} connections; node ${process.version}; ${os.cpus().length} cores`);

  const auth = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
  const randomId = () => ids[Math.floor(Math.random() * ids.length)];
  const getReq = { method: 'GET' as const, setupRequest: (r: any) => ({ ...r, path: `/api/v1/subscription-contracts/${randomId()}` }) };

  // One record of which contracts are paused, kept by every run that acts (warm-ups included), so none asks for a
  // transition its contract cannot make.
  const paused = new Set<string>();
  const actionReq = pauseResumeRequests(ids, { paused });
  const forged = 'svc_live_' + 'A'.repeat(49);
  const unknown = newRawKey();

  const getBaseline = { url: `${base.url}/echo/1` };
  const postBaseline = { url: `${base.url}/echo/1`, method: 'POST' as const, headers: { 'content-type': 'application/json' }, body: '{"action":"pause"}' };
  const get = await paired('get', ['baseline GET', 'svc GET contract'], getBaseline, { url: svc.url, headers: auth, requests: [getReq] });
  const action = await paired('action', ['baseline POST', 'svc pause/resume'], postBaseline, { url: svc.url, headers: auth, requests: [actionReq] });
  let quantity = 0;
  const editReq = {
    method: 'POST' as const,
    setupRequest: (r: any) => {
      const id = randomId();
      quantity = (quantity % 9) + 1;
      return { ...r, path: `/api/v1/subscription-contracts/${id}/edits`, body: JSON.stringify({ operations: [{ op: 'set_quantity', lineId: firstLine.get(id), quantity }] }) };
    },
  };
  const edit = await paired('edit', ['baseline POST', 'svc edit (set_quantity)'], postBaseline, { url: svc.url, method: 'POST', headers: auth, requests: [editReq] });
  const forgedRun = await paired('forged', ['baseline GET', 'svc forged key (401)'], getBaseline, { url: `${svc.url}/api/v1/subscription-contracts/1`, headers: { authorization: `Bearer ${forged}` } });
  const unknownRun = await paired('unknownKey', ['baseline GET', 'svc unknown key (401)'], getBaseline, { url: `${svc.url}/api/v1/subscription-contracts/1`, headers: { authorization: `Bearer ${unknown}` } });
  const mcp = await paired('mcp', ['baseline POST', 'svc MCP tools/call'], postBaseline, {
    url: `${svc.url}/mcp`,
    method: 'POST',
    headers: { ...auth, accept: 'application/json, text/event-stream' },
    requests: [
      {
        method: 'POST',
        setupRequest: (r: any) => ({
          ...r,
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_subscription_contract', arguments: { contractId: randomId() } } }),
        }),
      },
    ],
  });
  const results: Record<string, Result> = { get: get.svc, action: action.svc, edit: edit.svc, forged: forgedRun.svc, unknownKey: unknownRun.svc, mcp: mcp.svc };
  // Steady 500 requests/s: GETs of random contracts, then pause/resume actions (never two at once on one contract).
  const fixedGet = await steadyRow(`svc GET at ${FIXED_RATE}/s`, 'fixedGet', FIXED_RATE, () => ({ method: 'GET', url: `${svc.url}/api/v1/subscription-contracts/${randomId()}` }), auth);
  const fixedAction = await steadyRow(`svc action at ${FIXED_RATE}/s`, 'fixedAction', FIXED_RATE, pauseResumeNext(svc.url, randomId, paused), auth);
  const rss = peakRssMb(svc.child.pid!);

  // The JSON's baseline: the mean of the runs paired with the GET and with the action scenario.
  const pick = (r: Result) => ({ rps: r.rps, p50: r.p50, p99: r.p99, svcUs: r.svcUs, pgUs: r.pgUs });
  const summary = {
    baseline: { get: get.base, post: action.base },
    get: pick(results.get),
    action: pick(results.action),
    edit: pick(results.edit),
    forged: pick(results.forged),
    unknownKey: pick(results.unknownKey),
    mcp: pick(results.mcp),
    fixedRate: { get: { p99: fixedGet.p99 }, action: { p99: fixedAction.p99 } },
    ratios: { get: get.ratio, action: action.ratio, edit: edit.ratio, forged: forgedRun.ratio, unknownKey: unknownRun.ratio },
    // What an edit costs svc against an action (the target: at most 1.3).
    editCpuToAction: Math.round((results.edit.svcUs! / results.action.svcUs!) * 100) / 100,
    peakRssMb: rss,
  };
  const unexpected = Object.entries({ ...results, fixedGet, fixedAction })
    .filter(([k, r]) => r.errors > 0 || (!['forged', 'unknownKey'].includes(k) && r.non2xx > r.rps * SECONDS * ROUNDS * 0.01))
    .map(([k]) => k);
  if (unexpected.length) console.log(`warning: errors or unexpected non-2xx answers in: ${unexpected.join(', ')}`);
  for (const c of cleanups) await c();
  console.log(JSON.stringify(summary));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
