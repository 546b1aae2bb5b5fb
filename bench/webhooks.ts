/**
 * npm run bench:webhooks: outgoing webhooks on this machine, with a local receiver (in this process). svc runs as its
 * own process, as `npm start` runs it, on PostgreSQL when DATABASE_URL is set (in a fresh schema), else on a fresh
 * embedded database. Three figures:
 * - deliveries per second: a backlog of BENCH_BACKLOG (default 5,000) events is written while no dispatcher runs,
 *   then an instance with its dispatcher starts; from the first delivery received to the last;
 * - commit to receipt: actions at a steady 200 per second for BENCH_SECONDS; each delivery's latency is its receipt
 *   time minus its event's time (the change's moment, just before its commit), p50 and p99;
 * - actions with one enabled endpoint against actions without, in the same run (pause/resume at 50 connections,
 *   after a warm-up of each, BENCH_ROUNDS rounds (default 3) of BENCH_ROUND_SECONDS (default 5) without and then with;
 *   the median of the rounds' ratios), the dispatcher sending all along;
 * - deliveries per second with BENCH_WAITING (default 100,000) deliveries waiting in the outbox: half of them behind
 *   the retrying first deliveries of their contracts to a failing receiver, half for a disabled endpoint. A new
 *   backlog of BENCH_BACKLOG is written, then an instance starts; from its start to the last delivery received.
 * The last line printed is one JSON object.
 */
import { adminPrincipal } from '../src/services/principal.js';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import autocannon from 'autocannon';
import { createServiceContext, systemClock } from '../src/services/context.js';
import { generateKey } from '../src/services/generateKey.js';
import { seedContracts } from '../src/services/seedContracts.js';
import { setShopPlan } from '../src/services/shops.js';
import { createWebhookEndpoint } from '../src/services/webhookEndpoints.js';
import { systemResolve } from '../src/webhooks/addressGuard.js';
import type { Database } from '../src/db/client.js';
import { benchDatabase, buildServer, cpuMs, mean, median, pauseResumeRequests, startChild } from './support.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
/** The actions comparison: rounds of a run without an endpoint and a run with one, after a warm-up of each. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const ROUND_SECONDS = Number(process.env.BENCH_ROUND_SECONDS ?? 5);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3);
const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 5000);
const WAITING = Number(process.env.BENCH_WAITING ?? 100_000);
const CONTRACTS = 1000;
const CONNECTIONS = 50;
const RATE = 200;

/** The receiver: answers 200 at once, and keeps each delivery's latency (receipt − event time) and when it came. */
async function startReceiver() {
  const latencies: number[] = [];
  const times: number[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const now = Date.now();
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { timestamp: string };
      latencies.push(now - Date.parse(body.timestamp));
      times.push(now);
      res.writeHead(200).end('ok');
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, latencies, times, close: () => new Promise<void>((r) => server.close(() => r())) };
}

const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : NaN;
};

