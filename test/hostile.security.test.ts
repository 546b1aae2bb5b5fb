import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryRateLimitStore } from '../src/http/rateLimitStore.js';
import { newRawKey } from '../src/domain/keys.js';
import { bearer, startTestApp, TestClock, type TestApp } from './support/app.js';
import { API, adminAuth } from './support/fixtures.js';
import { listeningPort, rawClient, type RawResponse } from './support/rawHttp.js';

/**
 * Hostile clients on real sockets (README, Hostile clients): a request must arrive in full within REQUEST_BODY_TIMEOUT_MS (408
 * and the connection closed), a refusal sent before the body has arrived closes the connection, admin requests are
 * authenticated before their body is read, one address holds at most MAX_CONNECTIONS_PER_IP connections, and CONNECT
 * gets the envelope. Every wait is for an event (a response, the connection closing), never a fixed time.
 */

const TIMEOUT_MS = 300;
const clock = new TestClock();
/** An app whose requests must arrive within 300 ms. */
let quick: TestApp;
/** An app that would wait half a minute for a body: a connection it closes sooner was closed by the refusal. */
let patient: TestApp;
let quickPort: number;
let patientPort: number;
let shop: { shopId: string; domain: string; key: string };
let contractId: string;

beforeAll(async () => {
  quick = await startTestApp({ clock, appDeps: { clientLimits: { requestBodyTimeoutMs: TIMEOUT_MS, maxConnectionsPerIp: 256 } } });
  patient = await startTestApp({
    clock,
    database: { ...quick.database, drop: async () => {} },
    appDeps: {
      clientLimits: { requestBodyTimeoutMs: 30_000, maxConnectionsPerIp: 256 },
      rateLimit: { perMinute: 1000, authFailuresPerMinute: 2, store: new MemoryRateLimitStore(clock) },
    },
  });
  quickPort = await listeningPort(quick.app);
  patientPort = await listeningPort(patient.app);
  shop = await quick.shopWithKey();
  [{ id: contractId }] = await quick.seed(shop.shopId, 1);
});
afterAll(async () => {
  await patient?.close();
  await quick?.close();
});

/** A request's head announcing a body of `length` bytes, of which none is sent yet. */
const head = (method: string, path: string, length: number, headers: Record<string, string> = {}) =>
  `${method} ${path} HTTP/1.1\r\nHost: svc.test\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n` +
  Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('') +
  '\r\n';

function expectEnvelope(res: RawResponse, status: number, code: string) {
  expect(res.status, res.body).toBe(status);
  const body = JSON.parse(res.body);
  expect(body).toEqual({ error: { code, message: expect.any(String), requestId: res.headers['x-request-id'] } });
  expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  return body.error;
}

describe('a request must arrive in full within REQUEST_BODY_TIMEOUT_MS', () => {
  it('a body trickled one byte at a time: 408 request_timeout in the envelope, and the connection closes', async () => {
    const c = await rawClient(quickPort);
    c.write(head('POST', `${API}/${contractId}/actions`, 100, bearer(shop.key)) + '{');
    c.trickle(' ', 50);
    await c.closed;
    const [res, ...more] = c.responses();
    expect(more).toEqual([]);
    const error = expectEnvelope(res, 408, 'request_timeout');
    expect(res.headers.connection).toBe('close');
    // The request's log line carries the id the client was given.
    await expect.poll(() => quick.logs.some((l) => l.includes(error.requestId) && l.includes('"statusCode":408'))).toBe(true);
  });

  it('headers trickled, or nothing sent at all: 408 and closed', async () => {
    const trickling = await rawClient(quickPort);
    trickling.write('GET /healthz HTTP/1.1\r\nHost: svc.test\r\n');
    trickling.trickle('X', 50);
    const silent = await rawClient(quickPort);
    await Promise.all([trickling.closed, silent.closed]);
    expectEnvelope(trickling.responses()[0], 408, 'request_timeout');
    expectEnvelope(silent.responses()[0], 408, 'request_timeout');
  });

  it('a request that arrives in time is served, on a connection that stays open for the next one', async () => {
    const c = await rawClient(quickPort);
    const body = '{"action":"skip"}';
    c.write(head('POST', `${API}/${contractId}/actions`, body.length, bearer(shop.key)) + body);
    const [res] = await c.responsesArrived(1);
    expect(res.status, res.body).toBe(200);
    expect(res.headers.connection).toBe('keep-alive');
    c.write('GET /healthz HTTP/1.1\r\nHost: svc.test\r\n\r\n');
    expect((await c.responsesArrived(2))[1].status).toBe(200);
    c.destroy();
  });
});

