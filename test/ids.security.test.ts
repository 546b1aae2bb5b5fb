import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedProducts } from '../src/services/catalog.js';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { adminAuth, API, contractRow, expectError, insertContract } from './support/fixtures.js';
import { callBody } from './support/mcp.js';

/**
 * An id that cannot exist (past the largest bigint, or not a UUID where the column is one) is answered by its
 * shape: 400 invalid_request as a request's field, 404 not_found as the resource a path names. It never reaches the
 * database as a value its column cannot take (a range error, a 500).
 */

const PAST_INT8 = '9999999999999999999'; // 19 digits, above 9223372036854775807
const INT8_MAX = '9223372036854775807';
const b64 = (text: string) => Buffer.from(text).toString('base64url');

let t: TestApp;
let key: string;
let shopId: string;
let domain: string;
let contractId: string;
let lineId: string;
let version: number;
let endpointId: string;
beforeAll(async () => {
  t = await startTestApp();
  ({ key, shopId, domain } = await t.shopWithKey());
  await seedProducts(t.ctx, shopId);
  const c = await insertContract(t, shopId);
  contractId = c.id;
  lineId = c.lines[0].id;
  version = c.version;
  const ep = await t.inject({ method: 'POST', url: '/api/v1/webhook-endpoints', headers: bearer(key), payload: { url: 'http://127.0.0.1:9/hooks', events: ['*'] } });
  expect(ep.statusCode, ep.body).toBe(201);
  endpointId = ep.json().endpoint.id;
});
afterAll(() => t.close());

const api = (method: 'GET' | 'POST', url: string, payload?: object) => t.inject({ method, url, headers: bearer(key), payload });
const admin = async (method: 'GET' | 'POST', url: string, payload?: object) => t.inject({ method, url, headers: await adminAuth(t, domain), payload });
const mcpError = async (name: string, args: object) => {
  const res = await t.inject({ method: 'POST', url: '/mcp', headers: { ...bearer(key), accept: 'application/json, text/event-stream' }, payload: callBody(name, args) });
  expect(res.json().result).toMatchObject({ isError: true });
  return JSON.parse(res.json().result.content[0].text).error as { code: string; details?: { path: string }[] };
};

describe('a variant id past the largest bigint, in an edit', () => {
  it.each([
    ['add_line', () => ({ op: 'add_line', variantId: PAST_INT8, quantity: 1 })],
    ['swap_variant', () => ({ op: 'swap_variant', lineId, variantId: PAST_INT8 })],
    ['swap_variant previewed', () => ({ op: 'swap_variant', lineId, variantId: PAST_INT8 })],
  ])('%s: 400 invalid_request naming the field and the rule', async (label, op) => {
    const res = await api('POST', `${API}/${contractId}/edits`, { operations: [op()], ...(label.endsWith('previewed') && { preview: true }) });
    const error = expectError(res, 400, 'invalid_request');
    expect(error.details).toEqual([{ path: 'operations.0.variantId', message: `must be a string of 1 to 19 digits, at most ${INT8_MAX}` }]);
    expect((await contractRow(t, contractId)).version).toBe(version);
  });

  it('the largest bigint itself is a well-formed id: an unknown variant (422), not a refusal of its form', async () => {
    const res = await api('POST', `${API}/${contractId}/edits`, { operations: [{ op: 'add_line', variantId: INT8_MAX, quantity: 1 }] });
    expect(expectError(res, 422, 'invalid_edit').details).toEqual([{ path: 'operations.0', message: `unknown variant "${INT8_MAX}"` }]);
  });

  it('over MCP too', async () => {
    const error = await mcpError('edit_subscription_contract', { contractId, operations: [{ op: 'add_line', variantId: PAST_INT8, quantity: 1 }] });
    expect(error.code).toBe('invalid_request');
  });
});

