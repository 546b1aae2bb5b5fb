import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../src/db/client.js';
import { newRawKey } from '../src/domain/keys.js';
import { connectRedis, MemoryRateLimitStore, RedisRateLimitStore } from '../src/http/rateLimitStore.js';
import { revokeKey } from '../src/services/revokeKey.js';
import { setShopPlan } from '../src/services/shops.js';
import { generateKey } from '../src/services/generateKey.js';
import { bearer, startTestApp, TestClock, type TestApp } from './support/app.js';
import { createTestDatabase, type TestDatabase } from './support/db.js';
import { API, contractRow, expectError } from './support/fixtures.js';

/**
 * Rate limits with the in-memory store (docs/product.md §2, §8): requests per shop, checked after the key and the plan;
 * failed key lookups per client IP, refused before any database query. Small limits, and the clock moves instead
 * of the test sleeping.
 */

const PER_SHOP = 5;
const FAILURES = 3;

/** The test database seen through a counter of every use the app makes of it. */
function countingDatabase(db: Database): { db: Database; uses: () => number } {
  let uses = 0;
  const wrapped = Object.create(db, {
    orm: { get: () => (uses++, db.orm) },
    withSession: { value: (fn: Parameters<Database['withSession']>[0]) => (uses++, db.withSession(fn)) },
    // The hot statements (key lookups among them) run through prepared().
    prepared: { value: (...args: Parameters<Database['prepared']>) => (uses++, db.prepared(...args)) },
    transaction: { value: (fn: Parameters<Database['transaction']>[0]) => (uses++, db.transaction(fn)) },
  }) as Database;
  return { db: wrapped, uses: () => uses };
}

let database: TestDatabase;
let counting: ReturnType<typeof countingDatabase>;
let clock: TestClock;
let t: TestApp;
beforeAll(async () => {
  database = await createTestDatabase();
  counting = countingDatabase(database.db);
  clock = new TestClock(new Date('2026-11-22T10:00:00.000Z'));
  t = await startTestApp({
    clock,
    database: { ...database, db: counting.db },
    appDeps: { rateLimit: { perMinute: PER_SHOP, authFailuresPerMinute: FAILURES, store: new MemoryRateLimitStore(clock) } },
  });
});
afterAll(async () => {
  await t.close();
  await database.drop();
});

/** Starts each test at the beginning of a fresh one-minute window. */
function nextWindow() {
  clock.set(new Date(Math.floor(clock.now().getTime() / 60_000) * 60_000 + 60_000));
}

const limitHeaders = (res: { headers: Record<string, unknown> }) => ({
  limit: res.headers['ratelimit-limit'],
  remaining: res.headers['ratelimit-remaining'],
  reset: res.headers['ratelimit-reset'],
});

/** A well-formed key (valid checksum) that no shop has. */
const strangerKey = () => newRawKey();

