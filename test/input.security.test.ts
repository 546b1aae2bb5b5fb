import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { adminAuth, API, contractRow, eventRows, expectError, keyFragments, randomPart, sql } from './support/fixtures.js';

/**
 * What a hostile client can put in a request's body and URL (README, Hostile clients): JSON nested deeper than 64 or with a key
 * twice in one object is 400 invalid_request on every surface that reads JSON, never a 500 and never a half-read
 * request; a key in the URL is recognised however it is percent-encoded, refused with 400 key_in_url, and no form of
 * it reaches a log line.
 */

let t: TestApp;
let shop: { shopId: string; domain: string; key: string };
let contractId: string;
beforeAll(async () => {
  t = await startTestApp();
  shop = await t.shopWithKey();
  [{ id: contractId }] = await t.seed(shop.shopId, 1);
});
afterAll(() => t.close());

const json = { 'content-type': 'application/json' };
const nested = (depth: number, inner = '1') => '['.repeat(depth) + inner + ']'.repeat(depth);

describe('JSON nesting deeper than 64', () => {
  it('the attack: ~4,070 levels with an Idempotency-Key is 400 invalid_request every time, not 500, and changes nothing', async () => {
    const before = { row: await contractRow(t, contractId), events: (await eventRows(t, contractId)).length };
    for (let i = 0; i < 10; i++) {
      const res = await t.inject({
        method: 'POST',
        url: `${API}/${contractId}/actions`,
        headers: { ...json, ...bearer(shop.key), 'idempotency-key': `deep-${i}` },
        payload: nested(4070),
      });
      expect(expectError(res, 400, 'invalid_request').message).toBe('The request body nests deeper than 64 levels.');
    }
    expect({ row: await contractRow(t, contractId), events: (await eventRows(t, contractId)).length }).toEqual(before);
    expect(await sql(t, `SELECT 1 FROM idempotency_keys WHERE shop_id = $1`, [shop.shopId])).toEqual([]);
  });

  it('64 levels are read (and then judged by the schema); 65 are refused before anything walks them', async () => {
    const url = `${API}/${contractId}/actions`;
    const at64 = await t.inject({ method: 'POST', url, headers: { ...json, ...bearer(shop.key) }, payload: `{"action":"cancel","reason":${nested(63)}}` });
    expect(expectError(at64, 400, 'invalid_request').message).not.toMatch(/nests/);
    const at65 = await t.inject({ method: 'POST', url, headers: { ...json, ...bearer(shop.key) }, payload: `{"action":"cancel","reason":${nested(64)}}` });
    expect(expectError(at65, 400, 'invalid_request').message).toMatch(/nests deeper than 64/);
  });

  it('on the admin API, the webhook endpoints and MCP too', async () => {
    const admin = await adminAuth(t, shop.domain);
    const deep = `{"name":${nested(100)}}`;
    const answers = [
      await t.inject({ method: 'POST', url: '/admin/api/keys', headers: { ...json, ...admin }, payload: deep }),
      await t.inject({ method: 'POST', url: '/api/v1/webhook-endpoints', headers: { ...json, ...bearer(shop.key) }, payload: `{"url":${nested(5000, '"x"')}}` }),
      await t.inject({
        method: 'POST',
        url: '/mcp',
        headers: { ...json, ...bearer(shop.key), accept: 'application/json, text/event-stream' },
        payload: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_subscription_contracts","arguments":{"a":${nested(5000)}}}}`,
      }),
    ];
    for (const res of answers) expect(expectError(res, 400, 'invalid_request').message).toMatch(/nests deeper than 64/);
  });
});