describe('a path id that cannot exist is not found', () => {
  it.each([
    ['GET', `${API}/${PAST_INT8}`],
    ['GET', `${API}/${PAST_INT8}/events`],
    ['GET', `${API}/${PAST_INT8}/billing-attempts`],
    ['GET', `${API}/${PAST_INT8}/upcoming`],
    ['POST', `${API}/${PAST_INT8}/actions`, { action: 'skip' }],
    ['POST', `${API}/${PAST_INT8}/edits`, { operations: [{ op: 'set_quantity', lineId: 'x', quantity: 2 }] }],
    ['GET', '/api/v1/webhook-endpoints/not-a-uuid'],
    ['GET', `/api/v1/webhook-endpoints/${'0'.repeat(36)}`],
    ['POST', '/api/v1/webhook-endpoints/ENDPOINT/deliveries/99999999999999999999/resend'],
    ['POST', `/api/v1/webhook-endpoints/ENDPOINT/deliveries/${PAST_INT8}/resend`],
    ['POST', '/api/v1/webhook-endpoints/ENDPOINT/deliveries/abc/resend'],
  ] as const)('API %s %s', async (method, url, payload?: object) => {
    expectError(await api(method, url.replace('ENDPOINT', endpointId), payload), 404, 'not_found');
  });

  it.each([
    ['GET', `/admin/api/contracts/${PAST_INT8}`],
    ['GET', `/admin/api/contracts/${PAST_INT8}/events`],
    ['GET', `/admin/api/contracts/${PAST_INT8}/billing-attempts`],
    ['POST', `/admin/api/contracts/${PAST_INT8}/actions`, { action: 'skip' }],
    ['POST', '/admin/api/keys/not-a-uuid/revoke'],
    ['GET', '/admin/api/webhook-endpoints/not-a-uuid'],
  ] as const)('admin %s %s', async (method, url, payload?: object) => {
    expectError(await admin(method, url, payload), 404, 'not_found');
  });

  it('MCP: a contract id past the largest bigint', async () => {
    expect((await mcpError('get_subscription_contract', { contractId: PAST_INT8 })).code).toBe('not_found');
  });

  it('20 digits are not a contract id at all: 400 invalid_request', async () => {
    expectError(await api('GET', `${API}/${'9'.repeat(20)}`), 400, 'invalid_request');
  });
});

describe('a cursor or a filter naming an id that cannot exist is a bad request', () => {
  it.each([
    ['contracts', `${API}?cursor=${b64(`id:${PAST_INT8}`)}`],
    ['events', `${API}/CONTRACT/events?cursor=${b64(`id:${PAST_INT8}`)}`],
    ['billing attempts, an id that is no UUID', `/api/v1/billing-attempts?cursor=${b64(`at:1:${'-'.repeat(36)}`)}`],
    ['billing attempts, hex without its dashes', `/api/v1/billing-attempts?cursor=${b64(`at:1:${'a'.repeat(36)}`)}`],
    ['a contract\'s billing attempts', `${API}/CONTRACT/billing-attempts?cursor=${b64(`at:1:${'-'.repeat(36)}`)}`],
    ['deliveries', `/api/v1/webhook-endpoints/ENDPOINT/deliveries?cursor=${b64(`id:${PAST_INT8}`)}`],
  ])('API: %s', async (_label, url) => {
    expectError(await api('GET', url.replace('CONTRACT', contractId).replace('ENDPOINT', endpointId)), 400, 'invalid_request');
  });

  it.each([
    ['contracts', `/admin/api/contracts?cursor=${b64(`older:${PAST_INT8}`)}`],
    ['request log, a key id that is no UUID', '/admin/api/request-log?keyId=abc'],
    ['request log cursor', `/admin/api/request-log?cursor=${b64(`log:1:${PAST_INT8}`)}`],
  ])('admin: %s', async (_label, url) => {
    expectError(await admin('GET', url), 400, 'invalid_request');
  });

  it('the admin\'s search for a number past the largest bigint finds emails only', async () => {
    const res = await admin('GET', `/admin/api/contracts?query=${PAST_INT8}`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().contracts).toEqual([]);
  });
});
