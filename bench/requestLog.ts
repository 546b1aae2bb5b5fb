/**
 * npm run bench:requestlog: what the request log costs per request. Two svc processes on one database, one with
 * REQUEST_LOG=off and one with it on, take the same load in alternating rounds (GETs of a contract, then pause/resume
 * actions), and each round compares the CPU per request of the two: on a shared machine whose speed moves by tens of
 * percent within minutes, two processes measured side by side, round after round, see the same machine, where two
 * separate `npm run bench` runs do not. Gives, per scenario, the median over the rounds of svc's CPU per request with
 * the log off and on, and the median of the rounds' rise. The database's CPU per request is printed too (it counts
 * every PostgreSQL process on the machine, so other tenants show in it). The last line printed is one JSON object.
 */
import autocannon from 'autocannon';
import { createServiceContext, systemClock } from '../src/services/context.js';
import { generateKey } from '../src/services/generateKey.js';
import { seedContracts } from '../src/services/seedContracts.js';
import { setShopPlan } from '../src/services/shops.js';
import { benchDatabase, buildServer, cpuMs, median, pauseResumeRequests, startChild } from './support.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3);
const CONNECTIONS = 50;
const CONTRACTS = 2000;

type Side = 'off' | 'on';
type Measure = { svcUs: number; pgUs: number; rps: number };

async function main() {
  const bench = await benchDatabase();
  const { db, where } = bench;
  const ctx = createServiceContext({ db, clock: systemClock, freeUntil: null });
  const shop = await setShopPlan({ ctx, input: { domain: 'bench-log.myshopify.com', plan: 'enterprise' } });
  const { secret } = await generateKey({ ctx, input: { shopId: shop.id, name: 'bench' } });
  const ids = (await seedContracts({ ctx, input: { shopId: shop.id, count: CONTRACTS } })).map((c) => c.id);
  await db.close();

  const env = { ...bench.env, HOST: '127.0.0.1', LOG_LEVEL: 'info', RATE_LIMIT_PER_MINUTE: '100000000', AUTH_FAILURE_LIMIT_PER_MINUTE: '100000000', SCHEDULER_ENABLED: 'false' };
  const nodeArgs = buildServer();
  const servers = {
    off: await startChild('dist/main.js', { ...env, REQUEST_LOG: 'off' }, nodeArgs),
    on: await startChild('dist/main.js', { ...env, REQUEST_LOG: 'on' }, nodeArgs),
  };
  console.log(`two svc processes on ${where} (REQUEST_LOG=off ${servers.off.url}, on ${servers.on.url}); ${ROUNDS} alternating rounds of ${SECONDS}s per scenario at ${CONNECTIONS} connections, after ${WARMUP}s of warm-up each; node ${process.version}`);

  const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
  const paused = new Set<string>();
  const scenarios = {
    get: () => ({ headers, requests: [{ method: 'GET' as const, setupRequest: (r: any) => ({ ...r, path: `/api/v1/subscription-contracts/${ids[Math.floor(Math.random() * ids.length)]}` }) }] }),
    action: () => ({ headers, requests: [pauseResumeRequests(ids, { paused })] }),
  };

  const measure = async (side: Side, opts: Omit<autocannon.Options, 'url'>): Promise<Measure> => {
    const pid = servers[side].child.pid!;
    const svcBefore = cpuMs({ pid });
    const pgBefore = cpuMs({ name: 'postgres' });
    const r = await autocannon({ ...opts, url: servers[side].url, connections: CONNECTIONS, duration: SECONDS });
    const served = r.requests.total || 1;
    return {
      svcUs: Math.round(((cpuMs({ pid }) - svcBefore) * 1000) / served),
      pgUs: Math.round(((cpuMs({ name: 'postgres' }) - pgBefore) * 1000) / served),
      rps: Math.round(r.requests.average),
    };
  };

  const summary: Record<string, { offUs: number; onUs: number; risePct: number; pgOffUs: number; pgOnUs: number; rounds: number[] }> = {};
  try {
    for (const [name, options] of Object.entries(scenarios)) {
      for (const side of ['off', 'on'] as const) await autocannon({ ...options(), url: servers[side].url, connections: CONNECTIONS, duration: WARMUP });
      const rounds: Record<Side, Measure>[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        // Alternating which goes first, so a machine speeding up or slowing down within a round favours neither.
        const order: Side[] = i % 2 === 0 ? ['off', 'on'] : ['on', 'off'];
        const round = {} as Record<Side, Measure>;
        for (const side of order) round[side] = await measure(side, options());
        rounds.push(round);
        console.log(
          `${name.padEnd(7)} round ${i + 1}: off ${round.off.svcUs} µs (${round.off.rps}/s, postgres ${round.off.pgUs} µs)  ` +
            `on ${round.on.svcUs} µs (${round.on.rps}/s, postgres ${round.on.pgUs} µs)  rise ${(((round.on.svcUs / round.off.svcUs) - 1) * 100).toFixed(1)} %`,
        );
      }
      const rises = rounds.map((r) => (r.on.svcUs / r.off.svcUs - 1) * 100);
      summary[name] = {
        offUs: median(rounds.map((r) => r.off.svcUs)),
        onUs: median(rounds.map((r) => r.on.svcUs)),
        risePct: Math.round(median(rises) * 10) / 10,
        pgOffUs: median(rounds.map((r) => r.off.pgUs)),
        pgOnUs: median(rounds.map((r) => r.on.pgUs)),
        rounds: rises.map((x) => Math.round(x * 10) / 10),
      };
      console.log(`${name.padEnd(7)} svc CPU per request: off ${summary[name].offUs} µs, on ${summary[name].onUs} µs; median rise ${summary[name].risePct} %`);
    }
  } finally {
    servers.off.child.kill('SIGTERM');
    servers.on.child.kill('SIGTERM');
    await bench.cleanup();
  }
  console.log(JSON.stringify(summary));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
