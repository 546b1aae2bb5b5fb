import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { MemoryRateLimitStore } from '../src/http/rateLimitStore.js';
import { loadConfig } from '../src/config.js';
import type { Database } from '../src/db/client.js';
import { newRawKey } from '../src/domain/keys.js';
import { signSessionToken } from '../src/services/sessionTokens.js';
import { RequestLogCleanup } from '../src/workers/requestLogCleanup.js';
import { bearer, startTestApp, TEST_CREDENTIALS, type TestApp } from './support/app.js';
import { API, expectError, keyFragments, sql } from './support/fixtures.js';
import { callBody } from './support/mcp.js';
import { keyIdOf, logRows, readLog, recorded, written } from './support/requestLog.js';

/**
 * The request log keeps no secret and no body, shows a shop its own requests only, and forgets them after 14 days.
 * An outage of the database costs the log its oldest entries, never a request.
 */
const json = { 'content-type': 'application/json' };
const DAY = 24 * 60 * 60 * 1000;

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const allRows = (shopId: string) => sql<Record<string, unknown>>(t, 'SELECT * FROM request_log WHERE shop_id = $1', [shopId]);

describe('one shop\'s log', () => {
  it('another shop sees none of it, not even with the key id', async () => {
    const a = await t.shopWithKey();
    const b = await t.shopWithKey();
    const aKey = await keyIdOf(t, a.shopId);
    const [c] = await t.seed(a.shopId, 1);
    const start = recorded(t);
    await t.inject({ url: `${API}/${c.id}`, headers: bearer(a.key) });
    await t.inject({ url: API, headers: bearer(b.key) });
    await written(t, start + 2);
    expect((await logRows(t, a.domain, { keyId: aKey })).map((r) => r.path)).toEqual([`${API}/${c.id}`]);
    expect(await logRows(t, b.domain, { keyId: aKey })).toEqual([]);
    expect((await logRows(t, b.domain)).map((r) => r.path)).toEqual([API]);
    // The admin endpoint takes a session token only: an API key is refused.
    expectError(await t.inject({ url: `/admin/api/request-log?keyId=${aKey}`, headers: bearer(a.key) }), 401, 'unauthorized');
    expectError(await t.inject({ url: '/admin/api/request-log' }), 401, 'unauthorized');
  });
});

describe('what is never kept', () => {
  it('no body, and no key, token or secret from the URL or the headers, in any column', async () => {
    const s = await t.shopWithKey();
    const [c] = await t.seed(s.shopId, 1);
    const other = newRawKey();
    const jwt = await signSessionToken(TEST_CREDENTIALS, s.domain, { now: t.clock.now() });
    const secretWords = 'customer-note-7f3a9';
    const start = recorded(t);
    const answers = [
      // A body with a marker and another key in it.
      await t.inject({
        method: 'POST',
        url: `${API}/${c.id}/actions`,
        headers: { ...json, ...bearer(s.key), 'idempotency-key': `retry ${other}`, 'user-agent': `bot/1 (${jwt})` },
        payload: { action: 'cancel', reason: `${secretWords} ${other}` },
      }),
      // A key in the URL, encoded twice over.
      await t.inject({ url: `${API}/${c.id}/events?k=svc%255flive_${other.slice(9)}`, headers: bearer(s.key) }),
      // An MCP call whose arguments carry the marker.
      await t.inject({
        method: 'POST',
        url: '/mcp',
        headers: { ...json, accept: 'application/json, text/event-stream', ...bearer(s.key), 'user-agent': `ide whsec_${'A'.repeat(32)}` },
        payload: callBody('cancel_subscription_contract', { contractId: c.id, reason: secretWords }),
      }),
    ];
    expect(answers.map((a) => a.statusCode)).toEqual([200, 400, 200]);
    await written(t, start + 3);
    const rows = await allRows(s.shopId);
    expect(rows).toHaveLength(3);
    const text = JSON.stringify(rows);
    for (const fragment of [...keyFragments(s.key), ...keyFragments(other)]) expect(text).not.toContain(fragment);
    expect(text).not.toContain(secretWords);
    expect(text).not.toContain(jwt.split('.')[1]);
    expect(text).not.toContain('A'.repeat(32));
    // Nothing but the columns of the log: no body of any kind.
    expect(Object.keys(rows[0]).sort()).toEqual(
      ['at', 'duration_us', 'error_code', 'grant_id', 'id', 'idempotency_key', 'ip', 'key_fingerprint', 'key_id', 'mcp_status', 'mcp_tool', 'method', 'path', 'request_id', 'shop_id', 'status', 'user_agent'].sort(),
    );
    // What was scrubbed is still readable around the secret.
    const shown = await logRows(t, s.domain);
    const action = shown.find((r) => r.method === 'POST' && r.path.endsWith('/actions'))!;
    expect(action.idempotencyKey).toBe('retry svc_live_[REDACTED]');
    expect(action.userAgent).toBe('bot/1 ([REDACTED JWT])');
    expect(shown.find((r) => r.errorCode === 'key_in_url')!.path).toBe(`${API}/${c.id}/events?k=[REDACTED]`);
    expect(shown.find((r) => r.path === '/mcp')!.userAgent).toBe('ide [REDACTED WEBHOOK SECRET]');
  });
});