async function main() {
  const bench = await benchDatabase();
  const receiver = await startReceiver();
  const ctx = createServiceContext({ db: bench.db, clock: systemClock, freeUntil: null, webhookAddresses: { allowPrivate: true, resolve: systemResolve } });
  const shop = async (domain: string, endpoint: boolean) => {
    const s = await setShopPlan({ ctx, input: { domain, plan: 'enterprise' } });
    const { secret } = await generateKey({ ctx, input: { shopId: s.id, name: 'bench' } });
    if (endpoint) await createWebhookEndpoint({ ctx, input: { principal: adminPrincipal(s.id), body: { url: `${receiver.url}/hook` } } });
    const ids = (await seedContracts({ ctx, input: { shopId: s.id, count: CONTRACTS } })).map((c) => c.id);
    // paused: the contracts paused now, kept by every run that acts on the shop.
    return { shopId: s.id, auth: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }, ids, paused: new Set<string>() };
  };
  const withHook = await shop('bench-hooks.myshopify.com', true);
  const without = await shop('bench-plain.myshopify.com', false);

  const nodeArgs = buildServer();
  const env = {
    ...bench.env,
    HOST: '127.0.0.1',
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
    RATE_LIMIT_PER_MINUTE: '100000000',
    WEBHOOKS_ALLOW_PRIVATE: 'true',
  };
  console.log(`svc on ${bench.where}; receiver ${receiver.url}; node ${process.version}`);

  // 1. A backlog written with no dispatcher running, then sent by one instance.
  let svc = await startChild('dist/main.js', { ...env, SCHEDULER_ENABLED: 'false' }, nodeArgs);
  await autocannon({ url: svc.url, connections: CONNECTIONS, amount: BACKLOG, headers: withHook.auth, requests: [pauseResumeRequests(withHook.ids, { paused: withHook.paused })] });
  svc.child.kill('SIGTERM');
  await new Promise((r) => svc.child.once('exit', r));
  const backlogStart = receiver.times.length;
  const pgBefore = cpuMs({ name: 'postgres' });
  const meBefore = process.cpuUsage();
  svc = await startChild('dist/main.js', env, nodeArgs);
  const svcBefore = cpuMs({ pid: svc.child.pid! });
  const deadline = Date.now() + 120_000;
  while (receiver.times.length - backlogStart < BACKLOG && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  const sent = receiver.times.slice(backlogStart);
  const seconds = (sent[sent.length - 1] - sent[0]) / 1000;
  const deliveriesPerSec = Math.round(sent.length / seconds);
  const me = process.cpuUsage(meBefore);
  const perDelivery = (ms: number) => Math.round((ms * 1000) / sent.length);
  const cpu = { svc: perDelivery(cpuMs({ pid: svc.child.pid! }) - svcBefore), postgres: perDelivery(cpuMs({ name: 'postgres' }) - pgBefore), receiver: perDelivery((me.user + me.system) / 1000) };
  console.log(`backlog of ${BACKLOG}: ${sent.length} delivered in ${seconds.toFixed(2)} s → ${deliveriesPerSec} deliveries/s; cpu/delivery: svc ${cpu.svc} µs, postgres ${cpu.postgres} µs, receiver ${cpu.receiver} µs`);

  // 2. Commit to receipt at a steady 200 changes per second.
  const latencyStart = receiver.latencies.length;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 50 });
  const paused = withHook.paused;
  const busy = new Set<string>();
  const total = RATE * SECONDS;
  await new Promise<void>((resolve) => {
    let n = 0;
    const started = Date.now();
    const tickOnce = () => {
      const due = Math.min(total, Math.floor(((Date.now() - started) * RATE) / 1000));
      for (; n < due; n++) {
        const id = withHook.ids.find((x) => !busy.has(x) && Math.random() < 0.01) ?? withHook.ids[n % withHook.ids.length];
        busy.add(id);
        const body = paused.has(id) ? '{"action":"resume"}' : '{"action":"pause"}';
        const req = http.request(`${svc.url}/api/v1/subscription-contracts/${id}/actions`, { method: 'POST', agent, headers: withHook.auth }, (res) => {
          res.resume();
          res.on('end', () => {
            busy.delete(id);
            if (res.statusCode === 200 || res.statusCode === 409) {
              if (paused.has(id)) paused.delete(id);
              else paused.add(id);
            }
          });
        });
        req.end(body);
      }
      if (n < total) setTimeout(tickOnce, 2);
      else resolve();
    };
    tickOnce();
  });
  const latencyDeadline = Date.now() + 10_000;
  while (receiver.latencies.length - latencyStart < total && Date.now() < latencyDeadline) await new Promise((r) => setTimeout(r, 50));
  const latencies = receiver.latencies.slice(latencyStart);
  const latency = { p50: percentile(latencies, 50), p99: percentile(latencies, 99), delivered: latencies.length, of: total };
  console.log(`at ${RATE} changes/s for ${SECONDS} s: commit to receipt p50 ${latency.p50} ms, p99 ${latency.p99} ms (${latencies.length} of ${total} delivered)`);

  // 3. Actions with and without an enabled endpoint, alternating: after a warm-up of both, ROUNDS rounds of a run
  // without and a run with; the ratio is the median of the rounds' (this machine's speed moves within a minute).
  /** One run: actions per second, and the CPU each action cost svc and PostgreSQL. */
  const actions = async (s: typeof withHook, seconds: number) => {
    const before = { svc: cpuMs({ pid: svc.child.pid! }), postgres: cpuMs({ name: 'postgres' }) };
    const r = await autocannon({ url: svc.url, connections: CONNECTIONS, duration: seconds, headers: s.auth, requests: [pauseResumeRequests(s.ids, { paused: s.paused })] });
    const us = (ms: number) => Math.round((ms * 1000) / (r.requests.total || 1));
    return { rps: r.requests.average, cpu: `svc ${us(cpuMs({ pid: svc.child.pid! }) - before.svc)} µs, postgres ${us(cpuMs({ name: 'postgres' }) - before.postgres)} µs` };
  };
  await actions(without, WARMUP);
  await actions(withHook, WARMUP);
  const runs = { without: [] as number[], with: [] as number[] };
  for (let i = 0; i < ROUNDS; i++) {
    const a = await actions(without, ROUND_SECONDS);
    const b = await actions(withHook, ROUND_SECONDS);
    runs.without.push(a.rps);
    runs.with.push(b.rps);
    console.log(`actions/s without an endpoint ${Math.round(a.rps)} (cpu/action ${a.cpu}), with one ${Math.round(b.rps)} (cpu/action ${b.cpu}): ${(b.rps / a.rps).toFixed(3)}`);
  }
  // 4. A backlog sent while many more deliveries wait in the outbox and cannot go.
  svc.child.kill('SIGTERM');
  await new Promise((r) => svc.child.once('exit', r));
  svc = await startChild('dist/main.js', { ...env, SCHEDULER_ENABLED: 'false' }, nodeArgs);
  await autocannon({ url: svc.url, connections: CONNECTIONS, amount: BACKLOG, headers: withHook.auth, requests: [pauseResumeRequests(withHook.ids, { paused: withHook.paused })] });
  svc.child.kill('SIGTERM');
  await new Promise((r) => svc.child.once('exit', r));
  await writeWaiting(bench.db, withHook.shopId, `${receiver.url}/failing`);
  const waitingStart = receiver.times.length;
  const startedAt = Date.now();
  svc = await startChild('dist/main.js', env, nodeArgs);
  const waitingDeadline = Date.now() + 120_000;
  const healthy = () => receiver.times.length - waitingStart;
  while (healthy() < BACKLOG && Date.now() < waitingDeadline) await new Promise((r) => setTimeout(r, 50));
  const waitingSeconds = (receiver.times[receiver.times.length - 1] - startedAt) / 1000;
  const withWaiting = { waiting: WAITING, delivered: healthy(), seconds: Math.round(waitingSeconds * 100) / 100, deliveriesPerSec: Math.round(healthy() / waitingSeconds) };
  console.log(
    `backlog of ${BACKLOG} with ${WAITING} waiting (behind a failing receiver's retries, or for a disabled endpoint): ${withWaiting.delivered} delivered ` +
      `${withWaiting.seconds} s after the instance started → ${withWaiting.deliveriesPerSec} deliveries/s`,
  );

  const summary = {
    database: bench.where === 'PostgreSQL' ? 'postgres' : 'pglite',
    deliveriesPerSec,
    cpuPerDeliveryUs: cpu,
    commitToReceiptMs: { rate: RATE, p50: latency.p50, p99: latency.p99, delivered: latency.delivered, of: latency.of },
    actions: { without: Math.round(mean(runs.without)), withEndpoint: Math.round(mean(runs.with)), ratio: Math.round(median(runs.with.map((w, i) => w / runs.without[i])) * 1000) / 1000 },
    withWaiting,
  };
  // The schema is dropped only once svc has exited: dropping it under a running dispatcher can deadlock.
  svc.child.kill('SIGTERM');
  await new Promise((r) => svc.child.once('exit', r));
  await receiver.close();
  agent.destroy();
  await bench.db.close();
  await bench.cleanup();
  console.log(JSON.stringify(summary));
}