describe('per shop', () => {
  it('counts every API request of the shop, says so in RateLimit-* headers, and answers 429 past the limit', async () => {
    nextWindow();
    const { key, shopId } = await t.shopWithKey();
    const [c] = await t.seed(shopId, 1);
    clock.advance(20_000);
    const seen = [];
    for (let i = 0; i < PER_SHOP; i++) {
      const res = i % 2 ? await t.inject({ url: `${API}/${c.id}`, headers: bearer(key) }) : await t.inject({ url: API, headers: bearer(key) });
      expect(res.statusCode).toBe(200);
      seen.push(limitHeaders(res));
    }
    expect(seen.map((h) => h.remaining)).toEqual(['4', '3', '2', '1', '0']);
    expect(seen.every((h) => h.limit === String(PER_SHOP) && h.reset === '40')).toBe(true);

    const over = await t.inject({ method: 'POST', url: `${API}/${c.id}/actions`, headers: bearer(key), payload: { action: 'cancel' } });
    const err = expectError(over, 429, 'rate_limited');
    expect(err.message).toMatch(/40 s/);
    expect(over.headers['retry-after']).toBe('40');
    expect(limitHeaders(over)).toEqual({ limit: '5', remaining: '0', reset: '40' });
    // Refused before the operation: the cancel did not happen.
    expect((await contractRow(t, c.id)).status).toBe('ACTIVE');

    clock.advance(40_000);
    const fresh = await t.inject({ url: API, headers: bearer(key) });
    expect(fresh.statusCode).toBe(200);
    expect(limitHeaders(fresh)).toEqual({ limit: '5', remaining: '4', reset: '60' });
  });

  it('an unknown API route or a wrong method is a request of the API: key first (401 without one), then 404/405 with the shop\'s headers', async () => {
    nextWindow();
    const s = await t.shopWithKey();
    expectError(await t.inject({ url: `${API}/1/nope` }), 401, 'unauthorized');
    expectError(await t.inject({ url: '/api/v1/nope', headers: bearer(newRawKey()) }), 401, 'unauthorized');
    const unknown = await t.inject({ url: `${API}/1/nope`, headers: bearer(s.key) });
    expectError(unknown, 404, 'not_found');
    expect(unknown.headers['ratelimit-limit']).toBe(String(PER_SHOP));
    expect(unknown.headers['ratelimit-remaining']).toBe(String(PER_SHOP - 1));
    const wrongMethod = await t.inject({ method: 'DELETE', url: `${API}/1`, headers: bearer(s.key) });
    expectError(wrongMethod, 405, 'method_not_allowed');
    expect(wrongMethod.headers['ratelimit-remaining']).toBe(String(PER_SHOP - 2));
    // Outside the API, nothing changes: a plain 404 without a key.
    expectError(await t.inject({ url: '/nope' }), 404, 'not_found');
  });

  it('is one budget per shop: another key of the shop shares it, another shop does not', async () => {
    nextWindow();
    const a = await t.shopWithKey();
    const { secret: second } = await generateKey({ ctx: t.ctx, input: { shopId: a.shopId, name: 'second' } });
    const b = await t.shopWithKey();
    for (let i = 0; i < PER_SHOP; i++) expect((await t.inject({ url: API, headers: bearer(i % 2 ? second : a.key) })).statusCode).toBe(200);
    expectError(await t.inject({ url: API, headers: bearer(second) }), 429, 'rate_limited');
    const other = await t.inject({ url: API, headers: bearer(b.key) });
    expect(other.statusCode).toBe(200);
    expect(other.headers['ratelimit-remaining']).toBe('4');
  });

  it('comes after the key and the plan: a shop over its limit still gets 401/403 for those, and they cost it nothing', async () => {
    nextWindow();
    const s = await t.shopWithKey();
    for (let i = 0; i < PER_SHOP; i++) await t.inject({ url: API, headers: bearer(s.key) });
    expectError(await t.inject({ url: API, headers: bearer(s.key) }), 429, 'rate_limited');
    await setShopPlan({ ctx: t.ctx, input: { domain: s.domain, plan: 'basic' } });
    expectError(await t.inject({ url: API, headers: bearer(s.key) }), 403, 'plan_required');
    await setShopPlan({ ctx: t.ctx, input: { domain: s.domain, plan: 'enterprise' } });
    expectError(await t.inject({ url: API, headers: bearer(s.key) }), 429, 'rate_limited');

    nextWindow();
    const fresh = await t.shopWithKey();
    await setShopPlan({ ctx: t.ctx, input: { domain: fresh.domain, plan: 'basic' } });
    for (let i = 0; i < PER_SHOP + 2; i++) expectError(await t.inject({ url: API, headers: bearer(fresh.key) }), 403, 'plan_required');
    await setShopPlan({ ctx: t.ctx, input: { domain: fresh.domain, plan: 'enterprise' } });
    expect((await t.inject({ url: API, headers: bearer(fresh.key) })).headers['ratelimit-remaining']).toBe('4');
  });

  it('a read-only key asking for a change gets 403 insufficient_scope with the shop\'s headers, and it costs the shop nothing', async () => {
    nextWindow();
    const s = await t.shopWithKey('enterprise', { access: 'read_only' });
    const [c] = await t.seed(s.shopId, 1);
    expect((await t.inject({ url: API, headers: bearer(s.key) })).headers['ratelimit-remaining']).toBe(String(PER_SHOP - 1));
    // An action, an edit and a webhook endpoint, with and without an Idempotency-Key (the gate confirms the key on
    // two paths): each refused, each showing the budget as it stands.
    const changes = [
      { method: 'POST' as const, url: `${API}/${c.id}/actions`, payload: { action: 'skip' } },
      { method: 'POST' as const, url: `${API}/${c.id}/edits`, payload: { operations: [{ op: 'remove_discount', discountId: 'x' }] } },
      { method: 'POST' as const, url: '/api/v1/webhook-endpoints', payload: { url: 'https://example.com/hook' } },
    ];
    for (const change of changes) {
      for (const idem of [{}, { 'idempotency-key': `k-${change.url}` }]) {
        const res = await t.inject({ ...change, headers: { ...bearer(s.key), ...idem } });
        expectError(res, 403, 'insufficient_scope');
        expect(limitHeaders(res)).toEqual({ limit: String(PER_SHOP), remaining: String(PER_SHOP - 1), reset: expect.stringMatching(/^\d+$/) });
      }
    }
    expect((await t.inject({ url: API, headers: bearer(s.key) })).headers['ratelimit-remaining']).toBe(String(PER_SHOP - 2));
  });

  it('also covers MCP at /mcp: one budget for the shop over both surfaces', async () => {
    nextWindow();
    const s = await t.shopWithKey();
    const mcp = (key: string) =>
      t.inject({
        method: 'POST',
        url: '/mcp',
        headers: { ...bearer(key), accept: 'application/json, text/event-stream', 'content-type': 'application/json' },
        payload: { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} },
      });
    expect((await t.inject({ url: API, headers: bearer(s.key) })).headers['ratelimit-remaining']).toBe('4');
    const viaMcp = await mcp(s.key);
    expect(viaMcp.statusCode).toBeLessThan(500);
    expect(viaMcp.headers['ratelimit-remaining']).toBe('3');
    for (let i = 0; i < 3; i++) await t.inject({ url: API, headers: bearer(s.key) });
    const over = await mcp(s.key);
    expectError(over, 429, 'rate_limited');
    expect(over.headers['retry-after']).toBeDefined();
  });

  it('is not applied to the admin API, health or the OpenAPI document', async () => {
    nextWindow();
    for (const url of ['/healthz', '/api/v1/openapi.json']) {
      const res = await t.inject({ url });
      expect(res.statusCode).toBe(200);
      expect(res.headers['ratelimit-limit']).toBeUndefined();
    }
  });
});