describe('a key in the URL cannot be used to spray keys', () => {
  it('finding the key of such a request is a failed lookup when it finds none, and is not made past the address\'s allowance', async () => {
    const limited = await startTestApp({
      database: t.database,
      clock: t.clock,
      appDeps: { rateLimit: { perMinute: 1000, authFailuresPerMinute: 1, store: new MemoryRateLimitStore(t.clock) } },
    });
    try {
      const s = await t.shopWithKey();
      const start = recorded(limited);
      // An unknown key in the header, a key in the URL: refused, and the lookup after it uses the address's one failure.
      expectError(await limited.inject({ url: `${API}?k=svc_live_x`, headers: bearer(newRawKey()) }), 400, 'key_in_url');
      await vi.waitFor(async () => expectError(await limited.inject({ url: API, headers: bearer(newRawKey()) }), 429, 'rate_limited'));
      // The shop's own key in the header is not looked up now either (the address is past its allowance) ...
      expectError(await limited.inject({ url: `${API}?k=svc_live_y`, headers: bearer(s.key) }), 400, 'key_in_url');
      await written(limited, start);
      expect(await allRows(s.shopId)).toEqual([]);
      // ... unless this instance knows the key already: a request of its own puts it in the cache.
      t.clock.advance(61_000);
      expect((await limited.inject({ url: API, headers: bearer(s.key) })).statusCode).toBe(200);
      expectError(await limited.inject({ url: `${API}?k=svc_live_z`, headers: bearer(s.key) }), 400, 'key_in_url');
      await written(limited, start + 2);
      expect((await logRows(t, s.domain)).map((r) => r.errorCode)).toEqual(['key_in_url', null]);
    } finally {
      await limited.close();
    }
  });
});

describe('retention', () => {
  it('the cleanup deletes what is older than 14 days, in bounded batches, and keeps the rest', async () => {
    const s = await t.shopWithKey();
    const keyId = await keyIdOf(t, s.shopId);
    const now = t.clock.now();
    const start = recorded(t);
    // Five requests 15 days ago, one 13 days ago, one now.
    // Each recorded (its time taken) before the clock moves on.
    t.clock.set(new Date(now.getTime() - 15 * DAY));
    for (let i = 0; i < 5; i++) await t.inject({ url: `${API}?old=${i}`, headers: bearer(s.key) });
    await written(t, start + 5);
    t.clock.set(new Date(now.getTime() - 13 * DAY));
    await t.inject({ url: `${API}?recent=1`, headers: bearer(s.key) });
    await written(t, start + 6);
    t.clock.set(now);
    await t.inject({ url: `${API}?now=1`, headers: bearer(s.key) });
    await written(t, start + 7);
    expect(await logRows(t, s.domain, { keyId })).toHaveLength(7);

    const cleanup = new RequestLogCleanup(t.ctx, { batchSize: 2 });
    const deleted = await cleanup.tick();
    expect(deleted).toBeGreaterThanOrEqual(5); // other tests' rows are not older than 14 days
    expect((await logRows(t, s.domain, { keyId })).map((r) => r.path)).toEqual([`${API}?now=1`, `${API}?recent=1`]);
    expect(cleanup.stats).toMatchObject({ runs: 1, failures: 0 });
    // Nothing left to delete: a second round deletes nothing.
    expect(await cleanup.tick()).toBe(0);
  });
});