describe('a refusal sent before the body has arrived closes the connection', () => {
  type Refusal = { name: string; request: () => Promise<{ path: string; headers: Record<string, string> }>; status: number; code: string };
  const refusals: Refusal[] = [
    { name: 'API: unknown key', request: async () => ({ path: `${API}/${contractId}/actions`, headers: bearer(newRawKey()) }), status: 401, code: 'unauthorized' },
    { name: 'API: no key', request: async () => ({ path: `${API}/${contractId}/actions`, headers: {} }), status: 401, code: 'unauthorized' },
    { name: 'MCP: unknown key', request: async () => ({ path: '/mcp', headers: bearer(newRawKey()) }), status: 401, code: 'unauthorized' },
    {
      name: 'API: a shop without API access',
      request: async () => ({ path: `${API}/${contractId}/actions`, headers: bearer((await patient.shopWithKey('basic')).key) }),
      status: 403,
      code: 'plan_required',
    },
    { name: 'admin: no session token', request: async () => ({ path: '/admin/api/keys', headers: {} }), status: 401, code: 'unauthorized' },
    {
      name: 'admin: an API key instead of a session token',
      request: async () => ({ path: '/admin/api/webhook-endpoints', headers: bearer(shop.key) }),
      status: 401,
      code: 'unauthorized',
    },
  ];

  it.each(refusals)('$name: $status $code with Connection: close, while the client is still sending', async ({ request, status, code }) => {
    clock.advance(60_000); // a fresh window of the failed-authentication limit
    const { path, headers } = await request();
    const c = await rawClient(patientPort);
    c.write(head('POST', path, 10_000, headers) + '{"a":');
    c.trickle(' ', 50);
    await c.closed;
    const [res] = c.responses();
    expectEnvelope(res, status, code);
    expect(res.headers.connection).toBe('close');
  });

  it('API: too many failed authentications from the address: 429 with Connection: close', async () => {
    clock.advance(60_000);
    const ip = '127.0.0.1';
    // Use up the address's failures (2), then one more request with a body still to come.
    for (let i = 0; i < 2; i++) await patient.inject({ url: API, headers: bearer(newRawKey()), remoteAddress: ip });
    const c = await rawClient(patientPort);
    c.write(head('POST', `${API}/${contractId}/actions`, 10_000, bearer(newRawKey())) + '{');
    c.trickle(' ', 50);
    await c.closed;
    const [res] = c.responses();
    expectEnvelope(res, 429, 'rate_limited');
    expect(res.headers.connection).toBe('close');
    clock.advance(60_000);
  });

  it('an error once the body has been read keeps the connection open, and so does a refusal of a request without a body', async () => {
    const c = await rawClient(patientPort);
    const body = '{"action":"nap"}';
    c.write(head('POST', `${API}/${contractId}/actions`, body.length, bearer(shop.key)) + body);
    const [res] = await c.responsesArrived(1);
    expectEnvelope(res, 400, 'unsupported_action');
    expect(res.headers.connection).toBe('keep-alive');
    c.write(`GET ${API} HTTP/1.1\r\nHost: svc.test\r\n\r\n`);
    const [, refused] = await c.responsesArrived(2);
    expectEnvelope(refused, 401, 'unauthorized');
    expect(refused.headers.connection).toBe('keep-alive');
    c.destroy();
  });

  it('admin: the session token is checked before the body is read: a valid one waits for its body, then is served', async () => {
    const auth = await adminAuth(patient, shop.domain);
    const c = await rawClient(patientPort);
    const body = '{"name":"slow but honest"}';
    c.write(head('POST', '/admin/api/keys', body.length, auth) + body.slice(0, 5));
    c.write(body.slice(5));
    const [res] = await c.responsesArrived(1);
    expect(res.status, res.body).toBe(201);
    c.destroy();
  });
});