describe('failed authentications per client IP', () => {
  it('after the allowance of failed lookups, a well-formed key from that IP is refused with 429 before any query', async () => {
    nextWindow();
    const s = await t.shopWithKey();
    const ip = '203.0.113.7';
    const from = (key: string, remoteAddress = ip) => t.inject({ url: API, headers: bearer(key), remoteAddress });

    const remaining = [];
    for (let i = 0; i < FAILURES; i++) {
      const res = await from(strangerKey());
      expectError(res, 401, 'unauthorized');
      remaining.push(res.headers['ratelimit-remaining']);
      expect(res.headers['ratelimit-limit']).toBe(String(FAILURES));
    }
    expect(remaining).toEqual(['2', '1', '0']);

    const before = counting.uses();
    const sprayed = await from(strangerKey());
    const err = expectError(sprayed, 429, 'rate_limited');
    expect(err.message).toMatch(/failed authentications/);
    expect(Number(sprayed.headers['retry-after'])).toBeGreaterThan(0);
    // Even the shop's valid key waits: refusing it costs no lookup either.
    expectError(await from(s.key), 429, 'rate_limited');
    expect(counting.uses()).toBe(before);

    // A malformed key is refused by its checksum (401, no I/O) and is not what is limited.
    expectError(await from(s.key.slice(0, -1) + (s.key.endsWith('A') ? 'B' : 'A')), 401, 'unauthorized');
    expectError(await from('nonsense'), 401, 'unauthorized');
    expect(counting.uses()).toBe(before);

    // Other addresses are not affected, and the next window starts afresh.
    expect((await from(s.key, '198.51.100.9')).statusCode).toBe(200);
    expect(counting.uses()).toBeGreaterThan(before); // the counter does see a lookup
    nextWindow();
    expect((await from(s.key)).statusCode).toBe(200);
  });

  it('counts revoked keys as failures; successful, malformed and missing keys are not counted', async () => {
    nextWindow();
    const ip = '203.0.113.8';
    const s = await t.shopWithKey();
    const { key: revokedMeta, secret: revoked } = await generateKey({ ctx: t.ctx, input: { shopId: s.shopId, name: 'old' } });
    await revokeKey({ ctx: t.ctx, input: { shopId: s.shopId, keyId: revokedMeta.id } });
    const from = (headers: Record<string, string>) => t.inject({ url: API, headers, remoteAddress: ip });

    for (let i = 0; i < 10; i++) {
      await from(bearer(s.key));
      await from({});
      await from(bearer('svc_live_short'));
    }
    for (let i = 0; i < FAILURES; i++) expectError(await from(bearer(revoked)), 401, 'unauthorized');
    expectError(await from(bearer(s.key)), 429, 'rate_limited');
  });

  it('250 requests at once with unknown keys from one address: no more lookups than the allowance', async () => {
    nextWindow();
    const ip = '203.0.113.9';
    const answers = await Promise.all(Array.from({ length: 250 }, () => t.inject({ url: API, headers: bearer(strangerKey()), remoteAddress: ip })));
    const statuses = answers.map((a) => a.statusCode);
    // Every 401 is a key the database was asked about; a 429 was refused before any lookup.
    expect(statuses.filter((s) => s === 401)).toHaveLength(FAILURES);
    expect(statuses.filter((s) => s === 429)).toHaveLength(250 - FAILURES);
  });

  it('a key that turns out valid gives back the failure counted before its lookup', async () => {
    nextWindow();
    const ip = '203.0.113.10';
    const from = (key: string) => t.inject({ url: API, headers: bearer(key), remoteAddress: ip });
    for (let i = 0; i < FAILURES - 1; i++) expectError(await from(strangerKey()), 401, 'unauthorized');
    // Keys this app has never seen (each is looked up), all valid: none uses up the one failure left.
    for (let i = 0; i < 4; i++) expect((await from((await t.shopWithKey()).key)).statusCode).toBe(200);
    const last = await from(strangerKey());
    expectError(last, 401, 'unauthorized');
    expect(last.headers['ratelimit-remaining']).toBe('0');
    expectError(await from(strangerKey()), 429, 'rate_limited');
  });

  it('uses the address the trusted proxy reports when TRUST_PROXY is set', async () => {
    nextWindow();
    const proxied = await startTestApp({
      clock,
      database,
      appDeps: {
        trustProxy: ['127.0.0.1'],
        rateLimit: { perMinute: PER_SHOP, authFailuresPerMinute: FAILURES, store: new MemoryRateLimitStore(clock) },
      },
    });
    try {
      const s = await proxied.shopWithKey();
      const via = (client: string, key: string) => proxied.inject({ url: API, headers: { ...bearer(key), 'x-forwarded-for': client } });
      for (let i = 0; i < FAILURES; i++) await via('192.0.2.1', strangerKey());
      expectError(await via('192.0.2.1', s.key), 429, 'rate_limited');
      expect((await via('192.0.2.2', s.key)).statusCode).toBe(200);
    } finally {
      await proxied.close();
    }
  });
});