describe('a database outage', () => {
  it('never fails or holds a request: the log keeps the newest entries it can hold, drops and counts the oldest, and writes the rest when the database is back', async () => {
    let down = true;
    const real = t.database.db;
    // The database as the log's writer sees it: refusing connections while `down`.
    const flaky: Database = {
      ...real,
      withSession: (fn) => (down ? Promise.reject(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })) : real.withSession(fn)),
    };
    const app = await startTestApp({ database: { ...t.database, db: flaky }, clock: t.clock, appDeps: { requestLog: { maxBuffered: 5, batchSize: 2 } } });
    try {
      const s = await t.shopWithKey();
      await t.seed(s.shopId, 1);
      const ids: string[] = [];
      for (let i = 0; i < 8; i++) {
        const res = await app.inject({ url: `${API}?limit=${i + 1}`, headers: bearer(s.key) });
        expect(res.statusCode).toBe(200);
        ids.push(String(res.headers['x-request-id']));
        // Taken by the log before the next request, so the order is the requests' order.
        await vi.waitFor(() => expect(recorded(app)).toBe(i + 1));
      }
      // Every write fails while the database is down; what cannot be held is dropped, oldest first.
      await expect(written(app, 8)).rejects.toThrow();
      expect(app.app.requestLog!.stats).toMatchObject({ recorded: 8, written: 0, dropped: 3 });
      expect(app.app.requestLog!.buffered).toBe(5);
      const metrics = (await app.inject({ url: '/metrics' })).body;
      expect(metrics).toMatch(/^svc_request_log_dropped_total 3$/m);
      expect(metrics).toMatch(/^svc_request_log_buffered 5$/m);
      expect(await allRows(s.shopId)).toEqual([]);

      down = false;
      await app.app.requestLog!.flush();
      const rows = await logRows(t, s.domain);
      expect(rows.map((r) => r.requestId)).toEqual(ids.slice(3).reverse());
      expect((await app.inject({ url: '/metrics' })).body).toMatch(/^svc_request_log_written_total 5$/m);
    } finally {
      await app.close();
    }
  });
});

describe('a slow database', () => {
  it('a backlog that built up while a batch was being written goes in one statement, in order, nothing dropped', async () => {
    const real = t.database.db;
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let statements = 0;
    // The database as the log's writer sees it: the first batch is answered only when released.
    const slow: Database = {
      ...real,
      withSession: async (fn) => {
        if (statements++ === 0) await held;
        return real.withSession(fn);
      },
    };
    const app = await startTestApp({ database: { ...t.database, db: slow }, clock: t.clock, appDeps: { requestLog: { batchSize: 3, catchUpBatchSize: 50 } } });
    try {
      const s = await t.shopWithKey();
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) {
        const res = await app.inject({ url: `${API}?limit=${i + 1}`, headers: bearer(s.key) });
        ids.push(String(res.headers['x-request-id']));
        await vi.waitFor(() => expect(recorded(app)).toBe(i + 1));
      }
      // The first three are being written; the other seventeen wait.
      expect(app.app.requestLog!.buffered).toBe(17);
      release();
      await app.app.requestLog!.flush();
      // Three then seventeen: two statements, not seven of three.
      expect(statements).toBe(2);
      expect(app.app.requestLog!.stats).toMatchObject({ recorded: 20, written: 20, dropped: 0, batches: 2 });
      expect((await logRows(t, s.domain)).map((r) => r.requestId)).toEqual(ids.slice().reverse());
    } finally {
      await app.close();
    }
  });
});

describe('the switch', () => {
  it('REQUEST_LOG is on unless set to off', () => {
    expect(loadConfig({}).requestLog).toBe(true);
    expect(loadConfig({ REQUEST_LOG: 'on' }).requestLog).toBe(true);
    expect(loadConfig({ REQUEST_LOG: 'off' }).requestLog).toBe(false);
    expect(() => loadConfig({ REQUEST_LOG: 'no' })).toThrow(/REQUEST_LOG/);
  });

  it('off: the app has no request log, and records nothing', async () => {
    const off = await startTestApp({ database: t.database, clock: t.clock, appDeps: { requestLog: false } });
    try {
      const s = await t.shopWithKey();
      expect((await off.inject({ url: API, headers: bearer(s.key) })).statusCode).toBe(200);
      expect(off.app.requestLog).toBeNull();
      expect(await allRows(s.shopId)).toEqual([]);
      expect((await readLog(off, s.domain)).json()).toEqual({ requests: [], nextCursor: null });
    } finally {
      await off.close();
    }
  });
});
