import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryRateLimitStore } from '../src/http/rateLimitStore.js';
import { setShopPlan } from '../src/services/shops.js';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { adminAuth, API, contractRow, eventRows, expectError, secondInstance, sql } from './support/fixtures.js';
import { callBody } from './support/mcp.js';

/**
 * The key cache (ids only) of each instance never lets a revoked key, or a shop that lost API access, get anything
 * but the refusal: whatever the request, on an instance that has the key cached, from the moment the change commits
 * (through another instance). And it is worth having: a known key's GET is one statement.
 */

let t: TestApp;
let other: Awaited<ReturnType<typeof secondInstance>>;
beforeAll(async () => {
  t = await startTestApp();
  other = await secondInstance(t);
});
afterAll(async () => {
  await other?.close();
  await t?.close();
});

const json = { 'content-type': 'application/json' };
const mcpHeaders = { ...json, accept: 'application/json, text/event-stream' };

type Probe = { name: string; request: (contractId: string) => InjectOptions };
const probes: Probe[] = [
  { name: 'GET a contract', request: (id) => ({ url: `${API}/${id}` }) },
  { name: 'GET the list', request: () => ({ url: API }) },
  { name: 'GET the events', request: (id) => ({ url: `${API}/${id}/events` }) },
  { name: 'GET a contract that does not exist', request: () => ({ url: `${API}/999999999` }) },
  { name: 'GET with an invalid contract id', request: () => ({ url: `${API}/not-a-number` }) },
  { name: 'GET with an unknown query parameter', request: () => ({ url: `${API}?colour=red` }) },
  { name: 'GET an unknown API route', request: (id) => ({ url: `${API}/${id}/nope` }) },
  { name: 'DELETE a contract (a method the route does not take)', request: (id) => ({ method: 'DELETE', url: `${API}/${id}` }) },
  { name: 'POST a valid action', request: (id) => ({ method: 'POST', url: `${API}/${id}/actions`, headers: json, payload: { action: 'pause' } }) },
  { name: 'POST an invalid action', request: (id) => ({ method: 'POST', url: `${API}/${id}/actions`, headers: json, payload: { action: 'explode' } }) },
  { name: 'POST without a JSON content type', request: (id) => ({ method: 'POST', url: `${API}/${id}/actions`, payload: 'action=pause' }) },
  {
    name: 'POST a valid action with an Idempotency-Key',
    request: (id) => ({ method: 'POST', url: `${API}/${id}/actions`, headers: { ...json, 'idempotency-key': `k-${id}` }, payload: { action: 'skip' } }),
  },
  { name: 'POST an edit', request: (id) => ({ method: 'POST', url: `${API}/${id}/edits`, headers: json, payload: { operations: [{ op: 'set_frequency', interval: 'WEEK', intervalCount: 3 }] } }) },
  { name: 'POST an edit preview', request: (id) => ({ method: 'POST', url: `${API}/${id}/edits`, headers: json, payload: { operations: [{ op: 'set_frequency', interval: 'WEEK', intervalCount: 3 }], preview: true } }) },
  { name: 'MCP tools/call', request: (id) => ({ method: 'POST', url: '/mcp', headers: mcpHeaders, payload: callBody('get_subscription_contract', { contractId: id }) }) },
  { name: 'MCP tools/call of an action', request: (id) => ({ method: 'POST', url: '/mcp', headers: mcpHeaders, payload: callBody('pause_subscription_contract', { contractId: id }) }) },
  { name: 'MCP tools/list', request: () => ({ method: 'POST', url: '/mcp', headers: mcpHeaders, payload: { jsonrpc: '2.0', id: 1, method: 'tools/list' } }) },
];

/** svc_auth_failures_total{reason} as an instance's /metrics reports it. */
async function authFailures(app: TestApp, reason: string): Promise<number> {
  const text = (await app.inject({ url: '/metrics' })).body;
  const m = new RegExp(`^svc_auth_failures_total\\{reason="${reason}"\\} (\\d+)$`, 'm').exec(text);
  if (!m) throw new Error(`no svc_auth_failures_total{reason="${reason}"} in /metrics`);
  return Number(m[1]);
}

const withKey = (req: InjectOptions, key: string): InjectOptions => ({ ...req, headers: { ...(req.headers as object), ...bearer(key) } });