describe('a key twice in one JSON object', () => {
  it('{"action":"pause","action":"cancel"} is 400 invalid_request naming the key, and the contract is untouched', async () => {
    const before = { row: await contractRow(t, contractId), events: (await eventRows(t, contractId)).length };
    for (const payload of ['{"action":"pause","action":"cancel"}', '{"action":"skip","\\u0061ction":"cancel"}', '{"action":"cancel","reason":"a","reason":"b"}']) {
      const res = await t.inject({ method: 'POST', url: `${API}/${contractId}/actions`, headers: { ...json, ...bearer(shop.key) }, payload });
      expect(expectError(res, 400, 'invalid_request').message, payload).toMatch(/has the key "(action|reason)" twice in one object/);
    }
    expect({ row: await contractRow(t, contractId), events: (await eventRows(t, contractId)).length }).toEqual(before);
  });

  it('keys repeated in different objects are fine; a repeated key that could be a secret is not echoed', async () => {
    const admin = await adminAuth(t, shop.domain);
    const res = await t.inject({ method: 'POST', url: '/admin/api/keys', headers: { ...json, ...admin }, payload: `{"${shop.key}":1,"${shop.key}":2}` });
    const error = expectError(res, 400, 'invalid_request');
    expect(error.message).toBe('The request body has a key twice in one object.');
    const keys = await sql(t, `SELECT count(*)::int AS n FROM api_keys WHERE shop_id = $1`, [shop.shopId]);
    expect(
      (await t.inject({ method: 'POST', url: '/admin/api/keys', headers: { ...json, ...admin }, payload: '{"name":"a","name":"b"}' })).statusCode,
    ).toBe(400);
    expect(await sql(t, `SELECT count(*)::int AS n FROM api_keys WHERE shop_id = $1`, [shop.shopId])).toEqual(keys);
    const ok = await t.inject({
      method: 'POST',
      url: '/mcp',
      headers: { ...json, ...bearer(shop.key), accept: 'application/json, text/event-stream' },
      payload: '[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]',
    });
    expect(ok.statusCode).toBe(200);
  });

  it('MCP: a JSON-RPC message with its method twice is refused, not run as either', async () => {
    const res = await t.inject({
      method: 'POST',
      url: '/mcp',
      headers: { ...json, ...bearer(shop.key), accept: 'application/json, text/event-stream' },
      payload: '{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call"}',
    });
    expect(expectError(res, 400, 'invalid_request').message).toMatch(/"method" twice/);
  });

  it('prototype keys stay refused (as Fastify refused them)', async () => {
    for (const payload of ['{"action":"skip","__proto__":{"x":1}}', '{"action":"skip","constructor":{"prototype":{"x":1}}}']) {
      const res = await t.inject({ method: 'POST', url: `${API}/${contractId}/actions`, headers: { ...json, ...bearer(shop.key) }, payload });
      expectError(res, 400, 'invalid_request');
    }
  });
});

describe('a key in the URL, percent-encoded', () => {
  const hex = (s: string) => [...s].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`).join('');
  const encodings: [string, (key: string) => string][] = [
    ['%73vc_live_…', (k) => `${API}?k=%73${k.slice(1)}`],
    ['sv%63_live_…', (k) => `${API}?k=sv%63${k.slice(3)}`],
    ['svc_%6cive_…', (k) => `${API}?k=svc_%6C${k.slice(5)}`],
    ['svc%255flive_…', (k) => `${API}?k=svc%255flive%255f${k.slice(9)}`],
    ['every character encoded', (k) => `${API}?k=${hex(k)}`],
    ['encoded three times over', (k) => `${API}?k=${hex(k).replaceAll('%', '%25').replaceAll('%', '%25')}`],
    ['in the path', (k) => `${API}/sv%2563_live_${k.slice(9)}`],
    ['in an unknown path', (k) => `/nope/%73vc_live_${k.slice(9)}`],
    ['beside a malformed escape', (k) => `${API}/%zz/%73vc_live_${k.slice(9)}`],
  ];

  it.each(encodings)('%s: 400 key_in_url, and no form of the key in any log line or in the answer', async (_name, url) => {
    const { key } = await t.shopWithKey();
    const before = t.logs.length;
    const res = await t.inject({ url: url(key), headers: bearer(key) });
    const error = expectError(res, 400, 'key_in_url');
    const logs = t.logs.slice(before).join('\n');
    expect(logs).toContain(error.requestId);
    const r = randomPart(key);
    const forms = [...keyFragments(key), hex(r.slice(0, 8)), hex(r.slice(20, 28)).replaceAll('%', '%25')];
    for (const piece of forms) {
      expect(logs, piece).not.toContain(piece);
      expect(res.body).not.toContain(piece);
    }
  });
});
