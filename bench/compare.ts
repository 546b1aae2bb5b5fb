/**
 * npm run bench:compare -- <other checkout> [get|action|edit ...]: this checkout's svc against another's (an older
 * commit in a worktree, say: `git worktree add --detach ../before <commit> && (cd ../before && npm ci)`), on the same
 * machine at the same time, in alternating rounds. Answers "did this change cost CPU per request?" on a shared machine
 * whose speed moves by tens of per cent within minutes: two runs of `npm run bench` one after the other can land on
 * two different machines, while rounds that alternate every few seconds see the same one.
 *
 * Each side is started from its own checkout with that checkout's own bench support (database, seed, build, start),
 * so the other checkout needs `bench/support.ts` with benchDatabase/buildServer/startChild and the services
 * setShopPlan/generateKey/seedContracts (every commit since the benchmarks came in). Both sides run on PostgreSQL when
 * DATABASE_URL is set, each in a fresh schema; on their own embedded databases otherwise. Each scenario: warm-up,
 * then BENCH_ROUNDS rounds (default 8) of BENCH_SECONDS (default 4) at 50 connections on each side, the order of the
 * two flipped every round; svc's CPU per request (/proc, the process alone) for each side and round, and the median
 * of the rounds' ratios (this checkout / the other). BENCH_SHOW_RPS=1 also prints each side's requests per second in
 * each round (a side that answers faster batches less: its CPU per request can rise as its database gets quicker);
 * BENCH_SHOW_GC=1 each side's garbage collection per request in each round (gcMs below), its user and system CPU and
 * its read and write system calls per request (procCounters below). BENCH_PROFILE=<directory> runs each side under
 * `node --cpu-prof` (into <directory>/this and /other) and prints, per scenario, where each side's time per request
 * went over the measured rounds, by package or file, and the parts that differ most (bench/profiles.ts): the way to
 * find a rise of a few per cent that the rounds' ratios alone cannot place.
 * The last line printed is one JSON object.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { cpuMs, cpuTimesMs, median, pauseResumeRequests, peakRssMb } from './support.js';
import { nowUs, profileComparison, readProfile, type Window } from './profiles.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 8);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const CONNECTIONS = 50;
const SCENARIOS = ['get', 'action', 'edit'] as const;
const PROFILE_DIR = process.env.BENCH_PROFILE ? path.resolve(process.env.BENCH_PROFILE) : null;
type Scenario = (typeof SCENARIOS)[number];

type Side = { name: string; url: string; key: string; ids: string[]; lines: Record<string, string>; pid: number; child: ChildProcess };

/** What each side runs, from its own checkout: seed a shop, a key and 2,000 contracts, start svc, print where. */
const serveScript = (checkout: string) => `
import { createServiceContext, systemClock } from '${checkout}/src/services/context.ts';
import { generateKey } from '${checkout}/src/services/generateKey.ts';
import { seedContracts } from '${checkout}/src/services/seedContracts.ts';
import { setShopPlan } from '${checkout}/src/services/shops.ts';
import { benchDatabase, buildServer, startChild } from '${checkout}/bench/support.ts';
const bench = await benchDatabase();
const ctx = createServiceContext({ db: bench.db, clock: systemClock, freeUntil: null });
const shop = await setShopPlan({ ctx, input: { domain: 'bench.myshopify.com', plan: 'enterprise' } });
const { secret } = await generateKey({ ctx, input: { shopId: shop.id, name: 'bench' } });
const seeded = await seedContracts({ ctx, input: { shopId: shop.id, count: 2000 } });
await bench.db.close();
const env = { HOST: '127.0.0.1', LOG_LEVEL: 'info', RATE_LIMIT_PER_MINUTE: '100000000', AUTH_FAILURE_LIMIT_PER_MINUTE: '100000000', ...bench.env };
const svc = await startChild('dist/main.js', env, buildServer());
const lines = Object.fromEntries(seeded.map((c) => [c.id, c.lines?.[0]?.id ?? null]));
console.log(JSON.stringify({ url: svc.url, key: secret, ids: seeded.map((c) => c.id), lines, pid: svc.child.pid }));
const stop = async () => { svc.child.kill('SIGTERM'); await new Promise((r) => setTimeout(r, 1000)); await bench.cleanup(); process.exit(0); };
process.on('SIGTERM', stop);
setInterval(() => {}, 1 << 30);
`;

