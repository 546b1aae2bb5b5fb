import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { openDatabase, type Database } from '../src/db/client.js';
import { migrate } from '../src/db/migrate.js';

/** What the benchmarks share: the database they run on, and svc started as `npm start` starts it. */

export const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');

/** A port nobody listens on now: the child is told to use it, then asked until it answers (at any LOG_LEVEL). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

export async function startChild(
  script: string,
  env: NodeJS.ProcessEnv,
  nodeArgs: string[] = [],
  readyPath = '/healthz',
  /** A command it runs under, `nice -n 5` say (every thread of the process at that CPU priority). */
  under: string[] = [],
): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  // Compiled JavaScript runs as `npm start` runs it; TypeScript (the baseline) through tsx.
  const loader = script.endsWith('.ts') ? ['--import', 'tsx'] : [];
  const command = [process.execPath, ...nodeArgs, ...loader, script];
  // `nice` and `chrt` exec node in their own process: the child's pid is node's.
  const [file, ...args] = [...under, ...command];
  const child = spawn(file, args, {
    cwd: root,
    env: { ...process.env, ...env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let exited: Error | null = null;
  child.stderr!.on('data', (b) => process.stderr.write(b));
  child.on('exit', (code) => (exited = new Error(`${script} exited with ${code}`)));
  for (let i = 0; i < 300; i++) {
    if (exited) throw exited;
    const ok = await fetch(url + readyPath).then((r) => r.ok, () => false);
    if (ok) return { child, url };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`${script} did not answer on ${url}${readyPath} within 30 s`);
}

/** Stops a child started by startChild and waits for it to exit (SIGKILL after 10 s): its database may go next. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/** Compiles src/ as `npm start` does, and returns the node options it runs dist/main.js with (plus BENCH_NODE_ARGS). */
export function buildServer(extra: string[] = []): string[] {
  const built = spawnSync(process.execPath, ['scripts/build-server.mjs'], { cwd: root, stdio: 'inherit' });
  if (built.status !== 0) throw new Error('npm run build failed');
  const startArgs: string = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).config.node_args;
  return [...startArgs.split(' '), ...(process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []), ...extra];
}

export function peakRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = /VmHWM:\s+(\d+) kB/.exec(status);
  return m ? Math.round(Number(m[1]) / 1024) : NaN;
}

/**
 * CPU time (user + system, ms) used so far by one process, or by every process named `name` (its command name, as
 * `ps -o comm` gives it) together with what their exited children used: a database's backends come and go during a
 * run (a pool closes idle connections), and the time of one that has exited is counted in its parent's (the
 * postmaster's), so the total only grows.
 */
export function cpuMs(which: { pid: number } | { name: string }): number {
  const read = (pid: string, children: boolean) => {
    try {
      const t = cpuTimesMs(pid);
      return t.user + t.system + (children ? t.childrenUser + t.childrenSystem : 0);
    } catch {
      return 0;
    }
  };
  if ('pid' in which) return read(String(which.pid), false);
  let total = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === which.name) total += read(pid, true);
    } catch {
      // gone
    }
  }
  return total;
}

/**
 * One process's CPU times so far, in ms: its own user and system time, and those of its exited children. From
 * /proc/<pid>/stat, whose fields after the command are utime, stime, cutime and cstime at 14–17 (clock ticks, 100 a
 * second). Throws if the process is gone.
 */
export function cpuTimesMs(pid: number | string): { user: number; system: number; childrenUser: number; childrenSystem: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ms = (i: number) => (Number(f[i]) * 1000) / 100;
  return { user: ms(11), system: ms(12), childrenUser: ms(13), childrenSystem: ms(14) };
}

/**
 * A fresh, migrated database for one benchmark run: a new schema on the PostgreSQL of DATABASE_URL (dropped at the
 * end), else a new embedded database in a temporary folder. `env` points svc children at it.
 */