describe('without limits configured', () => {
  it('an app built without rate limits sends no RateLimit headers and never answers 429', async () => {
    const plain = await startTestApp({ clock, database });
    try {
      const s = await plain.shopWithKey();
      for (let i = 0; i < PER_SHOP + 3; i++) {
        const res = await plain.inject({ url: API, headers: bearer(s.key) });
        expect(res.statusCode).toBe(200);
        expect(res.headers['ratelimit-limit']).toBeUndefined();
      }
    } finally {
      await plain.close();
    }
  });
});

describe('with Redis configured but unreachable', () => {
  it('both limits still hold, counted in this process, and the trouble is reported: never unlimited', async () => {
    nextWindow();
    const warnings: string[] = [];
    // A closed port: every command fails at once.
    const client = connectRedis('redis://127.0.0.1:1', () => {});
    const down = await startTestApp({
      clock,
      database,
      appDeps: {
        rateLimit: {
          perMinute: PER_SHOP,
          authFailuresPerMinute: FAILURES,
          store: new RedisRateLimitStore(client, 'svc-test-down:'),
          onStoreError: (err) => warnings.push(err.message),
        },
      },
    });
    try {
      const ip = '198.51.100.77';
      const s = await down.shopWithKey();
      for (let i = 0; i < FAILURES; i++) expectError(await down.inject({ url: API, headers: bearer(strangerKey()), remoteAddress: ip }), 401, 'unauthorized');
      const refused = await down.inject({ url: API, headers: bearer(s.key), remoteAddress: ip });
      expectError(refused, 429, 'rate_limited');
      expect(refused.headers['retry-after']).toBeDefined();
      for (let i = 0; i < PER_SHOP; i++) expect((await down.inject({ url: API, headers: bearer(s.key) })).statusCode).toBe(200);
      expectError(await down.inject({ url: API, headers: bearer(s.key) }), 429, 'rate_limited');
      expect(warnings.length).toBeGreaterThan(0);
    } finally {
      await down.close();
      client.disconnect();
    }
  });
});
