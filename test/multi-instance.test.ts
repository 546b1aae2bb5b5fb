import { randomInt } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq, inArray } from 'drizzle-orm';
import { apiKeys, contractEvents, contracts } from '../src/db/schema.js';
import { addInterval } from '../src/domain/time.js';
import { createServiceContext, systemClock, type ServiceContext } from '../src/services/context.js';
import { generateKey } from '../src/services/generateKey.js';
import { seedContracts } from '../src/services/seedContracts.js';
import { signSessionToken } from '../src/services/sessionTokens.js';
import { setShopPlan } from '../src/services/shops.js';
import { uniqueShop } from './support/app.js';
import { createTestDatabase, type TestDatabase } from './support/db.js';
import { API } from './support/fixtures.js';
import { call, holdRowLock, needsPostgres, PROCESS_CREDENTIALS, startServer, stopAllServers, type ServerProcess } from './support/processes.js';
import { REDIS_URL, redisReachable } from './support/redis.js';
import { approveAuthorization, checkAuthorizationRequest } from '../src/services/oauth/authorize.js';
import { registerClient } from '../src/services/oauth/clients.js';
import { exchangeCode } from '../src/services/oauth/tokens.js';
import { pkce } from './support/oauth.js';

const SHARED_URL = 'https://svc.example';


// Only asked when the processes can run at all (PostgreSQL); the Redis test below needs it.
const redisUp = process.env.TEST_DATABASE_URL ? await redisReachable(REDIS_URL) : false;
if (process.env.TEST_DATABASE_URL && !redisUp && !process.env.CI) {
  console.log(`[svc tests] skipped the shared rate-limit test of test/multi-instance.test.ts: no Redis at ${REDIS_URL} (start one, or set TEST_REDIS_URL)`);
}

/**
 * Two real server processes on one PostgreSQL schema: what one instance does, the other sees at once, and the
 * invariants that rows and locks guard (key limit, exactly-once resume, serialised actions) hold across processes.
 * The children run on the system clock, so the scheduled resume is waited for in real time (about 1.5 s). With
 * Redis (REDIS_URL), two more instances share one rate-limit budget per shop.
 */
