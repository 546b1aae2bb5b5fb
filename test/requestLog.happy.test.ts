import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runMcpStdio } from '../src/mcp/stdio.js';
import { MemoryRateLimitStore } from '../src/http/rateLimitStore.js';
import { revokeKey } from '../src/services/revokeKey.js';
import { setShopPlan } from '../src/services/shops.js';
import { startTestApp, bearer, type TestApp } from './support/app.js';
import { API, expectError } from './support/fixtures.js';
import { callBody, listen } from './support/mcp.js';
import { keyIdOf, logRows, readLog, recorded, written } from './support/requestLog.js';

/**
 * The request log: every API and MCP request of an identified key is recorded with what it sent (method, path,
 * idempotency key, user agent, address) and what it got (status, error code, duration), and the merchant reads it
 * per key, filtered and paged, in the admin.
 */
const json = { 'content-type': 'application/json' };
const mcpHeaders = { ...json, accept: 'application/json, text/event-stream' };

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

describe('what is recorded', () => {
  it('API requests: every field, newest first, for the key that made them', async () => {
    const s = await t.shopWithKey();
    const keyId = await keyIdOf(t, s.shopId);
    const [c] = await t.seed(s.shopId, 1);
    const start = recorded(t);
    const get = await t.inject({ url: `${API}?status=ACTIVE&limit=5`, headers: { ...bearer(s.key), 'user-agent': 'acme-backend/2.1' } });
    expect(get.statusCode).toBe(200);
    await written(t, start + 1);
    t.clock.advance(1);
    const pause = await t.inject({
      method: 'POST',
      url: `${API}/${c.id}/actions`,
      headers: { ...json, ...bearer(s.key), 'idempotency-key': 'order-42-pause', 'user-agent': 'acme-backend/2.1' },
      payload: { action: 'pause' },
    });
    expect(pause.statusCode).toBe(200);
    await written(t, start + 2);
    t.clock.advance(1);
    const again = await t.inject({ method: 'POST', url: `${API}/${c.id}/actions`, headers: { ...json, ...bearer(s.key) }, payload: { action: 'skip' } });
    expectError(again, 409, 'invalid_state');
    await written(t, start + 3);

    const rows = await logRows(t, s.domain, { keyId });
    expect(rows).toHaveLength(3);
    const [skip, paused, read] = rows;
    expect(paused).toEqual({
      id: expect.stringMatching(/^\d+$/),
      at: new Date(t.clock.now().getTime() - 1).toISOString(),
      keyId,
      fingerprint: s.fingerprint,
      connectionId: null,
      connectionName: null,
      method: 'POST',
      path: `${API}/${c.id}/actions`,
      mcpTool: null,
      status: 200,
      mcpStatus: null,
      errorCode: null,
      durationMs: expect.any(Number),
      requestId: pause.headers['x-request-id'],
      idempotencyKey: 'order-42-pause',
      ip: '127.0.0.1',
      userAgent: 'acme-backend/2.1',
    });
    expect(paused.durationMs).toBeGreaterThanOrEqual(0);
    // The query is part of the path.
    expect(read).toMatchObject({ method: 'GET', path: `${API}?status=ACTIVE&limit=5`, status: 200, errorCode: null, requestId: get.headers['x-request-id'] });
    expect(skip).toMatchObject({ status: 409, errorCode: 'invalid_state', idempotencyKey: null, requestId: again.headers['x-request-id'] });
    // An unknown route of the API, with a valid key, is a request of that key too.
    const before = recorded(t);
    const unknown = await t.inject({ url: '/api/v1/subscriptions', headers: bearer(s.key) });
    expectError(unknown, 404, 'not_found');
    await written(t, before + 1);
    expect((await logRows(t, s.domain, { keyId, limit: 1 }))[0]).toMatchObject({ path: '/api/v1/subscriptions', status: 404, errorCode: 'not_found' });
  });

  it('a replayed refusal (same Idempotency-Key) is recorded with the code it replays', async () => {
    const s = await t.shopWithKey();
    const [c] = await t.seed(s.shopId, 1);
    const start = recorded(t);
    const send = () =>
      t.inject({ method: 'POST', url: `${API}/${c.id}/actions`, headers: { ...json, ...bearer(s.key), 'idempotency-key': 'resume-1' }, payload: { action: 'resume' } });
    expectError(await send(), 409, 'invalid_state');
    const replay = await send();
    expectError(replay, 409, 'invalid_state');
    expect(replay.headers['idempotent-replayed']).toBe('true');
    await written(t, start + 2);
    const rows = await logRows(t, s.domain);
    expect(rows.map((r) => [r.status, r.errorCode, r.idempotencyKey])).toEqual([
      [409, 'invalid_state', 'resume-1'],
      [409, 'invalid_state', 'resume-1'],
    ]);
  });

  it('a key sent in the URL, percent-encoded: the refusal is recorded for the key of the Authorization header, the key scrubbed from the path', async () => {
    const s = await t.shopWithKey();
    const rest = s.key.slice('svc_live_'.length);
    const start = recorded(t);
    const res = await t.inject({ url: `${API}?status=ACTIVE&token=%2573vc%5Flive_${rest}&limit=5`, headers: bearer(s.key) });
    expectError(res, 400, 'key_in_url');
    await written(t, start + 1);
    const [row] = await logRows(t, s.domain);
    expect(row).toMatchObject({ method: 'GET', path: `${API}?status=ACTIVE&token=[REDACTED]&limit=5`, status: 400, errorCode: 'key_in_url' });
    expect(JSON.stringify(row)).not.toContain(rest.slice(0, 10));
  });

  it('MCP requests: the tool called, and a refused call\'s code', async () => {
    const s = await t.shopWithKey();
    const [c] = await t.seed(s.shopId, 1);
    const start = recorded(t);
    const ok = await t.inject({ method: 'POST', url: '/mcp', headers: { ...mcpHeaders, ...bearer(s.key) }, payload: callBody('get_subscription_contract', { contractId: c.id }) });
    expect(ok.json().result.structuredContent.contract.id).toBe(c.id);
    // A millisecond apart, so newest first is one order (within one millisecond, it is the order answers finished).
    await written(t, start + 1);
    t.clock.advance(1);
    const refused = await t.inject({ method: 'POST', url: '/mcp', headers: { ...mcpHeaders, ...bearer(s.key) }, payload: callBody('skip_next_order', { contractId: '999999999' }) });
    expect(refused.json().result.isError).toBe(true);
    await written(t, start + 2);
    t.clock.advance(1);
    const list = await t.inject({ method: 'POST', url: '/mcp', headers: { ...mcpHeaders, ...bearer(s.key) }, payload: { jsonrpc: '2.0', id: 1, method: 'tools/list' } });
    expect(list.statusCode).toBe(200);
    await written(t, start + 3);
    const [tools, notFound, read] = await logRows(t, s.domain);
    expect(read).toMatchObject({ method: 'POST', path: '/mcp', mcpTool: 'get_subscription_contract', status: 200, mcpStatus: null, errorCode: null, fingerprint: s.fingerprint, requestId: ok.headers['x-request-id'] });
    // The exchange answered 200 (the refusal is in its result); the log keeps the status the API gives not_found.
    expect(notFound).toMatchObject({ path: '/mcp', mcpTool: 'skip_next_order', status: 200, mcpStatus: 404, errorCode: 'not_found' });
    expect(tools).toMatchObject({ path: '/mcp', mcpTool: null, status: 200, mcpStatus: null, errorCode: null });
  });

  it('MCP refusals are not successes: a read-only key calling a write tool, bad arguments, an unknown tool; the status filter finds them', async () => {
    const s = await t.shopWithKey('enterprise', { access: 'read_only' });
    const [c] = await t.seed(s.shopId, 1);
    const start = recorded(t);
    const call = async (payload: object) => {
      const res = await t.inject({ method: 'POST', url: '/mcp', headers: { ...mcpHeaders, ...bearer(s.key) }, payload });
      expect(res.statusCode).toBe(200);
      t.clock.advance(1);
      return res;
    };
    const write = await call(callBody('pause_subscription_contract', { contractId: c.id }));
    expect(write.json().result.isError).toBe(true);
    const badArgs = await call(callBody('get_subscription_contract', { contractId: 'not-a-number' }));
    expect(badArgs.json().result.isError).toBe(true);
    const unknown = await call(callBody('no_such_tool', {}));
    expect(unknown.json().error.code).toBe(-32602);
    const read = await call(callBody('get_subscription_contract', { contractId: c.id }));
    expect(read.json().result.isError).toBeUndefined();
    await written(t, start + 4);

    const rows = await logRows(t, s.domain);
    expect(rows.map((r) => [r.mcpTool, r.status, r.mcpStatus, r.errorCode])).toEqual([
      ['get_subscription_contract', 200, null, null],
      ['no_such_tool', 200, 400, 'invalid_request'],
      ['get_subscription_contract', 200, 400, 'invalid_request'],
      ['pause_subscription_contract', 200, 403, 'insufficient_scope'],
    ]);
    // A merchant looking for failures finds them; looking for successes, finds only the call that succeeded.
    expect((await logRows(t, s.domain, { status: '4xx' })).map((r) => r.requestId)).toEqual([unknown, badArgs, write].map((r) => r.headers['x-request-id']));
    expect((await logRows(t, s.domain, { status: '403' })).map((r) => r.errorCode)).toEqual(['insufficient_scope']);
    expect((await logRows(t, s.domain, { status: '2xx' })).map((r) => r.requestId)).toEqual([read.headers['x-request-id']]);
  });

  it('svc mcp-stdio: its tool calls are the API requests they make, with its user agent', async () => {
    const s = await t.shopWithKey();
    const [c] = await t.seed(s.shopId, 1);
    const base = await listen(t);
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const out: string[] = [];
    stdout.on('data', (b: Buffer) => out.push(b.toString()));
    const start = recorded(t);
    const served = runMcpStdio({ SVC_API_KEY: s.key, SVC_BASE_URL: base }, { err: () => {} }, { stdin, stdout });
    stdin.end(`${JSON.stringify(callBody('get_subscription_contract', { contractId: c.id }))}\n`);
    expect(await served).toBe(0);
    expect(JSON.parse(out.join('')).result.structuredContent.contract.id).toBe(c.id);
    // Its start-up probe (GET /api/v1/key) and the tool's read (answered within one millisecond of the test
    // clock, so in either order).
    await written(t, start + 2);
    const rows = await logRows(t, s.domain);
    expect(rows.map((r) => [r.method, r.path, r.status, r.userAgent]).sort()).toEqual([
      ['GET', '/api/v1/key', 200, 'svc-mcp-stdio/1'],
      ['GET', `${API}/${c.id}`, 200, 'svc-mcp-stdio/1'],
    ]);
  });

  it('a read-only key asking for a change: 403 insufficient_scope, recorded', async () => {
    const s = await t.shopWithKey('enterprise', { access: 'read_only' });
    const [c] = await t.seed(s.shopId, 1);
    const start = recorded(t);
    const res = await t.inject({ method: 'POST', url: `${API}/${c.id}/actions`, headers: { ...json, ...bearer(s.key) }, payload: { action: 'pause' } });
    expectError(res, 403, 'insufficient_scope');
    await written(t, start + 1);
    expect(await logRows(t, s.domain)).toMatchObject([{ method: 'POST', path: `${API}/${c.id}/actions`, status: 403, errorCode: 'insufficient_scope', requestId: res.headers['x-request-id'] }]);
  });

  it('refusals of a known key: revoked (401), no plan (403), over the limit (429)', async () => {
    const limited = await startTestApp({
      database: t.database,
      clock: t.clock,
      appDeps: { rateLimit: { perMinute: 1, authFailuresPerMinute: 100, store: new MemoryRateLimitStore(t.clock) } },
    });
    try {
      const s = await t.shopWithKey();
      const keyId = await keyIdOf(t, s.shopId);
      const [c] = await t.seed(s.shopId, 1);
      const get = () => limited.inject({ url: `${API}/${c.id}`, headers: bearer(s.key) });
      expect((await get()).statusCode).toBe(200);
      expectError(await get(), 429, 'rate_limited');
      await setShopPlan({ ctx: t.ctx, input: { domain: s.domain, plan: 'basic' } });
      expectError(await get(), 403, 'plan_required');
      await revokeKey({ ctx: t.ctx, input: { shopId: s.shopId, keyId } });
      expectError(await get(), 401, 'unauthorized');
      // A fresh instance has never seen the key: it is identified by its lookup, and refused.
      const fresh = await startTestApp({ database: t.database, clock: t.clock });
      try {
        expectError(await fresh.inject({ url: `${API}/${c.id}`, headers: bearer(s.key) }), 401, 'unauthorized');
        await written(fresh, 1);
      } finally {
        await fresh.close();
      }
      await written(limited, 4);
      const rows = await logRows(t, s.domain, { keyId });
      expect(rows.map((r) => [r.status, r.errorCode])).toEqual(
        expect.arrayContaining([
          [200, null],
          [429, 'rate_limited'],
          [403, 'plan_required'],
          [401, 'unauthorized'],
        ]),
      );
      expect(rows.filter((r) => r.status === 401)).toHaveLength(2);
      expect(rows).toHaveLength(5);
    } finally {
      await limited.close();
    }
  });
});

