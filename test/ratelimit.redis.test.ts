import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newRawKey } from '../src/domain/keys.js';
import { connectRedis, RedisRateLimitStore } from '../src/http/rateLimitStore.js';
import { bearer, startTestApp, TestClock, type TestApp } from './support/app.js';
import { createTestDatabase, type TestDatabase } from './support/db.js';
import { API, expectError } from './support/fixtures.js';
import { REDIS_URL, redisReachable } from './support/redis.js';

/**
 * Rate limits on Redis (REDIS_URL): the counters live in Redis, so two app instances share one budget per shop and
 * one allowance of failed lookups per IP. Each test file run uses its own key prefix. Without a Redis at
 * 127.0.0.1:6379 the file is skipped, except in CI, where that is a failure.
 */


const redisUp = await redisReachable(REDIS_URL);
if (!redisUp) {
  if (process.env.CI) throw new Error(`Redis is not reachable at ${REDIS_URL}, and CI needs the Redis rate-limit tests to run.`);
  console.log(`[svc tests] SKIPPED test/ratelimit.redis.test.ts: no Redis at ${REDIS_URL} (start one, or set TEST_REDIS_URL)`);
}

const PER_SHOP = 4;
const FAILURES = 2;

describe.skipIf(!redisUp)('rate limits shared through Redis', () => {
  const prefix = `svc-test:${process.pid}:${randomBytes(4).toString('hex')}:`;
  const clients: Redis[] = [];
  const clock = new TestClock(new Date('2026-11-22T10:00:00.000Z'));
  let database: TestDatabase;
  let a: TestApp;
  let b: TestApp;
  let inspect: Redis;

  const instance = (store: RedisRateLimitStore, warnings?: string[]) =>
    startTestApp({
      clock,
      database,
      appDeps: {
        rateLimit: {
          perMinute: PER_SHOP,
          authFailuresPerMinute: FAILURES,
          store,
          onStoreError: (err) => warnings?.push(err.message),
        },
      },
    });
  const redisStore = (url = REDIS_URL) => {
    const client = connectRedis(url, () => {});
    clients.push(client);
    return new RedisRateLimitStore(client, prefix);
  };

  beforeAll(async () => {
    database = await createTestDatabase();
    inspect = new Redis(REDIS_URL);
    a = await instance(redisStore());
    b = await instance(redisStore());
    // Let both clients finish connecting: commands fail fast (and each limiter counts in its own memory) until then.
    await Promise.all(clients.filter((c) => c.status !== 'ready').map((c) => new Promise((r) => c.once('ready', r))));
  });
  afterAll(async () => {
    const keys = await inspect.keys(`${prefix}*`);
    if (keys.length) await inspect.del(...keys);
    inspect.disconnect();
    await b?.close();
    await a?.close();
    for (const c of clients) c.disconnect();
    await database?.drop();
  });

  function nextWindow() {
    clock.set(new Date(Math.floor(clock.now().getTime() / 60_000) * 60_000 + 60_000));
  }

  it('two instances share one budget per shop', async () => {
    nextWindow();
    const s = await a.shopWithKey();
    const remaining = [];
    for (let i = 0; i < PER_SHOP; i++) {
      const res = await (i % 2 ? b : a).inject({ url: API, headers: bearer(s.key) });
      expect(res.statusCode).toBe(200);
      remaining.push(res.headers['ratelimit-remaining']);
    }
    expect(remaining).toEqual(['3', '2', '1', '0']);
    expectError(await a.inject({ url: API, headers: bearer(s.key) }), 429, 'rate_limited');
    expectError(await b.inject({ url: API, headers: bearer(s.key) }), 429, 'rate_limited');

    // The counter is in Redis, under the prefix, and expires by itself after its window.
    const keys = await inspect.keys(`${prefix}shop:${s.shopId}:*`);
    expect(keys).toHaveLength(1);
    const ttl = await inspect.pttl(keys[0]);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(65_000);

    nextWindow();
    expect((await b.inject({ url: API, headers: bearer(s.key) })).statusCode).toBe(200);
  });

  it('failed lookups on one instance close the door on the other', async () => {
    nextWindow();
    const s = await a.shopWithKey();
    const ip = '203.0.113.50';
    for (let i = 0; i < FAILURES; i++) expectError(await a.inject({ url: API, headers: bearer(newRawKey()), remoteAddress: ip }), 401, 'unauthorized');
    expectError(await b.inject({ url: API, headers: bearer(s.key), remoteAddress: ip }), 429, 'rate_limited');
    expect((await b.inject({ url: API, headers: bearer(s.key), remoteAddress: '203.0.113.51' })).statusCode).toBe(200);
  });

  it('100 requests at once with unknown keys, spread over both instances: no more lookups than the allowance', async () => {
    nextWindow();
    const ip = '203.0.113.52';
    const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => (i % 2 ? a : b).inject({ url: API, headers: bearer(newRawKey()), remoteAddress: ip })));
    const statuses = answers.map((r) => r.statusCode);
    expect(statuses.filter((s) => s === 401)).toHaveLength(FAILURES);
    expect(statuses.filter((s) => s === 429)).toHaveLength(100 - FAILURES);
  });
});
