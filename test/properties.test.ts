import fc from 'fast-check';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiKeys } from '../src/db/schema.js';
import { MemoryRateLimitStore } from '../src/http/rateLimitStore.js';
import { startTestApp, TestClock, type TestApp } from './support/app.js';
import { API, contractRow, eventRows, keyFragments, setContract } from './support/fixtures.js';

/**
 * Property-based tests over the actions endpoint and the admin API: random bodies (any JSON, unicode, huge numbers,
 * deep nesting, `__proto__` / `constructor` keys, not JSON at all), content types, headers, path segments, query
 * strings and credentials. Whatever comes in: never a 5xx; every error is the envelope whose requestId is the
 * X-Request-Id; a rejected request changes nothing; no key appears in any log line or error message.
 * Rate limits and idempotency are on (with limits out of reach), so their code is exercised too.
 */

const RUNS = Number(process.env.PROPERTY_RUNS ?? 200);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** A key, or a fragment long enough to matter, anywhere in a text. */
const KEYISH = /svc_live_[0-9A-Za-z]{8,}/;

let t: TestApp;
let shop: { shopId: string; domain: string; key: string };
let otherKey: string;
let contractId: string;
let session: string;
const secrets: string[] = [];
beforeAll(async () => {
  const clock = new TestClock();
  t = await startTestApp({
    clock,
    appDeps: { rateLimit: { perMinute: 1_000_000, authFailuresPerMinute: 1_000_000, store: new MemoryRateLimitStore(clock) } },
  });
  shop = await t.shopWithKey();
  otherKey = (await t.shopWithKey()).key;
  [{ id: contractId }] = await t.seed(shop.shopId, 1);
  session = await t.sessionToken(shop.domain);
  secrets.push(shop.key, otherKey);
});
afterAll(() => t.close());

// ---- what a client may send -------------------------------------------------------------------------------------

/** Placeholders replaced at run time by the real values: the key may be sent anywhere, on purpose. */
const fill = (s: string) =>
  s.replaceAll('@KEY', shop.key).replaceAll('@OTHER', otherKey).replaceAll('@SESSION', session).replaceAll('@CONTRACT', contractId);

