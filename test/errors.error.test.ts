import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/db/client.js';
import { newRawKey } from '../src/domain/keys.js';
import { bearer, startTestApp, TEST_CREDENTIALS, type TestApp } from './support/app.js';
import { API, expectError, keyFragments, sql } from './support/fixtures.js';

/** Every error leaves as the envelope with X-Request-Id, and none leaks internals (docs/product.md §4, §5). */

const SQLISH = 'duplicate key value violates unique constraint "api_keys_digest_key" in SELECT * FROM api_keys WHERE digest = $1';
let t: TestApp;
let key: string;
let contractId: string;
beforeAll(async () => {
  t = await startTestApp({
    extraRoutes: (app) => {
      app.get('/test/boom', async () => {
        const err = new Error(SQLISH) as Error & { code: string; detail: string };
        err.code = '23505';
        err.detail = 'Key (digest)=(abc) already exists.';
        throw err;
      });
      app.get('/test/throws-string', async () => {
        throw 'SELECT secret FROM vault';
      });
    },
  });
  const s = await t.shopWithKey();
  key = s.key;
  [{ id: contractId }] = await t.seed(s.shopId, 1);
});
afterAll(() => t.close());

const actionsUrl = () => `${API}/${contractId}/actions`;
const noInternals = (body: string) => {
  for (const leak of ['SELECT', 'select ', 'FROM ', 'api_keys', 'subscription_contracts', 'relation', 'at async', '.ts:', 'node_modules', 'stack', 'Failed query', 'constraint', 'vault']) {
    expect(body, `body leaks ${JSON.stringify(leak)}`).not.toContain(leak);
  }
};

describe('client errors', () => {
  it('validation: 400 with details and X-Request-Id equal to error.requestId', async () => {
    const error = expectError(await t.inject({ url: `${API}?limit=0`, headers: bearer(key) }), 400, 'invalid_request');
    expect(error.details?.length).toBeGreaterThan(0);
  });

  it('malformed JSON → 400 invalid_request', async () => {
    const res = await t.inject({ method: 'POST', url: actionsUrl(), headers: { ...bearer(key), 'content-type': 'application/json' }, payload: '{"action": "skip",' });
    expect(expectError(res, 400, 'invalid_request').message).toMatch(/JSON/);
  });

  it('an empty JSON body → 400 invalid_request', async () => {
    const res = await t.inject({ method: 'POST', url: actionsUrl(), headers: { ...bearer(key), 'content-type': 'application/json' }, payload: '' });
    expectError(res, 400, 'invalid_request');
  });

  it('a body over 16 KiB → 413 payload_too_large; 16 KiB is fine', async () => {
    const big = JSON.stringify({ action: 'cancel', reason: 'x'.repeat(16 * 1024) });
    expectError(await t.inject({ method: 'POST', url: actionsUrl(), headers: { ...bearer(key), 'content-type': 'application/json' }, payload: big }), 413, 'payload_too_large');
    const padded = JSON.stringify({ action: 'skip' }).padEnd(16 * 1024, ' ');
    expect((await t.inject({ method: 'POST', url: actionsUrl(), headers: { ...bearer(key), 'content-type': 'application/json' }, payload: padded })).statusCode).toBe(200);
  });

  it('actions without application/json → 415 unsupported_media_type', async () => {
    const body = JSON.stringify({ action: 'skip' });
    for (const headers of [{ 'content-type': 'text/plain' }, { 'content-type': 'application/x-www-form-urlencoded' }, { 'content-type': 'multipart/form-data; boundary=x' }, {}]) {
      const res = await t.inject({ method: 'POST', url: actionsUrl(), headers: { ...bearer(key), ...headers }, payload: body });
      expectError(res, 415, 'unsupported_media_type');
    }
    const none = await t.inject({ method: 'POST', url: actionsUrl(), headers: bearer(key) });
    expectError(none, 415, 'unsupported_media_type');
    // application/json with a charset is JSON.
    const charset = await t.inject({ method: 'POST', url: actionsUrl(), headers: { ...bearer(key), 'content-type': 'application/json; charset=utf-8' }, payload: body });
    expect(charset.statusCode).toBe(200);
  });

  it('an unknown route → 404 not_found', async () => {
    for (const url of ['/nope', '/api/v2/subscription-contracts', `${API}/1/nope`, '/api/v1']) {
      expectError(await t.inject({ url, headers: bearer(key) }), 404, 'not_found');
    }
  });

  it('a known path with the wrong method → 405 method_not_allowed with Allow', async () => {
    const cases: [string, string, string][] = [
      ['DELETE', `${API}/${contractId}`, 'GET'],
      ['PUT', API, 'GET'],
      ['GET', actionsUrl(), 'POST'],
      ['PATCH', `${API}/${contractId}/events`, 'GET'],
      ['POST', '/healthz', 'GET'],
    ];
    for (const [method, url, allow] of cases) {
      const res = await t.inject({ method: method as 'GET', url, headers: bearer(key), payload: method === 'GET' ? undefined : {} });
      expectError(res, 405, 'method_not_allowed');
      expect(res.headers.allow).toBe(allow);
    }
  });
});