async function startSide(name: string, checkout: string, dir: string): Promise<Side> {
  const script = path.join(dir, `${name}.mts`); // an ES module wherever it lies
  writeFileSync(script, serveScript(checkout));
  // BENCH_PROFILE: svc (not this script) under --cpu-prof, through the node options each side's bench support adds.
  const nodeArgs = PROFILE_DIR ? `${process.env.BENCH_NODE_ARGS ?? ''} --cpu-prof --cpu-prof-dir=${path.join(PROFILE_DIR, name)}`.trim() : process.env.BENCH_NODE_ARGS;
  const env = nodeArgs === undefined ? process.env : { ...process.env, BENCH_NODE_ARGS: nodeArgs };
  const child = spawn(process.execPath, ['--import', 'tsx', script], { cwd: checkout, env, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  return new Promise((resolve, reject) => {
    child.on('exit', (code) => reject(new Error(`${name} (${checkout}) exited with ${code} before it was ready`)));
    child.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      const line = out.split('\n').slice(0, -1).find((l) => l.startsWith('{"url"'));
      if (line) resolve({ name, child, ...JSON.parse(line) });
    });
  });
}

function requestsOf(side: Side, scenario: Scenario, paused: Set<string>) {
  const randomId = () => side.ids[Math.floor(Math.random() * side.ids.length)];
  if (scenario === 'get') return [{ method: 'GET' as const, setupRequest: (r: any) => ({ ...r, path: `/api/v1/subscription-contracts/${randomId()}` }) }];
  if (scenario === 'action') return [pauseResumeRequests(side.ids, { paused })];
  let quantity = 0;
  return [
    {
      method: 'POST' as const,
      setupRequest: (r: any) => {
        const id = randomId();
        quantity = (quantity % 9) + 1;
        return { ...r, path: `/api/v1/subscription-contracts/${id}/edits`, body: JSON.stringify({ operations: [{ op: 'set_quantity', lineId: side.lines[id], quantity }] }) };
      },
    },
  ];
}

/**
 * The side's garbage collection so far, from its /metrics (prom-client's nodejs_gc_duration_seconds, by kind), in ms,
 * and its request log's dropped entries: BENCH_SHOW_GC=1 prints both per round, to tell a round that lost its time to
 * the collector (a process can settle into a regime of frequent major collections for its whole life).
 */
