import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedProducts } from '../src/services/catalog.js';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { adminAuth, API, contractRow, expectError, insertContract } from './support/fixtures.js';
import { callBody } from './support/mcp.js';

/**
 * Wherever a client names something (an action, an edit operation, a tool, an event type, a status, a policy's final
 * action…), the names of Object.prototype's members are unknown names like any other: a 400 (or the protocol's own
 * refusal), never a 500, and never a member of Object.prototype taken for the thing named.
 */

const PROTOTYPE_NAMES = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', 'isPrototypeOf', 'propertyIsEnumerable', 'toLocaleString', '__defineGetter__', '__lookupGetter__'];

let t: TestApp;
let key: string;
let shopId: string;
let domain: string;
let contractId: string;
let version: number;
let endpointId: string;
beforeAll(async () => {
  t = await startTestApp();
  ({ key, shopId, domain } = await t.shopWithKey());
  await seedProducts(t.ctx, shopId);
  const c = await insertContract(t, shopId);
  contractId = c.id;
  version = c.version;
  const ep = await t.inject({ method: 'POST', url: '/api/v1/webhook-endpoints', headers: bearer(key), payload: { url: 'http://127.0.0.1:9/hooks', events: ['*'] } });
  expect(ep.statusCode, ep.body).toBe(201);
  endpointId = ep.json().endpoint.id;
});
afterAll(() => t.close());

const mcp = (body: object) =>
  t.inject({ method: 'POST', url: '/mcp', headers: { ...bearer(key), accept: 'application/json, text/event-stream' }, payload: body });

/** Every place a client's name is looked up, and how that name is refused. */
const ENTRY_POINTS: [string, (name: string) => Promise<unknown>][] = [
  [
    'API: an action',
    async (name) => expectError(await t.inject({ method: 'POST', url: `${API}/${contractId}/actions`, headers: bearer(key), payload: { action: name } }), 400, 'unsupported_action'),
  ],
  [
    'API: an edit operation',
    async (name) => {
      const error = expectError(await t.inject({ method: 'POST', url: `${API}/${contractId}/edits`, headers: bearer(key), payload: { operations: [{ op: name }] } }), 400, 'invalid_request');
      expect(error.details).toEqual([{ path: 'operations.0.op', message: expect.stringMatching(/^unknown operation/) }]);
    },
  ],
  [
    'API: an edit operation, previewed, after a good one',
    async (name) => {
      const res = await t.inject({ method: 'POST', url: `${API}/${contractId}/edits`, headers: bearer(key), payload: { preview: true, operations: [{ op: 'set_frequency', interval: 'WEEK', intervalCount: 2 }, { op: name, lineId: 'x' }] } });
      expect(expectError(res, 400, 'invalid_request').details?.[0].path).toBe('operations.1.op');
    },
  ],
  [
    'API: a contract status filter',
    async (name) => expectError(await t.inject({ url: `${API}?status=${encodeURIComponent(name)}`, headers: bearer(key) }), 400, 'invalid_request'),
  ],
  [
    'API: a billing attempt status filter',
    async (name) => expectError(await t.inject({ url: `/api/v1/billing-attempts?status=${encodeURIComponent(name)}`, headers: bearer(key) }), 400, 'invalid_request'),
  ],
  [
    'API: a query parameter named so',
    async (name) => expectError(await t.inject({ url: `/api/v1/billing-policy?${encodeURIComponent(name)}=1`, headers: bearer(key) }), 400, 'invalid_request'),
  ],
  [
    'API: a test webhook event type',
    async (name) => expectError(await t.inject({ method: 'POST', url: `/api/v1/webhook-endpoints/${endpointId}/test`, headers: bearer(key), payload: { type: name } }), 400, 'invalid_request'),
  ],
  [
    'API: an endpoint subscribing to an event type',
    async (name) => expectError(await t.inject({ method: 'PATCH', url: `/api/v1/webhook-endpoints/${endpointId}`, headers: bearer(key), payload: { events: [name] } }), 400, 'invalid_request'),
  ],
  [
    'MCP: a tool',
    async (name) => {
      const res = await mcp(callBody(name, {}));
      expect(res.statusCode).toBe(200);
      expect(res.json().error).toMatchObject({ code: -32602, message: expect.stringMatching(/Unknown tool/) });
    },
  ],
  [
    'MCP: a method',
    async (name) => {
      const res = await mcp({ jsonrpc: '2.0', id: 1, method: name, params: {} });
      expect(res.statusCode).toBe(200);
      expect(res.json().error).toMatchObject({ code: -32601 });
    },
  ],
  [
    'MCP: an edit operation',
    async (name) => {
      const res = await mcp(callBody('edit_subscription_contract', { contractId, operations: [{ op: name }] }));
      expect(res.statusCode).toBe(200);
      expect(res.json().result).toMatchObject({ isError: true });
      expect(JSON.parse(res.json().result.content[0].text).error.code).toBe('invalid_request');
    },
  ],
  [
    'MCP: an action tool\'s status filter',
    async (name) => {
      const res = await mcp(callBody('list_subscription_contracts', { status: name }));
      expect(JSON.parse(res.json().result.content[0].text).error.code).toBe('invalid_request');
    },
  ],
  [
    'admin: a contract action',
    async (name) =>
      expectError(await t.inject({ method: 'POST', url: `/admin/api/contracts/${contractId}/actions`, headers: await adminAuth(t, domain), payload: { action: name } }), 400, 'unsupported_action'),
  ],
  [
    'admin: a contract status filter',
    async (name) => expectError(await t.inject({ url: `/admin/api/contracts?status=${encodeURIComponent(name)}`, headers: await adminAuth(t, domain) }), 400, 'invalid_request'),
  ],
  [
    'admin: a request log status filter',
    async (name) => expectError(await t.inject({ url: `/admin/api/request-log?status=${encodeURIComponent(name)}`, headers: await adminAuth(t, domain) }), 400, 'invalid_request'),
  ],
  [
    'admin: a billing policy\'s final action',
    async (name) => {
      const payload = { paymentRetries: ['P1D'], inventoryRetries: { every: 'P1D', max: 1 }, finalAction: name };
      expectError(await t.inject({ method: 'PUT', url: '/admin/api/billing-policy', headers: await adminAuth(t, domain), payload }), 400, 'invalid_request');
    },
  ],
];

describe('a name of Object.prototype\'s, wherever a client names something', () => {
  it.each(ENTRY_POINTS)('%s: refused as an unknown name, never a 500', async (_where, send) => {
    for (const name of PROTOTYPE_NAMES) {
      try {
        await send(name);
      } catch (err) {
        throw new Error(`"${name}": ${(err as Error).message}`);
      }
    }
    // Nothing was changed by any of them.
    expect((await contractRow(t, contractId)).version).toBe(version);
  });
});