describe('no CORS: browsers cannot call the API', () => {
  it('a preflight is not approved and no response carries access-control-* headers', async () => {
    const origin = { origin: 'https://evil.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' };
    const responses = [
      await t.inject({ method: 'OPTIONS', url: actionsUrl(), headers: origin }),
      await t.inject({ method: 'OPTIONS', url: API, headers: origin }),
      await t.inject({ method: 'OPTIONS', url: '/admin/api/keys', headers: origin }),
      await t.inject({ url: API, headers: { ...bearer(key), origin: 'https://evil.example' } }),
      await t.inject({ method: 'POST', url: actionsUrl(), headers: { ...bearer(key), origin: 'https://evil.example' }, payload: { action: 'skip' } }),
      await t.inject({ url: API, headers: { origin: 'https://evil.example' } }),
      await t.inject({ url: '/api/v1/openapi.json', headers: { origin: 'https://evil.example' } }),
    ];
    for (const res of responses.slice(0, 3)) {
      expect(res.statusCode).toBeGreaterThanOrEqual(400);
      expectError(res, res.statusCode, res.json().error.code);
    }
    for (const res of responses) {
      expect(Object.keys(res.headers).filter((h) => h.toLowerCase().startsWith('access-control-'))).toEqual([]);
      expect(res.headers['x-request-id']).toBeTruthy();
    }
  });
});

describe('500s reveal nothing', () => {
  it('an unexpected error carrying SQL and a stack → the fixed internal message', async () => {
    for (const url of ['/test/boom', '/test/throws-string']) {
      const res = await t.inject({ url });
      const error = expectError(res, 500, 'internal_error');
      expect(error.message).toBe('An unexpected error occurred. Try again; if it persists, contact support with the request id.');
      expect(error.details).toBeUndefined();
      noInternals(res.body);
      expect(Object.keys(res.headers).join(',')).not.toMatch(/stack/);
    }
    // The operator's log has what happened, under the same request id.
    const id = (await t.inject({ url: '/test/boom' })).json().error.requestId;
    const line = t.logs.map((l) => JSON.parse(l)).find((l) => l.requestId === id && l.level >= 50);
    expect(JSON.stringify(line)).toContain('duplicate key value');
  });

  it('a real database failure (a missing table) → 500 without SQL, and the service recovers', async () => {
    await sql(t, 'ALTER TABLE subscription_contracts RENAME TO subscription_contracts_gone');
    try {
      const read = await t.inject({ url: `${API}/${contractId}`, headers: bearer(key) });
      expectError(read, 500, 'internal_error');
      noInternals(read.body);
      const act = await t.inject({ method: 'POST', url: actionsUrl(), headers: bearer(key), payload: { action: 'skip' } });
      expectError(act, 500, 'internal_error');
      noInternals(act.body);
    } finally {
      await sql(t, 'ALTER TABLE subscription_contracts_gone RENAME TO subscription_contracts');
    }
    expect((await t.inject({ url: `${API}/${contractId}`, headers: bearer(key) })).statusCode).toBe(200);
  });
});

describe('503 when the database cannot be reached', () => {
  let down: TestApp;
  beforeAll(async () => {
    const db = await openDatabase({ kind: 'postgres', url: 'postgres://postgres@127.0.0.1:1/x' });
    down = await startTestApp({ database: { db, connectAgain: async () => db, observed: async () => db, url: null, schema: null, drop: () => db.close() }, clock: t.clock });
  });
  afterAll(async () => {
    await down.close();
    await down.database.drop();
  });

  it('API and admin requests answer 503 unavailable with Retry-After; nothing internal leaks', async () => {
    const api = await down.inject({ url: API, headers: bearer(newRawKey()) });
    expectError(api, 503, 'unavailable');
    expect(api.headers['retry-after']).toBeDefined();
    noInternals(api.body);
    expect(api.body).not.toContain('ECONNREFUSED');
    const admin = await down.inject({ url: '/admin/api/shop', headers: { authorization: `Bearer ${await down.sessionToken('down.myshopify.com')}` } });
    expectError(admin, 503, 'unavailable');
    expect(TEST_CREDENTIALS.secret).toBeTruthy();
  });

  it('/readyz is 503, /healthz is 200', async () => {
    expectError(await down.inject({ url: '/readyz' }), 503, 'unavailable');
    const health = await down.inject({ url: '/healthz' });
    expect(health.statusCode).toBe(200);
    expect(health.json()).toEqual({ status: 'ok' });
    // While the healthy app is ready.
    expect((await t.inject({ url: '/readyz' })).statusCode).toBe(200);
  });

  it('a bad checksum is still a 401 there: it needs no database', async () => {
    expectError(await down.inject({ url: API, headers: bearer(newRawKey().slice(0, -1) + '!') }), 401, 'unauthorized');
  });
});