/** A shop with a key that `other` has cached (one successful request there), and a contract. */
async function cachedKeyOnOther() {
  const s = await t.shopWithKey();
  const [c] = await t.seed(s.shopId, 1);
  expect((await other.inject({ url: `${API}/${c.id}`, headers: bearer(s.key) })).statusCode).toBe(200);
  return { ...s, contractId: c.id };
}

describe('a key cached by an instance, revoked through another', () => {
  it.each(probes)('$name → 401 on the very next request, and nothing changes', async ({ request }) => {
    const s = await cachedKeyOnOther();
    const before = await contractRow(t, s.contractId);
    const headers = await adminAuth(t, s.domain);
    const [{ id }] = (await t.inject({ url: '/admin/api/keys', headers })).json().keys;
    expect((await t.inject({ method: 'POST', url: `/admin/api/keys/${id}/revoke`, headers })).statusCode).toBe(200);

    const refusalsBefore = await authFailures(other, 'revoked');
    const res = await other.inject(withKey(request(s.contractId), s.key));
    expectError(res, 401, 'unauthorized');
    expect(res.headers['www-authenticate']).toBe('Bearer');
    // One request, one refusal recorded, whichever step found the key revoked.
    expect(await authFailures(other, 'revoked')).toBe(refusalsBefore + 1);
    expect(await contractRow(t, s.contractId)).toEqual(before);
    expect(await eventRows(t, s.contractId)).toEqual([]);
    expect(await sql(t, 'SELECT 1 FROM idempotency_keys WHERE shop_id = $1', [s.shopId])).toEqual([]);
    // And the next one too (the refusal dropped the key from the cache: it is looked up, and still refused).
    expectError(await other.inject(withKey(request(s.contractId), s.key)), 401, 'unauthorized');
  });
});

describe('a key cached by an instance whose shop lost API access', () => {
  it.each(probes)('$name → 403 plan_required on the very next request', async ({ request }) => {
    const s = await cachedKeyOnOther();
    const before = await contractRow(t, s.contractId);
    await setShopPlan({ ctx: t.ctx, input: { domain: s.domain, plan: 'basic' } });

    const refusalsBefore = await authFailures(other, 'plan_required');
    const res = await other.inject(withKey(request(s.contractId), s.key));
    expectError(res, 403, 'plan_required');
    expect(await authFailures(other, 'plan_required')).toBe(refusalsBefore + 1);
    expect(await contractRow(t, s.contractId)).toEqual(before);
    expect(await eventRows(t, s.contractId)).toEqual([]);

    // The plan restored: the same key works again, on the same instance.
    await setShopPlan({ ctx: t.ctx, input: { domain: s.domain, plan: 'enterprise' } });
    expect((await other.inject({ url: `${API}/${s.contractId}`, headers: bearer(s.key) })).statusCode).toBe(200);
  });
});

describe('with rate limits', () => {
  it('a revoked cached key over its shop\'s limit gets 401, not 429', async () => {
    const limited = await startTestApp({
      database: { ...t.database, db: other.pool },
      clock: t.clock,
      appDeps: { rateLimit: { perMinute: 1, authFailuresPerMinute: 100, store: new MemoryRateLimitStore(t.clock) } },
    });
    try {
      const s = await t.shopWithKey();
      const [c] = await t.seed(s.shopId, 1);
      expect((await limited.inject({ url: `${API}/${c.id}`, headers: bearer(s.key) })).statusCode).toBe(200);
      expectError(await limited.inject({ url: `${API}/${c.id}`, headers: bearer(s.key) }), 429, 'rate_limited');
      await sql(t, 'UPDATE api_keys SET revoked_at = now() WHERE shop_id = $1', [s.shopId]);
      const res = await limited.inject({ url: `${API}/${c.id}`, headers: bearer(s.key) });
      expectError(res, 401, 'unauthorized');
    } finally {
      await limited.close();
    }
  });

  it('a request refused for its cached key\'s plan does not count against the shop\'s limit, nor as a use of the key', async () => {
    const limited = await startTestApp({
      database: { ...t.database, db: other.pool },
      clock: t.clock,
      appDeps: { rateLimit: { perMinute: 3, authFailuresPerMinute: 100, store: new MemoryRateLimitStore(t.clock) } },
    });
    try {
      const s = await t.shopWithKey();
      const [c] = await t.seed(s.shopId, 1);
      const get = () => limited.inject({ url: `${API}/${c.id}`, headers: bearer(s.key) });
      const first = await get(); // 1 of 3; the key is now cached
      expect(first.headers['ratelimit-remaining']).toBe('2');
      const usedAt = (await sql<{ last_used_at: Date }>(t, 'SELECT last_used_at FROM api_keys WHERE shop_id = $1', [s.shopId]))[0].last_used_at;

      await setShopPlan({ ctx: t.ctx, input: { domain: s.domain, plan: 'basic' } });
      const refused = await get();
      expectError(refused, 403, 'plan_required');
      // As any refused key's response: the client IP's allowance of failed authentications, not the shop's.
      expect(refused.headers['ratelimit-limit']).toBe('100');

      await setShopPlan({ ctx: t.ctx, input: { domain: s.domain, plan: 'enterprise' } });
      expect((await get()).headers['ratelimit-remaining']).toBe('1'); // the 403 took nothing
      expect((await get()).headers['ratelimit-remaining']).toBe('0');
      expectError(await get(), 429, 'rate_limited');
      const after = (await sql<{ last_used_at: Date }>(t, 'SELECT last_used_at FROM api_keys WHERE shop_id = $1', [s.shopId]))[0].last_used_at;
      expect(after.toISOString()).toBe(usedAt.toISOString());
    } finally {
      await limited.close();
    }
  });
});