export async function benchDatabase(): Promise<{ db: Database; env: NodeJS.ProcessEnv; where: string; cleanup(): Promise<void> }> {
  if (process.env.DATABASE_URL) {
    const schema = `svc_bench_${randomBytes(4).toString('hex')}`;
    const admin = await openDatabase({ kind: 'postgres', url: process.env.DATABASE_URL });
    await admin.withSession((q) => q(`CREATE SCHEMA ${schema}`));
    const u = new URL(process.env.DATABASE_URL);
    u.searchParams.set('options', `-c search_path=${schema}`);
    const db = await openDatabase({ kind: 'postgres', url: process.env.DATABASE_URL, searchPath: schema });
    await migrate(db);
    return {
      db,
      env: { DATABASE_URL: u.toString() },
      where: 'PostgreSQL',
      cleanup: async () => {
        await admin.withSession((q) => q(`DROP SCHEMA ${schema} CASCADE`));
        await admin.close();
      },
    };
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-bench-'));
  const db = await openDatabase({ kind: 'pglite', dataDir: dir });
  await migrate(db);
  return { db, env: { DATA_DIR: dir, DATABASE_URL: '' }, where: 'embedded PGlite', cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * After an answer, does the contract now stand as the request asked? 200: done. 409 invalid_state: it already did
 * (a request whose answer was never counted, cut off at the end of an earlier run, made the change), so the record
 * follows the contract and its next request is the right one.
 */
const flips = (status: number) => status === 200 || status === 409;

/**
 * Picks contracts no request is acting on, so no two requests meet on one contract and every action is allowed. A
 * contract is in flight from its pick to its answer; one whose answer never came (a run ended first) is free again
 * after a few seconds.
 */
function contractPicker(pick: () => string) {
  const inFlight = new Map<string, number>();
  return {
    take(): string {
      const now = Date.now();
      let id = pick();
      for (let tries = 0; tries < 50 && (inFlight.get(id) ?? -Infinity) > now - 5000; tries++) id = pick();
      inFlight.set(id, now);
      return id;
    },
    release(id: string): void {
      inFlight.delete(id);
    },
  };
}

/**
 * autocannon requests that pause and resume contracts, each request a contract no other request is acting on, the
 * opposite of what its contract last did. `paused`: the contracts paused already (kept current as the run goes, and
 * across runs that share it); `statuses` counts the answers. (autocannon gives each request a fresh context, so
 * nothing is kept per connection.)
 */
export function pauseResumeRequests(ids: string[], opts: { paused?: Set<string>; statuses?: Record<number, number> } = {}) {
  const paused = opts.paused ?? new Set<string>();
  const picker = contractPicker(() => ids[Math.floor(Math.random() * ids.length)]);
  return {
    method: 'POST' as const,
    setupRequest: (r: any, c: any) => {
      c.id = picker.take();
      return { ...r, path: `/api/v1/subscription-contracts/${c.id}/actions`, body: paused.has(c.id) ? '{"action":"resume"}' : '{"action":"pause"}' };
    },
    onResponse: (status: number, _body: string, c: any) => {
      if (opts.statuses) opts.statuses[status] = (opts.statuses[status] ?? 0) + 1;
      picker.release(c.id);
      if (flips(status)) {
        if (paused.has(c.id)) paused.delete(c.id);
        else paused.add(c.id);
      }
    },
  };
}

export type SteadyRequest = { method: 'GET' | 'POST'; url: string; body?: string; done?: (status: number | null) => void };
export type SteadyResult = {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  /** Answers by status code. */
  statuses: Record<number, number>;
  /** p50/p99 by method (GET, POST). */
  byMethod: Record<string, { p50: number; p99: number }>;
  /** The slowest answers: when each was due (ms after the counted part began), its method, its latency. */
  slowest: { at: number; method: string; ms: number }[];
  /** p99 of each 5 seconds of the counted part, in order. */
  p99Every5s: number[];
  /** Every counted answer: when it was due (ms after the counted part began), its method, its latency. */
  samples: { at: number; method: string; ms: number }[];
};

/** The quantiles of the answers due within [fromMs, toMs) of the counted part (steadyRate's samples). */
export function latencyWindow(samples: SteadyResult['samples'], fromMs: number, toMs: number): { answers: number; p50: number; p99: number; byMethod: SteadyResult['byMethod'] } {
  const inside = samples.filter((x) => x.at >= fromMs && x.at < toMs);
  const quantiles = (xs: number[]) => {
    xs.sort((a, b) => a - b);
    const at = (q: number) => (xs.length ? Math.round(xs[Math.min(xs.length - 1, Math.floor(q * xs.length))] * 10) / 10 : NaN);
    return { p50: at(0.5), p99: at(0.99) };
  };
  const byMethod: SteadyResult['byMethod'] = {};
  for (const method of new Set(inside.map((x) => x.method))) byMethod[method] = quantiles(inside.filter((x) => x.method === method).map((x) => x.ms));
  return { answers: inside.length, ...quantiles(inside.map((x) => x.ms)), byMethod };
}

/**
 * Latency at a steady rate: one request every 1000/rate ms, open loop (a request is sent when it is due whether or
 * not earlier ones have been answered), latency measured from when it was due, so a stall counts against every
 * request it delays. Not autocannon's `overallRate`: that lets each connection send its share of the second back to
 * back at the start of every second, which measures a burst of `rate` requests once a second. A second at the same
 * rate goes first, not counted: connections opened, code warmed, as in a running service.
 */
export async function steadyRate(opts: {
  rate: number;
  /** How long the counted part runs at most. */
  seconds: number;
  connections: number;
  headers: Record<string, string>;
  next: () => SteadyRequest;
  /** Ends the counted part early once it answers true (asked before each send): a load that lasts as long as something else. */
  until?: () => boolean;
  /** Called when the counted part starts (after the uncounted second). */
  onStart?: () => void;
}): Promise<SteadyResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.connections });
  const samples: { at: number; method: string; ms: number }[] = [];
  let countedFrom = 0;
  let errors = 0;
  let non2xx = 0;
  const statuses: Record<number, number> = {};
  const interval = 1000 / opts.rate;
  const inFlight: Promise<void>[] = [];
  const send = (due: number, record: boolean) =>
    new Promise<void>((resolve) => {
      const r = opts.next();
      const req = http.request(r.url, { method: r.method, agent, headers: opts.headers }, (res) => {
        res.resume();
        res.on('end', () => {
          if (record) {
            samples.push({ at: due - countedFrom, method: r.method, ms: performance.now() - due });
            if (res.statusCode! < 200 || res.statusCode! >= 300) non2xx++;
            statuses[res.statusCode!] = (statuses[res.statusCode!] ?? 0) + 1;
          }
          r.done?.(res.statusCode!);
          resolve();
        });
      });
      req.on('error', () => {
        if (record) errors++;
        r.done?.(null);
        resolve();
      });
      req.end(r.body);
    });
  // Every request due by now goes out now; then sleep until the next is due. No busy-waiting (the load generator
  // shares the machine's cores with svc and PostgreSQL): a timer that fires late makes requests late, and that
  // lateness counts in their latency.
  const paced = (seconds: number, record: boolean) =>
    new Promise<number>((finished) => {
      let total = Math.round(opts.rate * seconds);
      const start = performance.now();
      let i = 0;
      const tick = () => {
        const now = performance.now();
        if (record && opts.until?.()) total = i;
        for (; i < total && start + i * interval <= now; i++) inFlight.push(send(start + i * interval, record));
        if (i < total) setTimeout(tick, Math.max(0, start + i * interval - performance.now()));
        else finished(start);
      };
      tick();
    });
  await paced(1, false);
  await Promise.all(inFlight.splice(0));
  opts.onStart?.();
  countedFrom = performance.now();
  const start = await paced(opts.seconds, true);
  await Promise.all(inFlight);
  agent.destroy();
  const all = latencyWindow(samples, 0, Infinity);
  const p99Every5s: number[] = [];
  for (let from = 0; samples.some((x) => x.at >= from); from += 5000) {
    const w = latencyWindow(samples, from, from + 5000);
    if (w.answers) p99Every5s.push(w.p99);
  }
  const slowest = [...samples].sort((a, b) => b.ms - a.ms).slice(0, 20).map((x) => ({ at: Math.round(x.at), method: x.method, ms: Math.round(x.ms * 10) / 10 }));
  return { rps: Math.round(samples.length / ((performance.now() - start) / 1000)), p50: all.p50, p99: all.p99, errors, non2xx, statuses, byMethod: all.byMethod, slowest, p99Every5s, samples };
}