/**
 * WAITING deliveries that cannot go: half follow the first delivery of their contract to a failing receiver, which
 * waits for its next attempt an hour away (as after a few failures); half are for a disabled endpoint. All were
 * due ten minutes ago, so they come first in the outbox's order.
 */
async function writeWaiting(db: Database, shopId: string, failingUrl: string): Promise<void> {
  await db.withSession(async (run) => {
    const endpoint = (status: string) =>
      run<{ id: string }>(
        `INSERT INTO webhook_endpoints (shop_id, url, events, status, disabled_reason, disabled_at, secret, created_at, updated_at)
         VALUES ($1, $2, '{*}', $3, $4, $5, 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', now(), now()) RETURNING id`,
        [shopId, failingUrl, status, status === 'enabled' ? null : 'manual', status === 'enabled' ? null : new Date()],
      );
    const [failing] = await endpoint('enabled');
    const [disabled] = await endpoint('disabled');
    const half = Math.floor(WAITING / 2);
    const heads = Math.min(1000, half);
    await run(
      `INSERT INTO webhook_deliveries (endpoint_id, shop_id, contract_id, type, contract, attempts, next_attempt_at, created_at)
       SELECT $1, $2, g % $4, 'contract.paused', '{}', CASE WHEN g < $4 THEN 3 ELSE 0 END,
              CASE WHEN g < $4 THEN now() + interval '1 hour' ELSE now() - interval '10 minutes' END, now() - interval '20 minutes'
         FROM generate_series(0, $3 - 1) g`,
      [failing.id, shopId, half, heads],
    );
    await run(
      `INSERT INTO webhook_deliveries (endpoint_id, shop_id, contract_id, type, contract, next_attempt_at, created_at)
       SELECT $1, $2, g, 'contract.paused', '{}', now() - interval '10 minutes', now() - interval '20 minutes' FROM generate_series(0, $3 - 1) g`,
      [disabled.id, shopId, WAITING - half],
    );
    await run('ANALYZE webhook_deliveries');
  });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