describe.skipIf(needsPostgres('test/multi-instance.test.ts'))('several instances on one PostgreSQL', { timeout: 60_000 }, () => {
  let database: TestDatabase;
  let ctx: ServiceContext;
  let a: ServerProcess;
  let b: ServerProcess;

  beforeAll(async () => {
    database = await createTestDatabase();
    ctx = createServiceContext({ db: database.db, clock: systemClock, freeUntil: null });
    // Both sweep often, so both are really racing for the same due contracts.
    // One PUBLIC_URL for both, as behind a load balancer: OAuth tokens are bound to that resource (its /mcp).
    const env = { SCHEDULER_INTERVAL_MS: '100', PUBLIC_URL: SHARED_URL };
    [a, b] = await Promise.all([startServer({ databaseUrl: database.url!, env }), startServer({ databaseUrl: database.url!, env })]);
  });
  afterAll(async () => {
    await stopAllServers();
    await database?.drop();
  });

  const enterpriseShop = async () => {
    const domain = uniqueShop('multi');
    const shop = await setShopPlan({ ctx, input: { domain, plan: 'enterprise' } });
    return { domain, shopId: shop.id, token: await signSessionToken(PROCESS_CREDENTIALS, domain) };
  };

  it('a key revoked through instance A is refused by instance B on the very next request', async () => {
    const { shopId, token } = await enterpriseShop();
    const [contract] = await seedContracts({ ctx, input: { shopId, count: 1 } });
    const created = await call(a.url, '/admin/api/keys', { auth: token, body: { name: 'ci' } });
    expect(created.status).toBe(201);
    const key: string = created.body.secret;
    const path = `/api/v1/subscription-contracts/${contract.id}`;

    expect((await call(b.url, path, { auth: key })).status).toBe(200);
    const revoked = await call(a.url, `/admin/api/keys/${created.body.key.id}/revoke`, { method: 'POST', auth: token });
    expect(revoked.status).toBe(200);
    expect(revoked.body.key).toMatchObject({ status: 'revoked' });

    const after = await call(b.url, path, { auth: key });
    expect(after.status).toBe(401);
    expect(after.body.error).toMatchObject({ code: 'unauthorized' });
    expect((await call(a.url, path, { auth: key })).status).toBe(401);
  });

  it('a key\'s permissions changed through instance A hold on instance B from the very next request, both ways', async () => {
    const { shopId, token } = await enterpriseShop();
    const [contract] = await seedContracts({ ctx, input: { shopId, count: 1 } });
    const created = await call(a.url, '/admin/api/keys', { auth: token, body: { name: 'ci' } });
    const key: string = created.body.secret;
    const actions = `/api/v1/subscription-contracts/${contract.id}/actions`;
    const setPermissions = async (contracts: string) => {
      const res = await call(a.url, `/admin/api/keys/${created.body.key.id}`, {
        method: 'PATCH',
        auth: token,
        body: { permissions: { contracts, billing: 'write', webhooks: 'write', bulk_jobs: 'write' } },
      });
      expect(res.status).toBe(200);
    };
    // B knows the key (it has answered it) before each change.
    expect((await call(b.url, `/api/v1/subscription-contracts/${contract.id}`, { auth: key })).status).toBe(200);
    await setPermissions('read');
    const refused = await call(b.url, actions, { auth: key, body: { action: 'pause' } });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({ code: 'insufficient_scope', message: expect.stringContaining('contracts: write') });
    expect((await call(b.url, '/api/v1/key', { auth: key })).body.key.permissions.contracts).toBe('read');
    await setPermissions('write');
    expect((await call(b.url, actions, { auth: key, body: { action: 'pause' } })).status).toBe(200);
    const [row] = await ctx.db.orm.select().from(contracts).where(eq(contracts.id, contract.id));
    expect(row.status).toBe('PAUSED');
  });

  it('an app disconnected through instance A is refused by instance B on the very next request', async () => {
    const { shopId, token } = await enterpriseShop();
    const redirect = 'http://127.0.0.1:9/cb';
    const { client_id } = (await registerClient(ctx, { client_name: 'Assistant', redirect_uris: [redirect] })) as { client_id: string };
    const { verifier, challenge } = pkce();
    const request = await checkAuthorizationRequest(ctx, { response_type: 'code', client_id, code_challenge: challenge, code_challenge_method: 'S256' }, `${SHARED_URL}/mcp`, SHARED_URL);
    const { redirectTo } = await approveAuthorization(ctx, { shopId, request, approved: request.asked, issuer: SHARED_URL });
    const tokens = await exchangeCode(ctx, { code: new URL(redirectTo).searchParams.get('code')!, code_verifier: verifier, client_id });
    const list = { body: { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }, auth: tokens.access_token };
    expect((await call(a.url, '/mcp', list)).status).toBe(200);
    expect((await call(b.url, '/mcp', list)).status).toBe(200);
    const [connection] = (await call(a.url, '/admin/api/connections', { auth: token })).body.connections;
    expect((await call(a.url, `/admin/api/connections/${connection.id}/disconnect`, { method: 'POST', auth: token, body: {} })).status).toBe(200);
    const refused = await call(b.url, '/mcp', list);
    expect(refused.status).toBe(401);
    expect(refused.body.error).toMatchObject({ code: 'unauthorized' });
  });

  it('B refuses a revoked key it has cached whatever the request: an invalid body, an MCP tool call, a missing contract', async () => {
    const { shopId, token } = await enterpriseShop();
    const [contract] = await seedContracts({ ctx, input: { shopId, count: 1 } });
    const path = `/api/v1/subscription-contracts/${contract.id}`;
    const probes: [string, Parameters<typeof call>[2]][] = [
      [`${path}/actions`, { body: { action: 'explode' } }],
      ['/mcp', { body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'pause_subscription_contract', arguments: { contractId: contract.id } } } }],
      ['/api/v1/subscription-contracts/999999999', {}],
    ];
    for (const [where, opts] of probes) {
      const created = await call(a.url, '/admin/api/keys', { auth: token, body: { name: 'ci' } });
      const key: string = created.body.secret;
      expect((await call(b.url, path, { auth: key })).status).toBe(200);
      expect((await call(a.url, `/admin/api/keys/${created.body.key.id}/revoke`, { method: 'POST', auth: token })).status).toBe(200);
      const res = await call(b.url, where, { ...opts, auth: key });
      expect(res.status, where).toBe(401);
      expect(res.body.error).toMatchObject({ code: 'unauthorized' });
    }
    const [row] = await ctx.db.orm.select().from(contracts).where(eq(contracts.id, contract.id));
    expect(row.status).toBe('ACTIVE');
  });

  it('the 5-key cap holds with 20 generation requests spread over both instances', async () => {
    const { shopId, token } = await enterpriseShop();
    for (let i = 0; i < 2; i++) await generateKey({ ctx, input: { shopId, name: `existing ${i}` } });
    const free = 3;

    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => call(i % 2 ? b.url : a.url, '/admin/api/keys', { auth: token, body: { name: `k${i}` } })),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(free);
    expect(statuses.filter((s) => s === 409)).toHaveLength(20 - free);
    for (const r of results.filter((x) => x.status === 409)) expect(r.body.error.code).toBe('key_limit_reached');

    const active = await database.db.orm.select().from(apiKeys).where(eq(apiKeys.shopId, shopId));
    expect(active.filter((k) => k.revokedAt === null)).toHaveLength(5);
  });

  it('a scheduled resume happens exactly once while both instances sweep', async () => {
    const { shopId } = await enterpriseShop();
    const { secret: key } = await generateKey({ ctx, input: { shopId } });
    const seeded = await seedContracts({ ctx, input: { shopId, count: 6 } });
    const ids = seeded.map((c) => c.id);
    const resumeAt = new Date(Date.now() + 1500);
    const paused = await Promise.all(
      ids.map((id, i) =>
        call(i % 2 ? b.url : a.url, `/api/v1/subscription-contracts/${id}/actions`, { auth: key, body: { action: 'pause', resumeAt: resumeAt.toISOString() } }),
      ),
    );
    expect(paused.map((r) => r.status)).toEqual(ids.map(() => 200));
    // One contract is held by another transaction (a slow action, say) while it falls due, so both sweepers meet
    // it several times: each must pass it by, and exactly one resume it once it is free.
    const release = await holdRowLock(database.db, ids[0]);
    expect(Date.now(), 'pausing took longer than the time to resumeAt').toBeLessThan(resumeAt.getTime());
    await new Promise((r) => setTimeout(r, resumeAt.getTime() + 500 - Date.now()));
    await release();

    // Watch the rows directly: an API read would itself settle the resume and hide what the sweepers did.
    const deadline = resumeAt.getTime() + 4000;
    let rows = await database.db.orm.select().from(contracts).where(inArray(contracts.id, ids));
    while (rows.some((r) => r.status !== 'ACTIVE') && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      rows = await database.db.orm.select().from(contracts).where(inArray(contracts.id, ids));
    }
    expect(rows.map((r) => r.status)).toEqual(ids.map(() => 'ACTIVE'));
    // A second sweep that took the same rows would still be writing now: give every sweep in progress time (ten
    // intervals) to finish before counting.
    await new Promise((r) => setTimeout(r, 1000));

    const events = await database.db.orm.select().from(contractEvents).where(inArray(contractEvents.contractId, ids));
    for (const id of ids) {
      const resumed = events.filter((e) => e.contractId === id && e.type === 'contract.resumed');
      expect(resumed, `contract ${id}`).toHaveLength(1);
      expect(resumed[0].actorType).toBe('scheduler');
      expect(resumed[0].at.getTime()).toBeGreaterThanOrEqual(resumeAt.getTime());
    }
    // The two processes' own accounts agree: together they resumed each contract once.
    const resumedBy = (s: ServerProcess) =>
      s
        .logs()
        .filter((l) => l.msg === 'scheduled resumes')
        .reduce((sum, l) => sum + Number(l.resumed), 0);
    expect(resumedBy(a) + resumedBy(b)).toBe(ids.length);
  });

  it('10 parallel skips spread over both instances: 10 events, the date moved 10 intervals', async () => {
    const { shopId } = await enterpriseShop();
    const { secret: key } = await generateKey({ ctx, input: { shopId } });
    const [contract] = await seedContracts({ ctx, input: { shopId, count: 1 } });
    const path = `/api/v1/subscription-contracts/${contract.id}`;

    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => call(i % 2 ? b.url : a.url, `${path}/actions`, { auth: key, body: { action: 'skip' } })),
    );
    expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));

    let expected = new Date(contract.nextBillingDate);
    for (let i = 0; i < 10; i++) expected = addInterval(expected, contract.billingPolicy.interval, contract.billingPolicy.intervalCount);
    const now = await call(b.url, path, { auth: key });
    expect(now.body.contract.nextBillingDate).toBe(expected.toISOString());
    // Each response saw a different date: every skip started from the one before it.
    expect(new Set(results.map((r) => r.body.contract.nextBillingDate)).size).toBe(10);

    const events = await call(a.url, `${path}/events`, { auth: key });
    expect(events.body.events.filter((e: { type: string }) => e.type === 'contract.skipped')).toHaveLength(10);
  });

  // Without Redis the test is skipped with one line, except in CI, where it runs and fails saying why.
  it.skipIf(!redisUp && !process.env.CI)('the API rate limit is shared through Redis: the shop\'s budget is spent once over both instances', async () => {
    if (!redisUp) throw new Error(`Redis is not reachable at ${REDIS_URL}, and CI needs the shared rate-limit test to run.`);
    const LIMIT = 10;
    // Two more processes, on Redis and with a small limit (the pair above has a huge one, for the other tests). The
    // failed-lookup limit is raised so that another test spraying bad keys at this Redis cannot refuse ours.
    const env = { REDIS_URL, RATE_LIMIT_PER_MINUTE: String(LIMIT), AUTH_FAILURE_LIMIT_PER_MINUTE: '1000000' };
    const [ra, rb] = await Promise.all([startServer({ databaseUrl: database.url!, env }), startServer({ databaseUrl: database.url!, env })]);
    const inspect = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
    try {
      await inspect.connect();
      // Counters are keyed by shop id, and shop ids are numbered per database: every test schema starts at 1. So
      // that other runs on this Redis (earlier, or in parallel, within the same minute) cannot share counters
      // with this one, this schema's next shop ids start at a random point far beyond them.
      await database.db.withSession((run) => run(`ALTER TABLE shops ALTER COLUMN id RESTART WITH ${2 ** 40 + randomInt(2 ** 40)}`));
      // Until its Redis client is connected an instance lets requests through uncounted (availability over
      // limits): wait until each one answers with the limit's headers, using a shop of its own.
      for (const server of [ra, rb]) {
        const { shopId } = await enterpriseShop();
        const { secret } = await generateKey({ ctx, input: { shopId } });
        const deadline = Date.now() + 5000;
        while ((await call(server.url, API, { auth: secret })).headers.get('ratelimit-limit') !== String(LIMIT)) {
          expect(Date.now(), `instance ${server.pid} never answered with RateLimit headers from Redis`).toBeLessThan(deadline);
          await new Promise((r) => setTimeout(r, 100));
        }
      }

      const { domain, shopId } = await enterpriseShop();
      const { secret: key } = await generateKey({ ctx, input: { shopId } });
      // Fixed one-minute windows on the system clock (shared by this process and the children): start in a window
      // with time to spare, so that all the requests below are counted in the same one.
      const msLeft = 60_000 - (Date.now() % 60_000);
      if (msLeft < 8000) await new Promise((r) => setTimeout(r, msLeft + 200));

      const ok = [];
      for (let i = 0; i < LIMIT; i++) ok.push(await call(i % 2 ? rb.url : ra.url, API, { auth: key }));
      expect(ok.map((r) => r.status)).toEqual(Array(LIMIT).fill(200));
      expect(Number(ok[0].headers.get('ratelimit-reset')), 'the window rolled over during the test').toBeGreaterThanOrEqual(Number(ok[LIMIT - 1].headers.get('ratelimit-reset')));
      // One count over both: alone, each instance would have counted only its own 5 and said 9, 9, 8, 8, …
      expect(ok.map((r) => r.headers.get('ratelimit-remaining'))).toEqual(Array.from({ length: LIMIT }, (_, i) => String(LIMIT - 1 - i)));
      for (const r of ok) expect(r.headers.get('ratelimit-limit')).toBe(String(LIMIT));

      // The budget is spent: both instances refuse, though each has served only half of it.
      for (const server of [ra, rb]) {
        const limited = await call(server.url, API, { auth: key });
        expect(limited.status).toBe(429);
        expect(limited.body).toEqual({ error: { code: 'rate_limited', message: expect.stringContaining(`${LIMIT} per minute`), requestId: expect.any(String) } });
        const retryAfter = Number(limited.headers.get('retry-after'));
        expect(retryAfter).toBeGreaterThanOrEqual(1);
        expect(retryAfter).toBeLessThanOrEqual(60);
        expect(limited.headers.get('ratelimit-limit')).toBe(String(LIMIT));
        expect(limited.headers.get('ratelimit-remaining')).toBe('0');
        expect(limited.headers.get('ratelimit-reset')).toBe(String(retryAfter));
      }

      // In Redis: one counter for the shop's window, holding all 12 requests, and expiring by itself. No key
      // anywhere names the API key or the shop's domain: counters are keyed by shop id (and client IP).
      const counters = await inspect.keys(`*:shop:${shopId}:*`);
      expect(counters).toHaveLength(1);
      expect(await inspect.get(counters[0])).toBe(String(LIMIT + 2));
      expect(await inspect.pttl(counters[0])).toBeGreaterThan(0);
      const all = await inspect.keys('*');
      expect(all.filter((k) => k.includes(key) || k.includes('svc_live_') || k.includes(domain))).toEqual([]);
      await inspect.del(...counters);
    } finally {
      inspect.disconnect();
      for (const server of [ra, rb]) server.kill('SIGKILL');
      await Promise.all([ra.exited, rb.exited]);
    }
  });
});