describe('open connections per address (MAX_CONNECTIONS_PER_IP)', () => {
  const served = async (port: number): Promise<number | 'closed'> => {
    const c = await rawClient(port);
    c.write('GET /healthz HTTP/1.1\r\nHost: svc.test\r\n\r\n');
    const status = await c.responsesArrived(1).then(
      ([res]) => res.status,
      () => c.responses()[0]?.status ?? ('closed' as const),
    );
    c.destroy();
    return status;
  };

  it('past the limit a connection is answered 429 rate_limited in the envelope and closed at once; closing one makes room', async () => {
    const limited = await startTestApp({
      clock,
      database: { ...quick.database, drop: async () => {} },
      appDeps: { clientLimits: { requestBodyTimeoutMs: 30_000, maxConnectionsPerIp: 3 } },
    });
    try {
      const port = await listeningPort(limited.app);
      const open = [];
      for (let i = 0; i < 3; i++) {
        const c = await rawClient(port);
        c.write('GET /healthz HTTP/1.1\r\nHost: svc.test\r\n\r\n');
        expect((await c.responsesArrived(1))[0].status).toBe(200);
        open.push(c);
      }
      const extra = await rawClient(port);
      await extra.closed;
      const [res] = extra.responses();
      expectEnvelope(res, 429, 'rate_limited');
      expect(res.headers['retry-after']).toBe('1');
      expect(res.headers.connection).toBe('close');
      // The connections let in are still served.
      open[0].write('GET /healthz HTTP/1.1\r\nHost: svc.test\r\n\r\n');
      expect((await open[0].responsesArrived(2))[1].status).toBe(200);
      // Once the server has seen one close, a new connection is let in.
      open[1].destroy();
      await expect.poll(() => served(port), { timeout: 10_000, interval: 50 }).toBe(200);
      const metrics = await limited.inject({ url: '/metrics' });
      expect(metrics.body).toMatch(/svc_rate_limited_total\{limit="connections"\} [1-9]/);
      for (const c of open) c.destroy();
    } finally {
      await limited.close();
    }
  });

  it('connections from a trusted proxy (TRUST_PROXY) are not counted: its clients are many', async () => {
    const behindProxy = await startTestApp({
      clock,
      database: { ...quick.database, drop: async () => {} },
      appDeps: { trustProxy: ['127.0.0.1'], clientLimits: { requestBodyTimeoutMs: 30_000, maxConnectionsPerIp: 1 } },
    });
    try {
      const port = await listeningPort(behindProxy.app);
      const held = await rawClient(port);
      held.write('GET /healthz HTTP/1.1\r\nHost: svc.test\r\n\r\n');
      await held.responsesArrived(1);
      expect(await served(port)).toBe(200);
      held.destroy();
    } finally {
      await behindProxy.close();
    }
  });
});

describe('CONNECT', () => {
  it('gets 405 method_not_allowed in the envelope, and the connection closes (Node would close it without a word)', async () => {
    const c = await rawClient(quickPort);
    c.write('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    await c.closed;
    const [res] = c.responses();
    expectEnvelope(res, 405, 'method_not_allowed');
    expect(res.headers.connection).toBe('close');
  });
});