describe('key_in_url', () => {
  it('a key in the query string or in the path → 400 key_in_url; the log line has no part of the key', async () => {
    const urls = [
      `${API}?key=${key}`,
      `${API}/${key}`,
      `${API}/${contractId}/events?api_key=${key}&limit=1`,
      `/nope/${key}`,
      `${API}?key=${key.replace(/_/g, '%5F')}`,
      `${API}?key=${key.replace(/_/g, '%5f')}`,
    ];
    for (const url of urls) {
      const before = t.logs.length;
      const res = await t.inject({ url, headers: bearer(key) });
      const error = expectError(res, 400, 'key_in_url');
      expect(error.message).toMatch(/revoke/i);
      expect(res.body).not.toContain('svc_live_');
      const lines = t.logs.slice(before).join('\n');
      expect(lines).toContain(error.requestId);
      for (const piece of keyFragments(key)) expect(lines).not.toContain(piece);
      for (const piece of keyFragments(key)) expect(res.body).not.toContain(piece);
    }
    // Even without an Authorization header, and even for a malformed key.
    expectError(await t.inject({ url: `${API}?k=svc_live_abc` }), 400, 'key_in_url');
  });
});

describe('X-Request-Id', () => {
  it('is on successful responses too, unique per request, and not taken from the client', async () => {
    const a = await t.inject({ url: API, headers: { ...bearer(key), 'x-request-id': 'client-chosen' } });
    const b = await t.inject({ url: '/healthz' });
    expect(a.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(b.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(a.headers['x-request-id']).not.toBe(b.headers['x-request-id']);
  });
});

describe('while shutting down', () => {
  it('a request that arrives on an open connection after close() began gets 503 unavailable in the envelope, with Connection: close; the one in flight finishes', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let arrived!: () => void;
    const inFlight = new Promise<void>((r) => (arrived = r));
    const closing = await startTestApp({
      database: { ...t.database, drop: async () => {} },
      clock: t.clock,
      extraRoutes: (app) => app.get('/test/slow', async () => (arrived(), await held, { ok: true })),
    });
    await closing.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = closing.app.server.address() as import('node:net').AddressInfo;
    const socket = (await import('node:net')).connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (d) => (received += d.toString()));
    const ended = new Promise<void>((r) => socket.on('close', () => r()));
    // One request in flight on a keep-alive connection...
    socket.write('GET /test/slow HTTP/1.1\r\nHost: x\r\n\r\n');
    await inFlight;
    const closed = closing.app.close();
    // ...and the next one on the same connection once shutdown has begun.
    socket.write(`GET ${API}/1 HTTP/1.1\r\nHost: x\r\n\r\n`);
    await new Promise((r) => setTimeout(r, 100));
    release();
    await ended;
    await closed;
    const [first, second] = received.split(/(?=HTTP\/1\.1 )/);
    expect(first).toMatch(/^HTTP\/1\.1 200 /);
    expect(second).toMatch(/^HTTP\/1\.1 503 /);
    expect(second.toLowerCase()).toContain('connection: close');
    const requestId = /x-request-id: (\S+)/i.exec(second)![1];
    const body = JSON.parse(second.slice(second.indexOf('\r\n\r\n') + 4));
    expect(body).toEqual({ error: { code: 'unavailable', message: expect.stringContaining('shutting down'), requestId } });
  });
});

describe('a request that is not HTTP Node can read', () => {
  it.each([
    ['garbage for a request line', 'NOT HTTP AT ALL\r\n\r\n', 400],
    ['a control character in a header', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Bad: a\u0001b\r\n\r\n', 400],
    ['Content-Length beside Transfer-Encoding', 'POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 400],
    ['a broken chunk', 'POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n', 400],
    ['headers over the limit', `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
  ])('%s: %s in the envelope, with X-Request-Id, and the connection closed', async (_name, raw, status) => {
    await t.app.listen({ port: 0, host: '127.0.0.1' }).catch(() => {}); // once for the file; already listening after
    const { port } = t.app.server.address() as import('node:net').AddressInfo;
    const socket = (await import('node:net')).connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (d) => (received += d.toString()));
    socket.on('error', () => {});
    const closed = new Promise<void>((r) => socket.on('close', () => r()));
    socket.write(raw);
    await closed;
    expect(received).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
    expect(received.toLowerCase()).toContain('connection: close');
    const requestId = /x-request-id: (\S+)/i.exec(received)![1];
    const body = JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4));
    expect(body).toEqual({ error: { code: 'invalid_request', message: expect.any(String), requestId } });
  });
});