describe('what the cache saves', () => {
  it('a known key\'s GET of a contract (API or MCP) is one statement, its action two (read, write), and concurrent requests share them', async () => {
    const statements: string[] = [];
    const observed = await t.database.observed((text) => statements.push(text));
    const app = await startTestApp({ database: { ...t.database, db: observed }, clock: t.clock });
    try {
      const s = await t.shopWithKey();
      const [c] = await t.seed(s.shopId, 1);
      // First use on this instance: the key is looked up by its digest (and its last use recorded).
      expect((await app.inject({ url: `${API}/${c.id}`, headers: bearer(s.key) })).statusCode).toBe(200);
      expect(statements.filter((q) => /JOIN api_keys k ON k\.digest = q\.digest/.test(q))).toHaveLength(1);
      statements.length = 0;
      const get = await app.inject({ url: `${API}/${c.id}`, headers: bearer(s.key) });
      expect(get.statusCode).toBe(200);
      expect(get.json().contract.id).toBe(c.id);
      expect(statements).toHaveLength(1);
      expect(statements[0]).toMatch(/JOIN api_keys k.*LEFT JOIN subscription_contracts c/s);

      // The same over MCP: a tool call that reads one contract is that one statement too.
      statements.length = 0;
      const tool = await app.inject({ method: 'POST', url: '/mcp', headers: { ...mcpHeaders, ...bearer(s.key) }, payload: callBody('get_subscription_contract', { contractId: c.id }) });
      expect(tool.json().result.structuredContent.contract.id).toBe(c.id);
      expect(statements).toHaveLength(1);

      statements.length = 0;
      const act = await app.inject({ method: 'POST', url: `${API}/${c.id}/actions`, headers: { ...json, ...bearer(s.key) }, payload: { action: 'pause' } });
      expect(act.statusCode).toBe(200);
      expect(act.json().contract.status).toBe('PAUSED');
      expect(statements).toHaveLength(2);

      // Concurrent requests share statements: 20 GETs are one, 20 actions on 20 contracts one read and one write.
      const many = await t.seed(s.shopId, 20);
      statements.length = 0;
      const gets = await Promise.all(many.map((m) => app.inject({ url: `${API}/${m.id}`, headers: bearer(s.key) })));
      expect(gets.map((g) => g.json().contract.id)).toEqual(many.map((m) => m.id));
      expect(statements).toHaveLength(1);
      statements.length = 0;
      const acts = await Promise.all(
        many.map((m) => app.inject({ method: 'POST', url: `${API}/${m.id}/actions`, headers: { ...json, ...bearer(s.key) }, payload: { action: 'skip' } })),
      );
      expect(acts.map((a) => a.statusCode)).toEqual(many.map(() => 200));
      expect(statements).toHaveLength(2);
      for (const m of many) expect((await eventRows(t, m.id)).map((e) => e.type)).toEqual(['contract.skipped']);
    } finally {
      await app.close();
      await observed.close();
    }
  });
});