/**
 * For steadyRate: pause or resume a contract no earlier request is still acting on. `paused` is kept current.
 */
export function pauseResumeNext(baseUrl: string, pick: () => string, paused: Set<string>): () => SteadyRequest {
  const picker = contractPicker(pick);
  return () => {
    const id = picker.take();
    const pausing = !paused.has(id);
    return {
      method: 'POST',
      url: `${baseUrl}/api/v1/subscription-contracts/${id}/actions`,
      body: pausing ? '{"action":"pause"}' : '{"action":"resume"}',
      done: (status) => {
        picker.release(id);
        if (status !== null && flips(status)) {
          if (pausing) paused.add(id);
          else paused.delete(id);
        }
      },
    };
  };
}

type BatchStats = Record<string, { statements: number; inputs: number }>;

/** The hot statements' counters from svc's /metrics (svc_db_batched_*): how many ran, for how many callers. */
export async function batchStats(url: string): Promise<BatchStats> {
  const text = await fetch(`${url}/metrics`).then((r) => r.text(), () => '');
  const out: BatchStats = {};
  for (const m of text.matchAll(/^svc_db_batched_(statements|inputs)_total\{statement="(\w+)"\} (\d+)/gm)) {
    const s = (out[m[2]] ??= { statements: 0, inputs: 0 });
    s[m[1] as 'statements' | 'inputs'] = Number(m[3]);
  }
  return out;
}

/**
 * svc's event-loop delay since the previous reading (prom-client's process metrics, which start again after each
 * scrape): p99 and max, in ms. A reading right before a phase makes the next one that phase's.
 */
export async function eventLoopLag(url: string): Promise<{ p99: number; max: number }> {
  const text = await fetch(`${url}/metrics`).then((r) => r.text(), () => '');
  const read = (name: string) => Math.round(Number(text.match(new RegExp(`^${name} ([\\d.e+-]+)`, 'm'))?.[1] ?? NaN) * 10_000) / 10;
  return { p99: read('nodejs_eventloop_lag_p99_seconds'), max: read('nodejs_eventloop_lag_max_seconds') };
}

/** What ran between two batchStats readings, per request served: "name statements/request (mean batch)". */
export function batchDelta(before: BatchStats, after: BatchStats, served: number): string {
  const parts: string[] = [];
  for (const [name, a] of Object.entries(after)) {
    const statements = a.statements - (before[name]?.statements ?? 0);
    const inputs = a.inputs - (before[name]?.inputs ?? 0);
    if (statements) parts.push(`${name} ${(statements / served).toFixed(3)} (${(inputs / statements).toFixed(1)})`);
  }
  return parts.join(', ') || 'none';
}

/** The mean of some figures. */
export const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
/** The median of some figures (the upper middle one of an even number). */
export const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