const text = fc.string({ unit: 'binary', maxLength: 24 });
const printable = (maxLength: number) => fc.string({ unit: 'grapheme-ascii', maxLength });
const nastyKey = fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'action', 'resumeAt', 'nextBillingDate', 'reason', 'name', '', 'ACTION', '@KEY');
const hugeNumber = fc.constantFrom('1e400', '-1e400', '123456789012345678901234567890123', '1e-400', '-0', '9007199254740993', '0.000000000000000000001');
const timestamp = fc.oneof(
  fc.date({ min: new Date('1900-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => JSON.stringify(d.toISOString())),
  fc.constantFrom('"2027-01-05T00:00:00Z"', '"2027-02-30T00:00:00Z"', '"2027-01-05T00:00:00+02:00"', '"2027-01-05"', '"2027-01-05T24:00:00Z"', '"+275760-09-13T00:00:00.000Z"', '"2027-01-05T00:00:00.123456789Z"', '"@KEY"'),
);

/** JSON text, built by hand so that `__proto__` keys and numbers past float range reach the server as sent. */
const { json } = fc.letrec((tie) => ({
  json: fc.oneof(
    { depthSize: 'small' },
    fc.jsonValue({ maxDepth: 2, stringUnit: 'binary' }).map((v) => JSON.stringify(v)),
    hugeNumber,
    timestamp,
    tie('object'),
    tie('array'),
  ),
  object: fc
    .array(fc.tuple(fc.oneof(nastyKey, text), tie('json')), { maxLength: 5 })
    .map((entries) => `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`),
  array: fc.array(tie('json'), { maxLength: 4 }).map((items) => `[${items.join(',')}]`),
})) as { json: fc.Arbitrary<string> };

/** Strings PostgreSQL cannot store as sent (NUL, unpaired surrogates), as JSON text. */
const unstorable = fc.constantFrom('"a\\u0000b"', '"\\ud800"', '"x\\udc00y"', '"\\udbff\\udfff"');

/** Bodies shaped like actions: a real action with one of its fields holding an odd value, or anything goes. */
const actionBody = fc.oneof(
  fc
    .record({
      action: fc.constantFrom('pause', 'resume', 'cancel', 'skip', 'reschedule'),
      field: fc.option(fc.tuple(fc.constantFrom('resumeAt', 'nextBillingDate', 'reason'), fc.oneof(timestamp, unstorable, json)), { nil: undefined }),
    })
    .map(({ action, field }) => `{"action":${JSON.stringify(action)}${field ? `,${JSON.stringify(field[0])}:${field[1]}` : ''}}`),
  fc
    .record({
      action: fc.oneof(fc.constantFrom('pause', 'resume', 'cancel', 'skip', 'reschedule', 'PAUSE', 'pause ', '@KEY'), text),
      fields: fc.array(fc.tuple(fc.oneof(fc.constantFrom('resumeAt', 'nextBillingDate', 'reason'), nastyKey), fc.oneof(timestamp, json, unstorable)), { maxLength: 3 }),
    })
    .map(({ action, fields }) => `{${[`"action":${JSON.stringify(action)}`, ...fields.map(([k, v]) => `${JSON.stringify(k)}:${v}`)].join(',')}}`),
);

const body = fc.oneof(
  { arbitrary: actionBody, weight: 5 },
  { arbitrary: json, weight: 3 },
  { arbitrary: text, weight: 1 },
  {
    arbitrary: fc.constantFrom(
      '',
      '{',
      '{"action":',
      'null',
      '"skip"',
      '{"action":"skip"}'.padEnd(17 * 1024, ' '),
      '['.repeat(4000) + ']'.repeat(4000),
      '{"a":'.repeat(2000) + '1' + '}'.repeat(2000),
      '{"action":"skip","__proto__":{"polluted":true}}',
      '{"constructor":{"prototype":{"polluted":true}},"action":"cancel"}',
      '\ufeff{"action":"skip"}',
      '{"action":"skip"}\u0000',
    ),
    weight: 1,
  },
  { arbitrary: fc.constant(undefined), weight: 1 },
);

const contentType = fc.oneof(
  { arbitrary: fc.constantFrom('application/json', 'application/json; charset=utf-8'), weight: 12 },
  {
    arbitrary: fc.constantFrom('APPLICATION/JSON', 'application/json;charset=latin1', 'application/json; charset=utf-16', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', 'application/json-patch+json', '*/*', ''),
    weight: 3,
  },
  { arbitrary: printable(40), weight: 1 },
  { arbitrary: fc.constant(undefined), weight: 1 },
);

const headerName = fc
  .stringMatching(/^[a-z][a-z0-9-]{0,15}$/)
  .filter((n) => !['host', 'content-length', 'transfer-encoding', 'content-type', 'authorization', 'connection', 'expect', 'upgrade'].includes(n));
const headers = fc.record(
  {
    extra: fc.dictionary(headerName, fc.oneof(printable(60), fc.constant('@KEY')), { maxKeys: 3 }),
    idempotencyKey: fc.oneof(fc.constantFrom('k1', 'k2', 'same key', '@KEY', ''), printable(300)),
    contentEncoding: fc.option(fc.constantFrom('gzip', 'br', 'identity', 'x-unknown'), { freq: 8, nil: undefined }),
    accept: fc.constantFrom('application/json', 'text/html', '*/*', 'application/xml'),
  },
  { requiredKeys: [] },
);

const segment = fc.oneof(
  { arbitrary: fc.constant('@CONTRACT'), weight: 10 },
  { arbitrary: fc.stringMatching(/^\d{1,25}$/), weight: 2 },
  { arbitrary: text.map(encodeURIComponent), weight: 2 },
  {
    arbitrary: fc.constantFrom('..', '%2e%2e', '%2F', '%00', '-1', '0x10', '1e3', '%201', '%D9%A3', '9223372036854775807', '9223372036854775808', '@KEY', '%zz', '1'.repeat(150)),
    weight: 1,
  },
);

const query = fc.oneof(
  { arbitrary: fc.constant(''), weight: 4 },
  { arbitrary: fc.array(fc.tuple(text, text), { maxLength: 3 }).map((pairs) => `?${pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&')}`), weight: 2 },
  { arbitrary: fc.constantFrom('?', '?&&', '?a', '?limit=1&limit=2', '?__proto__[x]=1', '?constructor[prototype][x]=1', '?%zz', '?cursor=@KEY', '?status=PAUSED&status=ACTIVE'), weight: 1 },
);

const credentials = (valid: string) =>
  fc.oneof(
    { arbitrary: fc.constant(valid), weight: 16 },
    { arbitrary: fc.constantFrom(undefined, 'Bearer', 'Bearer ', 'Basic abc', 'bearer @KEY', 'Bearer @KEY extra', 'Bearer @OTHER', 'Bearer @SESSION', 'Bearer @KEY', `Bearer svc_live_${'x'.repeat(49)}`), weight: 2 },
    { arbitrary: printable(80), weight: 1 },
  );

const method = fc.oneof({ arbitrary: fc.constant('POST'), weight: 8 }, { arbitrary: fc.constantFrom('GET', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'), weight: 1 });

type Req = {
  method: string;
  url: string;
  authorization?: string;
  body?: string;
  contentType?: string;
  headers: { extra?: Record<string, string>; idempotencyKey?: string; contentEncoding?: string; accept?: string };
};

async function send(r: Req) {
  const h: Record<string, string> = {};
  for (const [k, v] of Object.entries(r.headers.extra ?? {})) h[k] = fill(v);
  if (r.headers.idempotencyKey !== undefined) h['idempotency-key'] = fill(r.headers.idempotencyKey);
  if (r.headers.contentEncoding) h['content-encoding'] = r.headers.contentEncoding;
  if (r.headers.accept) h.accept = r.headers.accept;
  if (r.contentType !== undefined) h['content-type'] = r.contentType;
  if (r.authorization !== undefined) h.authorization = fill(r.authorization);
  const res = await t.inject({ method: r.method as 'POST', url: fill(r.url), headers: h, payload: r.body === undefined ? undefined : fill(r.body) });
  if (process.env.PROPERTY_STATS) {
    const code = res.statusCode < 400 || r.method === 'HEAD' ? String(res.statusCode) : `${res.statusCode} ${res.json().error?.code}`;
    seen.set(code, (seen.get(code) ?? 0) + 1);
  }
  if (res.statusCode === 201 && res.json().secret) secrets.push(res.json().secret);
  return res;
}

/** The properties every response must have, whatever the request. */
function checkResponse(r: Req, res: Awaited<ReturnType<typeof send>>) {
  expect(res.statusCode, `${r.method} ${r.url} → ${res.statusCode} ${res.body}`).toBeLessThan(500);
  const requestId = res.headers['x-request-id'];
  expect(requestId).toMatch(UUID);
  if (res.statusCode < 400 || r.method === 'HEAD') return;
  const payload = res.json();
  expect(Object.keys(payload)).toEqual(['error']);
  const { error } = payload;
  expect(Object.keys(error).every((k) => ['code', 'message', 'requestId', 'details'].includes(k))).toBe(true);
  expect(typeof error.code).toBe('string');
  expect(typeof error.message).toBe('string');
  expect(error.requestId).toBe(requestId);
  if (error.details !== undefined) for (const d of error.details) expect(Object.keys(d).sort()).toEqual(['message', 'path']);
  expect(res.body, 'no key in an error').not.toMatch(KEYISH);
}

const seen = new Map<string, number>();
afterAll(() => {
  if (process.env.PROPERTY_STATS) console.log([...seen].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${n}\t${k}`).join('\n'));
});

function expectNoKeyInLogs() {
  const logs = t.logs.join('\n');
  expect(logs).not.toMatch(/svc_live_[0-9A-Za-z]{49}/);
  for (const secret of secrets) for (const fragment of keyFragments(secret, 12)) expect(logs).not.toContain(fragment);
}

// ---- the properties ---------------------------------------------------------------------------------------------

describe('properties', () => {
  it('actions endpoint: any request gets a non-5xx answer, errors are envelopes, and a rejection changes nothing', { timeout: 180_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          start: fc.constantFrom('ACTIVE', 'PAUSED', 'CANCELLED', 'FAILED', 'EXPIRED'),
          method,
          segment,
          query,
          authorization: credentials('Bearer @KEY'),
          body,
          contentType,
          headers,
        }),
        async (x) => {
          await setContract(t, contractId, { status: x.start, cancelledAt: null, pausedAt: null, resumeAt: null });
          const before = { row: await contractRow(t, contractId), events: (await eventRows(t, contractId)).length };
          const r: Req = { ...x, url: `${API}/${x.segment}/actions${x.query}` };
          const res = await send(r);
          checkResponse(r, res);
          if (res.statusCode >= 400) {
            expect({ row: await contractRow(t, contractId), events: (await eventRows(t, contractId)).length }).toEqual(before);
          }
        },
      ),
      { numRuns: RUNS },
    );
    expectNoKeyInLogs();
  });

  it('admin API: any request gets a non-5xx answer, errors are envelopes, and a rejection changes no key', { timeout: 180_000 }, async () => {
    const keyState = async () =>
      (await t.ctx.db.orm.select({ id: apiKeys.id, name: apiKeys.name, revokedAt: apiKeys.revokedAt }).from(apiKeys).where(eq(apiKeys.shopId, shop.shopId)))
        .map((k) => `${k.id}:${k.name}:${k.revokedAt?.toISOString() ?? '-'}`)
        .sort();
    const paths = fc.oneof(
      fc.constant('/admin/api/keys'),
      fc.constant('/admin/api/shop'),
      fc.constant('/admin/api/contracts'),
      segment.map((s) => `/admin/api/keys/${s}/revoke`),
      segment.map((s) => `/admin/api/contracts/${s}/events`),
      segment.map((s) => `/admin/api/${s}`),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          method: fc.oneof({ arbitrary: fc.constant('POST'), weight: 4 }, { arbitrary: fc.constantFrom('GET', 'PUT', 'DELETE', 'HEAD'), weight: 2 }),
          path: paths,
          query,
          authorization: credentials('Bearer @SESSION'),
          body: fc.oneof(body, fc.record({ name: fc.oneof(text, printable(120), fc.constant(null)) }).map((v) => JSON.stringify(v)), unstorable.map((v) => `{"name":${v}}`)),
          contentType,
          headers,
        }),
        async (x) => {
          const before = await keyState();
          const r: Req = { ...x, url: `${x.path}${x.query}` };
          const res = await send(r);
          checkResponse(r, res);
          if (res.statusCode >= 400) expect(await keyState()).toEqual(before);
          // Keep room for new keys: with five active keys every generation would be the same 409.
          if (res.statusCode === 201) {
            await t.ctx.db.orm.update(apiKeys).set({ revokedAt: t.clock.now() }).where(eq(apiKeys.id, res.json().key.id));
          }
        },
      ),
      { numRuns: RUNS },
    );
    expectNoKeyInLogs();
  });
});

describe('regressions the properties found', () => {
  it('a malformed percent-encoding or an over-long segment in the URL is a 400 envelope with X-Request-Id, not Fastify\'s own body', async () => {
    for (const url of [`${API}/%zz/actions`, `/admin/api/keys/%E0%A4%A/revoke`, `${API}/${'1'.repeat(150)}/actions`, `/nothing/%zz${shop.key}`]) {
      const res = await t.inject({ method: 'POST', url, headers: { authorization: `Bearer ${shop.key}`, 'content-type': 'application/json' }, payload: '{}' });
      expect(res.statusCode, url).toBe(400);
      // A key in such a URL is still a key in the URL.
      expect(res.json().error).toMatchObject({ code: url.includes(shop.key) ? 'key_in_url' : 'invalid_request', requestId: res.headers['x-request-id'] });
      expect(res.body).not.toContain('svc_live_');
    }
  });

  it('text PostgreSQL cannot store (NUL, an unpaired surrogate) is a 400, for a cancellation reason and a key name', async () => {
    await setContract(t, contractId, { status: 'ACTIVE', cancelledAt: null, pausedAt: null, resumeAt: null });
    // JSON escapes, as a client would send them.
    for (const value of ['a\\u0000b', '\\ud800', 'x\\udc00y']) {
      const cancel = await t.inject({
        method: 'POST',
        url: `${API}/${contractId}/actions`,
        headers: { authorization: `Bearer ${shop.key}`, 'content-type': 'application/json' },
        payload: `{"action":"cancel","reason":"${value}"}`,
      });
      expect(cancel.statusCode).toBe(400);
      expect(cancel.json().error.details).toEqual([{ path: 'reason', message: 'must be valid Unicode text without NUL characters' }]);
      const named = await t.inject({
        method: 'POST',
        url: '/admin/api/keys',
        headers: { authorization: `Bearer ${session}`, 'content-type': 'application/json' },
        payload: `{"name":"${value}"}`,
      });
      expect(named.statusCode).toBe(400);
    }
    expect((await contractRow(t, contractId)).status).toBe('ACTIVE');
    // A well-formed pair (an emoji) is fine.
    const ok = await t.inject({
      method: 'POST',
      url: `${API}/${contractId}/actions`,
      headers: { authorization: `Bearer ${shop.key}`, 'content-type': 'application/json' },
      payload: '{"action":"cancel","reason":"\\udbff\\udfff moved away \u2615"}',
    });
    expect(ok.statusCode).toBe(200);
  });
});