describe('reading it: filters, pages', () => {
  it('by status class or code, path, time, and key; pages newest first with a cursor', async () => {
    const s = await t.shopWithKey();
    const keyId = await keyIdOf(t, s.shopId);
    const contracts = await t.seed(s.shopId, 3);
    const start = recorded(t);
    const base = new Date(t.clock.now().getTime());
    // Six requests, a second apart: three reads (200), a missing contract (404), a bad query (400), a list (200).
    const requests = [
      `${API}/${contracts[0].id}`,
      `${API}/${contracts[1].id}`,
      `${API}/99999999`,
      `${API}?limit=0`,
      `${API}/${contracts[2].id}`,
      `${API}?limit=2`,
    ];
    for (const [i, url] of requests.entries()) {
      t.clock.advance(1000);
      await t.inject({ url, headers: bearer(s.key) });
      // Recorded (its time taken) before the clock moves on.
      await written(t, start + i + 1);
    }
    const all = await logRows(t, s.domain, { keyId });
    expect(all.map((r) => r.path)).toEqual([...requests].reverse());
    expect(all.map((r) => r.at)).toEqual(requests.map((_, i) => new Date(base.getTime() + (i + 1) * 1000).toISOString()).reverse());

    expect((await logRows(t, s.domain, { keyId, status: '4xx' })).map((r) => r.status)).toEqual([400, 404]);
    expect((await logRows(t, s.domain, { keyId, status: '404' })).map((r) => r.path)).toEqual([`${API}/99999999`]);
    expect((await logRows(t, s.domain, { keyId, status: '2xx' })).map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(await logRows(t, s.domain, { keyId, status: '5xx' })).toEqual([]);
    expect((await logRows(t, s.domain, { keyId, path: 'limit=' })).map((r) => r.path)).toEqual([`${API}?limit=2`, `${API}?limit=0`]);
    // Before the fourth request: the first three.
    const before = new Date(base.getTime() + 4000).toISOString();
    expect((await logRows(t, s.domain, { keyId, before })).map((r) => r.path)).toEqual(requests.slice(0, 3).reverse());
    // Without a key id: the shop's requests, the same here (one key).
    expect((await logRows(t, s.domain)).map((r) => r.id)).toEqual(all.map((r) => r.id));

    // Pages of two, following nextCursor to the end; filters hold across pages.
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 5; page++) {
      const res = await readLog(t, s.domain, { keyId, limit: 2, ...(cursor && { cursor }) });
      const body = res.json();
      seen.push(...body.requests.map((r: { id: string }) => r.id));
      cursor = body.nextCursor ?? undefined;
      if (!cursor) break;
    }
    expect(seen).toEqual(all.map((r) => r.id));
    const first = (await readLog(t, s.domain, { keyId, status: '2xx', limit: 3 })).json();
    expect(first.requests).toHaveLength(3);
    const second = (await readLog(t, s.domain, { keyId, status: '2xx', limit: 3, cursor: first.nextCursor })).json();
    expect(second.requests.map((r: { path: string }) => r.path)).toEqual([requests[0]]);
    expect(second.nextCursor).toBeNull();
  });

  it('bad parameters: 400 invalid_request naming the parameter', async () => {
    const s = await t.shopWithKey();
    const cases: [Record<string, string>, string][] = [
      [{ status: '2xy' }, 'status'],
      [{ status: '700' }, 'status'],
      [{ keyId: 'abc' }, 'keyId'],
      [{ before: '2026-11-22' }, 'before'],
      [{ limit: '0' }, 'limit'],
      [{ limit: '101' }, 'limit'],
      [{ cursor: 'nope' }, 'cursor'],
      [{ colour: 'red' }, 'colour'],
    ];
    for (const [query, param] of cases) {
      const err = expectError(await readLog(t, s.domain, query), 400, 'invalid_request');
      expect(err.details?.map((d) => d.path), JSON.stringify(query)).toContain(param);
    }
  });
});