async function gcMs(side: Side): Promise<Record<string, number>> {
  const text = await (await fetch(`${side.url}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^nodejs_gc_duration_seconds_sum\{kind="(\w+)"\} ([\d.e+-]+)$/gm)) out[m[1]] = Number(m[2]) * 1000;
  for (const m of text.matchAll(/^nodejs_gc_duration_seconds_count\{kind="(\w+)"\} (\d+)$/gm)) out[`${m[1]}Count`] = Number(m[2]);
  const dropped = /^svc_request_log_dropped_total (\d+)$/m.exec(text);
  if (dropped) out.logDropped = Number(dropped[1]);
  return out;
}

/**
 * The process's user and system CPU (ms) and its read and write system calls so far (/proc: stat's utime and stime,
 * io's syscr and syscw; a writev counts as a write): BENCH_SHOW_GC=1 prints them per request, to tell CPU spent in
 * svc's own code from CPU spent in the kernel on its sockets.
 */
function procCounters(pid: number): { userMs: number; systemMs: number; reads: number; writes: number } {
  try {
    const cpu = cpuTimesMs(pid);
    const io = readFileSync(`/proc/${pid}/io`, 'utf8');
    const field = (name: string) => Number(new RegExp(`^${name}: (\\d+)$`, 'm').exec(io)?.[1] ?? 0);
    return { userMs: cpu.user, systemMs: cpu.system, reads: field('syscr'), writes: field('syscw') };
  } catch {
    return { userMs: 0, systemMs: 0, reads: 0, writes: 0 };
  }
}

async function round(side: Side, scenario: Scenario, paused: Set<string>, seconds: number): Promise<{ us: number; rps: number; non2xx: number; served: number; window: Window }> {
  const gcBefore = process.env.BENCH_SHOW_GC ? await gcMs(side) : null;
  const procBefore = procCounters(side.pid);
  const before = cpuMs({ pid: side.pid });
  const from = nowUs();
  const r = await autocannon({
    url: side.url,
    connections: CONNECTIONS,
    duration: seconds,
    headers: { authorization: `Bearer ${side.key}`, 'content-type': 'application/json' },
    requests: requestsOf(side, scenario, paused),
  });
  const window = { from, to: nowUs() };
  const served = r.requests.total || 1;
  const out = { us: Math.round(((cpuMs({ pid: side.pid }) - before) * 1000) / served), rps: Math.round(r.requests.average), non2xx: r.non2xx, served, window };
  const procAfter = procCounters(side.pid);
  if (process.env.BENCH_SHOW_RPS) console.log(`  ${side.name} ${scenario}: ${out.rps} req/s`);
  if (gcBefore) {
    const after = await gcMs(side);
    const d = (k: string) => (after[k] ?? 0) - (gcBefore[k] ?? 0);
    const perRequest = (k: string) => ((d(k) * 1000) / served).toFixed(1);
    console.log(
      `  ${side.name} ${scenario}: GC µs per request minor ${perRequest('minor')}, major ${perRequest('major')}, incremental ${perRequest('incremental')}` +
        ` (${d('minorCount')} minor, ${d('majorCount')} major collections); request log entries dropped ${d('logDropped')}`,
    );
    const p = (k: keyof typeof procAfter, scale: number) => (((procAfter[k] - procBefore[k]) * scale) / served).toFixed(k.endsWith('Ms') ? 0 : 2);
    console.log(`  ${side.name} ${scenario}: user ${p('userMs', 1000)} µs, system ${p('systemMs', 1000)} µs, read calls ${p('reads', 1)}, write calls ${p('writes', 1)} per request`);
  }
  return out;
}

async function main() {
  const [other, ...asked] = process.argv.slice(2);
  if (!other) throw new Error('usage: npm run bench:compare -- <other checkout> [get|action|edit ...]');
  const scenarios = (asked.length ? asked : ['get', 'action']) as Scenario[];
  for (const s of scenarios) if (!SCENARIOS.includes(s)) throw new Error(`unknown scenario ${s}: one of ${SCENARIOS.join(', ')}`);
  const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-compare-'));
  const sides = { this: await startSide('this', here, dir), other: await startSide('other', path.resolve(other), dir) };
  const summary: Record<string, unknown> = {};
  const measured: Record<string, { this: { windows: Window[]; served: number }; other: { windows: Window[]; served: number } }> = {};
  try {
    console.log(`this checkout (${here}) against ${path.resolve(other)}, on ${process.env.DATABASE_URL ? 'PostgreSQL' : 'embedded PGlite'}; ${ROUNDS} alternating rounds of ${SECONDS}s at ${CONNECTIONS} connections; svc CPU per request`);
    for (const scenario of scenarios) {
      const paused = { this: new Set<string>(), other: new Set<string>() };
      // The edit scenario needs a line id; a checkout from before lines had ids cannot run it.
      if (scenario === 'edit' && Object.values(sides.other.lines).some((l) => !l)) {
        console.log('edit: the other checkout\'s contracts have no line ids; skipped');
        continue;
      }
      for (const k of ['other', 'this'] as const) await round(sides[k], scenario, paused[k], 3);
      const us = { this: [] as number[], other: [] as number[] };
      const m = (measured[scenario] = { this: { windows: [] as Window[], served: 0 }, other: { windows: [] as Window[], served: 0 } });
      let non2xx = 0;
      for (let i = 0; i < ROUNDS; i++) {
        for (const k of i % 2 ? (['this', 'other'] as const) : (['other', 'this'] as const)) {
          const r = await round(sides[k], scenario, paused[k], SECONDS);
          us[k].push(r.us);
          m[k].windows.push(r.window);
          m[k].served += r.served;
          non2xx += r.non2xx;
        }
        console.log(`${scenario.padEnd(7)} round ${i + 1}: other ${us.other[i]} µs, this ${us.this[i]} µs, ratio ${(us.this[i] / us.other[i]).toFixed(3)}`);
      }
      const ratio = Math.round(median(us.this.map((t, i) => t / us.other[i])) * 1000) / 1000;
      summary[scenario] = { thisUs: median(us.this), otherUs: median(us.other), ratio, non2xx };
      console.log(`${scenario.padEnd(7)} median: other ${median(us.other)} µs, this ${median(us.this)} µs; median ratio ${ratio}`);
    }
    summary.peakRssMb = { this: peakRssMb(sides.this.pid), other: peakRssMb(sides.other.pid) };
  } finally {
    for (const s of Object.values(sides)) s.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 2000));
    rmSync(dir, { recursive: true, force: true });
  }
  if (PROFILE_DIR) {
    // Each svc writes its profile as it exits (its side's script stops it, then waits a second).
    await new Promise((r) => setTimeout(r, 3000));
    const profiles = { this: readProfile(path.join(PROFILE_DIR, 'this')), other: readProfile(path.join(PROFILE_DIR, 'other')) };
    for (const [scenario, m] of Object.entries(measured)) {
      for (const line of profileComparison(scenario, { this: { profile: profiles.this, ...m.this }, other: { profile: profiles.other, ...m.other } })) console.log(line);
    }
  }
  console.log(JSON.stringify(summary));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
