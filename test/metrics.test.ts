import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newRawKey } from '../src/domain/keys.js';
import { MemoryRateLimitStore } from '../src/http/rateLimitStore.js';
import { ResumeSweep } from '../src/workers/resumeSweep.js';
import { generateKey } from '../src/services/generateKey.js';
import { revokeKey } from '../src/services/revokeKey.js';
import { bearer, startTestApp, TestClock, type TestApp } from './support/app.js';
import { createTestDatabase, onPostgres, type TestDatabase } from './support/db.js';
import { API, expectError } from './support/fixtures.js';

/**
 * GET /metrics (docs/product.md §8): Prometheus text with requests by route pattern and status, latency, auth failures by
 * reason, 429s, idempotency outcomes, the scheduler's work and the database pool; nothing secret in any label.
 */

type Sample = { name: string; labels: Record<string, string>; value: number };

function parse(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not Prometheus text: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[k] = v;
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

/** The value of one series (0 when absent). */
function value(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const s = samples.find((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
  return s?.value ?? 0;
}

let database: TestDatabase;
let clock: TestClock;
let t: TestApp;
let scheduler: ResumeSweep;
beforeAll(async () => {
  database = await createTestDatabase();
  clock = new TestClock();
  // The scheduler's stats are read at scrape time; it is created after the app, as in main.
  let stats = () => scheduler.stats;
  t = await startTestApp({
    clock,
    database,
    appDeps: {
      metrics: { schedulerStats: () => stats(), processMetrics: true },
      rateLimit: { perMinute: 3, authFailuresPerMinute: 2, store: new MemoryRateLimitStore(clock) },
    },
  });
  scheduler = new ResumeSweep(t.ctx, { intervalMs: 1000 });
  stats = () => scheduler.stats;
});
afterAll(async () => {
  await t.close();
  await database.drop();
});

async function scrape(app: TestApp = t, headers: Record<string, string> = {}) {
  const res = await app.inject({ url: '/metrics', headers });
  expect(res.statusCode).toBe(200);
  expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
  return { text: res.body, samples: parse(res.body) };
}

describe('GET /metrics', () => {
  it('counts requests by route pattern and status, with a latency histogram; unknown URLs are one series', async () => {
    const s = await t.shopWithKey();
    const [c] = await t.seed(s.shopId, 1);
    const route = '/api/v1/subscription-contracts/:contract_id';
    const before = (await scrape()).samples;
    await t.inject({ url: `${API}/${c.id}`, headers: bearer(s.key) });
    await t.inject({ url: `${API}/999999999`, headers: bearer(s.key) });
    await t.inject({ url: '/no/such/thing-1' });
    await t.inject({ url: '/no/such/thing-2' });
    const { text, samples } = await scrape();

    expect(value(samples, 'http_requests_total', { method: 'GET', route, status: '200' }) - value(before, 'http_requests_total', { method: 'GET', route, status: '200' })).toBe(1);
    expect(value(samples, 'http_requests_total', { method: 'GET', route, status: '404' }) - value(before, 'http_requests_total', { method: 'GET', route, status: '404' })).toBe(1);
    expect(value(samples, 'http_requests_total', { method: 'GET', route: 'unmatched', status: '404' })).toBeGreaterThanOrEqual(2);
    expect(value(samples, 'http_request_duration_seconds_count', { method: 'GET', route, status: '200' })).toBeGreaterThanOrEqual(1);
    expect(value(samples, 'http_request_duration_seconds_bucket', { method: 'GET', route, status: '200', le: '+Inf' })).toBeGreaterThanOrEqual(1);
    // The route pattern, never the URL: no id, no path a client chose, in any label.
    const labelValues = samples.flatMap((x) => Object.values(x.labels));
    expect(labelValues.filter((v) => v.includes(c.id) || v.includes('999999999'))).toEqual([]);
    expect(text).not.toContain('thing-1');
  });

  it('counts refused authentications by reason, with no key, shop or fingerprint in any label', async () => {
    const s = await t.shopWithKey();
    const { key: meta, secret: revoked } = await generateKey({ ctx: t.ctx, input: { shopId: s.shopId, name: 'old' } });
    await revokeKey({ ctx: t.ctx, input: { shopId: s.shopId, keyId: meta.id } });
    const basic = await t.shopWithKey('basic');
    const before = (await scrape()).samples;
    const asIp = (headers: Record<string, string>, ip: string) => t.inject({ url: API, headers, remoteAddress: ip });
    await asIp({}, '192.0.2.10');
    await asIp(bearer('svc_live_nonsense'), '192.0.2.10');
    await asIp(bearer(s.key.slice(0, -6) + 'AAAAAA'), '192.0.2.11');
    await asIp(bearer(newRawKey()), '192.0.2.12');
    await asIp(bearer(revoked), '192.0.2.12');
    await asIp(bearer(basic.key), '192.0.2.13');
    const { text, samples } = await scrape();
    const delta = (reason: string) => value(samples, 'svc_auth_failures_total', { reason }) - value(before, 'svc_auth_failures_total', { reason });
    // A forged checksum is malformed too: it never reaches the lookup.
    expect(Object.fromEntries(['missing', 'malformed', 'unknown', 'revoked', 'plan_required'].map((r) => [r, delta(r)]))).toEqual({
      missing: 1,
      malformed: 2,
      unknown: 1,
      revoked: 1,
      plan_required: 1,
    });
    for (const secret of [s.key, revoked, basic.key, s.fingerprint, s.domain, basic.domain, 'svc_live_']) expect(text).not.toContain(secret);
  });

  it('counts 429s by limit and idempotency outcomes', async () => {
    const s = await t.shopWithKey();
    const [c] = await t.seed(s.shopId, 1);
    const before = (await scrape()).samples;
    const act = () =>
      t.inject({ method: 'POST', url: `${API}/${c.id}/actions`, headers: { ...bearer(s.key), 'idempotency-key': 'metrics-1' }, payload: { action: 'skip' } });
    expect((await act()).statusCode).toBe(200);
    expect((await act()).headers['idempotent-replayed']).toBe('true');
    expect((await act()).statusCode).toBe(200);
    expectError(await act(), 429, 'rate_limited');
    const { samples } = await scrape();
    const delta = (name: string, labels: Record<string, string>) => value(samples, name, labels) - value(before, name, labels);
    expect(delta('svc_rate_limited_total', { limit: 'shop' })).toBe(1);
    expect(delta('svc_idempotency_requests_total', { outcome: 'executed' })).toBe(1);
    expect(delta('svc_idempotency_requests_total', { outcome: 'replayed' })).toBe(2);
  });

  it('reports the scheduler\'s sweeps, resumes and lag through the stats it is given', async () => {
    const s = await t.shopWithKey();
    const [c] = await t.seed(s.shopId, 1);
    const resumeAt = new Date(clock.now().getTime() + 3_600_000).toISOString();
    expect((await t.inject({ method: 'POST', url: `${API}/${c.id}/actions`, headers: bearer(s.key), payload: { action: 'pause', resumeAt } })).statusCode).toBe(200);
    clock.advance(3_600_000 + 1500);
    await scheduler.tick();
    const { samples } = await scrape();
    expect(value(samples, 'svc_scheduler_ticks_total')).toBe(1);
    expect(value(samples, 'svc_scheduler_resumed_total')).toBe(1);
    expect(value(samples, 'svc_scheduler_failures_total')).toBe(0);
    expect(value(samples, 'svc_scheduler_resume_lag_seconds')).toBe(1.5);
  });

  it('reports the PostgreSQL pool (total, idle, waiting, max); the embedded database has no pool', async () => {
    const { samples } = await scrape();
    const pool = samples.filter((x) => x.name === 'svc_db_pool_connections');
    if (onPostgres()) {
      expect(pool.map((x) => x.labels.state).sort()).toEqual(['idle', 'max', 'total', 'waiting']);
      expect(value(samples, 'svc_db_pool_connections', { state: 'total' })).toBeGreaterThanOrEqual(1);
      expect(value(samples, 'svc_db_pool_connections', { state: 'max' })).toBe(10);
    } else {
      expect(pool).toEqual([]);
    }
  });

  it('counts the hot statements and the callers they served: concurrent GETs share one statement', async () => {
    const s = await t.shopWithKey();
    // Two at once (this app allows a shop 3 requests a minute), after a first that makes the key known.
    const contracts = await t.seed(s.shopId, 2);
    await t.inject({ url: `${API}/${contracts[0].id}`, headers: bearer(s.key) });
    const before = (await scrape()).samples;
    const gets = await Promise.all(contracts.map((c) => t.inject({ url: `${API}/${c.id}`, headers: bearer(s.key) })));
    expect(gets.map((g) => g.statusCode)).toEqual(contracts.map(() => 200));
    const { samples } = await scrape();
    const delta = (name: string) => value(samples, name, { statement: 'contractTextsWithKeyStates' }) - value(before, name, { statement: 'contractTextsWithKeyStates' });
    expect(delta('svc_db_batched_statements_total')).toBe(1);
    expect(delta('svc_db_batched_inputs_total')).toBe(2);
  });

  it('includes the Node process metrics', async () => {
    const { samples } = await scrape();
    expect(value(samples, 'process_cpu_seconds_total')).toBeGreaterThan(0);
    expect(samples.some((x) => x.name === 'nodejs_eventloop_lag_seconds')).toBe(true);
  });

  it('keeps one registry per app: two apps in one process count separately', async () => {
    const other = await startTestApp({ clock, database });
    try {
      const before = value((await scrape(other)).samples, 'http_requests_total', { route: '/healthz' });
      await t.inject({ url: '/healthz' });
      await t.inject({ url: '/healthz' });
      expect(value((await scrape(other)).samples, 'http_requests_total', { route: '/healthz' })).toBe(before);
    } finally {
      await other.close();
    }
  });
});

describe('METRICS_TOKEN', () => {
  it('when set, /metrics needs it as a bearer token; the error is the usual envelope', async () => {
    const token = 'metrics-token-0123456789';
    const guarded = await startTestApp({ clock, database, appDeps: { metrics: { token } } });
    try {
      const none = await guarded.inject({ url: '/metrics' });
      expectError(none, 401, 'unauthorized');
      expect(none.headers['www-authenticate']).toBe('Bearer');
      expectError(await guarded.inject({ url: '/metrics', headers: { authorization: 'Bearer metrics-token-wrong' } }), 401, 'unauthorized');
      await scrape(guarded, { authorization: `Bearer ${token}` });
    } finally {
      await guarded.close();
    }
  });
});
