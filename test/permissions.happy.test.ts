import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Permissions } from '../src/domain/permissions.js';
import { createBulkJob } from '../src/services/bulkJobs.js';
import { adminPrincipal } from '../src/services/principal.js';
import { revokeKey } from '../src/services/revokeKey.js';
import { setShopPlan } from '../src/services/shops.js';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { BULK, createJob, postJob, runJobs } from './support/bulk.js';
import { adminAuth, API, contractRow, eventRows, expectError, secondInstance, sql } from './support/fixtures.js';

/**
 * Restricted keys (docs/keys-and-permissions.md): generated with a preset or with permissions per resource, listed
 * with them, changed on Settings → API with effect from the very next request on every instance, told to the key
 * itself by GET /api/v1/key, and every refusal names what was missing.
 */

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t?.close());

const json = { 'content-type': 'application/json' };
const NONE: Permissions = { contracts: 'none', billing: 'none', webhooks: 'none', bulk_jobs: 'none' };
const WRITE: Permissions = { contracts: 'write', billing: 'write', webhooks: 'write', bulk_jobs: 'write' };
const READ: Permissions = { contracts: 'read', billing: 'read', webhooks: 'read', bulk_jobs: 'read' };

async function adminShop() {
  const s = await t.shopWithKey();
  return { ...s, headers: await adminAuth(t, s.domain) };
}
const generate = (headers: object, payload: object) => t.inject({ method: 'POST', url: '/admin/api/keys', headers: { ...headers, ...json }, payload });
const patch = (headers: object, id: string, payload: unknown) => t.inject({ method: 'PATCH', url: `/admin/api/keys/${id}`, headers: { ...headers, ...json }, payload: payload as object });

describe('generation: a preset (access) or permissions, not both', () => {
  it('permissions are stored and listed, with the preset they equal or custom', async () => {
    const s = await adminShop();
    const custom = { contracts: 'read', billing: 'write', webhooks: 'none', bulk_jobs: 'none' };
    const made = await generate(s.headers, { name: 'billing bot', permissions: custom });
    expect(made.statusCode).toBe(201);
    expect(made.json().key).toMatchObject({ name: 'billing bot', access: 'custom', permissions: custom });
    // Permissions that equal a preset are listed as that preset; a preset by name lists its permissions.
    expect((await generate(s.headers, { name: 'all read', permissions: READ })).json().key).toMatchObject({ access: 'read_only', permissions: READ });
    expect((await generate(s.headers, { name: 'ro', access: 'read_only' })).json().key).toMatchObject({ access: 'read_only', permissions: READ });
    expect((await generate(s.headers, { name: 'plain' })).json().key).toMatchObject({ access: 'read_write', permissions: WRITE });
    const listed = (await t.inject({ url: '/admin/api/keys', headers: s.headers })).json().keys as { name: string; access: string; permissions: Permissions }[];
    // (All made at the same moment of the test clock: compared by name.)
    expect(Object.fromEntries(listed.map((k) => [k.name, [k.access, k.permissions]]))).toEqual({
      test: ['read_write', WRITE],
      'billing bot': ['custom', custom],
      'all read': ['read_only', READ],
      ro: ['read_only', READ],
      plain: ['read_write', WRITE],
    });
    // Stored as written: every resource named, the preset beside it.
    const rows = await sql<{ name: string; access: string; permissions: Permissions }>(t, `SELECT name, access, permissions FROM api_keys WHERE shop_id = $1 AND name = 'billing bot'`, [s.shopId]);
    expect(rows).toEqual([{ name: 'billing bot', access: 'custom', permissions: custom }]);
  });

  it('both access and permissions: 400 invalid_request naming permissions, and no key', async () => {
    const s = await adminShop();
    const res = await generate(s.headers, { access: 'read_only', permissions: READ });
    const error = expectError(res, 400, 'invalid_request');
    expect(error.message).toMatch(/either access .* or permissions .*not both/);
    expect(error.details).toEqual([{ path: 'permissions', message: 'not allowed together with access' }]);
    expect((await t.inject({ url: '/admin/api/keys', headers: s.headers })).json().activeCount).toBe(1);
  });

  it.each([
    ['an unknown level', { ...READ, billing: 'admin' }, 'permissions.billing'],
    ['a resource left out', { contracts: 'read', billing: 'read', webhooks: 'read' }, 'permissions.bulk_jobs'],
    ['an unknown resource', { ...READ, orders: 'read' }, 'permissions.orders'],
    ['not an object', 'read', 'permissions'],
  ])('%s: 400 invalid_request naming the field', async (_name, permissions, path) => {
    const s = await adminShop();
    const error = expectError(await generate(s.headers, { permissions }), 400, 'invalid_request');
    expect(error.details?.map((d) => d.path)).toContain(path);
  });
});

describe('PATCH /admin/api/keys/{id}: changing a key\'s permissions', () => {
  it('answers the key with its new permissions, lists them, and the key is judged by them from its next request', async () => {
    const s = await adminShop();
    const [c] = await t.seed(s.shopId, 1);
    expect((await t.inject({ url: `${API}/${c.id}`, headers: bearer(s.key) })).statusCode).toBe(200);
    const narrowed = { ...NONE, billing: 'read' } as Permissions;
    const res = await patch(s.headers, s.keyId, { permissions: narrowed });
    expect(res.statusCode).toBe(200);
    expect(res.json().key).toMatchObject({ id: s.keyId, access: 'custom', permissions: narrowed, status: 'active' });
    expect((await t.inject({ url: '/admin/api/keys', headers: s.headers })).json().keys[0]).toMatchObject({ id: s.keyId, access: 'custom', permissions: narrowed });

    const refused = expectError(await t.inject({ url: `${API}/${c.id}`, headers: bearer(s.key) }), 403, 'insufficient_scope');
    expect(refused.message).toBe('This API key lacks the permission contracts: read. Use a key with contracts: read.');
    expect(refused.details).toEqual([{ path: 'permissions.contracts', message: 'contracts: read needed (has contracts: none)' }]);
    expect((await t.inject({ url: '/api/v1/billing-policy', headers: bearer(s.key) })).statusCode).toBe(200);
    // Back to a preset: listed as it.
    expect((await patch(s.headers, s.keyId, { permissions: WRITE })).json().key.access).toBe('read_write');
    expect((await t.inject({ url: `${API}/${c.id}`, headers: bearer(s.key) })).statusCode).toBe(200);
  });

  it('takes effect at once on another instance that has the key cached, both ways', async () => {
    const s = await adminShop();
    const [c] = await t.seed(s.shopId, 1);
    const other = await secondInstance(t);
    try {
      const pause = () => other.inject({ method: 'POST', url: `${API}/${c.id}/actions`, headers: { ...json, ...bearer(s.key) }, payload: { action: 'pause' } });
      const resume = () => other.inject({ method: 'POST', url: `${API}/${c.id}/actions`, headers: { ...json, ...bearer(s.key) }, payload: { action: 'resume' } });
      // The other instance knows the key (it has answered it).
      expect((await other.inject({ url: `${API}/${c.id}`, headers: bearer(s.key) })).statusCode).toBe(200);
      expect((await patch(s.headers, s.keyId, { permissions: { ...WRITE, contracts: 'read' } })).statusCode).toBe(200);
      expectError(await pause(), 403, 'insufficient_scope');
      expect((await contractRow(t, c.id)).status).toBe('ACTIVE');
      expect((await other.inject({ url: `${API}/${c.id}`, headers: bearer(s.key) })).statusCode).toBe(200);
      // And when its permissions grow again, the very next request through the other instance may change.
      expect((await patch(s.headers, s.keyId, { permissions: WRITE })).statusCode).toBe(200);
      expect((await pause()).statusCode).toBe(200);
      expect((await contractRow(t, c.id)).status).toBe('PAUSED');
      // Over MCP on the other instance too: the tool list and a call follow the change.
      expect((await patch(s.headers, s.keyId, { permissions: { ...WRITE, contracts: 'read' } })).statusCode).toBe(200);
      const mcp = (body: object) => other.inject({ method: 'POST', url: '/mcp', headers: { ...json, accept: 'application/json, text/event-stream', ...bearer(s.key) }, payload: body });
      const tools = (await mcp({ jsonrpc: '2.0', id: 1, method: 'tools/list' })).json().result.tools.map((x: { name: string }) => x.name);
      expect(tools).toContain('get_subscription_contract');
      expect(tools).not.toContain('resume_subscription_contract');
      const call = (await mcp({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'resume_subscription_contract', arguments: { contractId: c.id } } })).json().result;
      expect(call.isError).toBe(true);
      expect(JSON.parse(call.content[0].text).error).toMatchObject({ code: 'insufficient_scope', message: expect.stringContaining('contracts: write') });
      expect((await contractRow(t, c.id)).status).toBe('PAUSED');
      expectError(await resume(), 403, 'insufficient_scope');
    } finally {
      await other.close();
    }
  });

  it('holds whatever the shop\'s plan (narrowing never waits for an upgrade)', async () => {
    const s = await adminShop();
    await setShopPlan({ ctx: t.ctx, input: { domain: s.domain, plan: 'basic' } });
    const res = await patch(s.headers, s.keyId, { permissions: READ });
    expect(res.statusCode).toBe(200);
    expect(res.json().key.access).toBe('read_only');
  });

  it('a revoked key: 409 invalid_state; an unknown key or another shop\'s: 404; a bad body: 400', async () => {
    const s = await adminShop();
    const other = await adminShop();
    await revokeKey({ ctx: t.ctx, input: { shopId: s.shopId, keyId: s.keyId } });
    expect(expectError(await patch(s.headers, s.keyId, { permissions: READ }), 409, 'invalid_state').message).toMatch(/revoked/);
    expectError(await patch(s.headers, other.keyId, { permissions: READ }), 404, 'not_found');
    expectError(await patch(s.headers, '00000000-0000-4000-8000-000000000000', { permissions: READ }), 404, 'not_found');
    expectError(await patch(s.headers, 'not-a-key', { permissions: READ }), 404, 'not_found');
    expect(expectError(await patch(other.headers, other.keyId, { access: 'read_only' }), 400, 'invalid_request').details?.map((d) => d.path)).toContain('access');
    expectError(await patch(other.headers, other.keyId, {}), 400, 'invalid_request');
    expectError(await patch(other.headers, other.keyId, { permissions: { ...READ, billing: 'owner' } }), 400, 'invalid_request');
    // The other shop's key kept its permissions.
    expect((await t.inject({ url: '/admin/api/keys', headers: other.headers })).json().keys[0].permissions).toEqual(WRITE);
  });

  it('an API key cannot change permissions: the admin API takes session tokens only', async () => {
    const s = await adminShop();
    expectError(await t.inject({ method: 'PATCH', url: `/admin/api/keys/${s.keyId}`, headers: { ...json, ...bearer(s.key) }, payload: { permissions: WRITE } }), 401, 'unauthorized');
  });
});

describe('GET /api/v1/key', () => {
  it('tells the calling key what it is: id, name, fingerprint, permissions and shop; any key may read it', async () => {
    const s = await t.shopWithKey('enterprise', { permissions: NONE });
    const res = await t.inject({ url: '/api/v1/key', headers: bearer(s.key) });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ key: { id: s.keyId, name: 'test', fingerprint: s.fingerprint, access: 'custom', permissions: NONE, shop: { domain: s.domain } } });
    // After a change, the next read says so.
    const headers = await adminAuth(t, s.domain);
    await patch(headers, s.keyId, { permissions: READ });
    expect((await t.inject({ url: '/api/v1/key', headers: bearer(s.key) })).json().key).toMatchObject({ access: 'read_only', permissions: READ });
  });

  it('answers the refusals of §2 before anything: revoked 401, no plan 403 plan_required; unknown query 400', async () => {
    const s = await t.shopWithKey();
    expectError(await t.inject({ url: '/api/v1/key?expand=shop', headers: bearer(s.key) }), 400, 'invalid_request');
    await setShopPlan({ ctx: t.ctx, input: { domain: s.domain, plan: 'basic' } });
    expectError(await t.inject({ url: '/api/v1/key', headers: bearer(s.key) }), 403, 'plan_required');
    await setShopPlan({ ctx: t.ctx, input: { domain: s.domain, plan: 'enterprise' } });
    await revokeKey({ ctx: t.ctx, input: { shopId: s.shopId, keyId: s.keyId } });
    expectError(await t.inject({ url: '/api/v1/key', headers: bearer(s.key) }), 401, 'unauthorized');
    expectError(await t.inject({ url: '/api/v1/key' }), 401, 'unauthorized');
  });
});

describe('insufficient_scope: what is missing, named, after the plan and before the body', () => {
  it('the plan comes first: a key lacking the permission on a shop without API access is 403 plan_required', async () => {
    const s = await t.shopWithKey('basic', { permissions: { ...NONE, billing: 'read' } });
    expectError(await t.inject({ url: API, headers: bearer(s.key) }), 403, 'plan_required');
  });

  it('a body that would fail validation is refused for its permission first; bill_now names billing: write', async () => {
    const s = await t.shopWithKey('enterprise', { permissions: { ...WRITE, billing: 'read' } });
    const [c] = await t.seed(s.shopId, 1);
    const act = (payload: unknown) => t.inject({ method: 'POST', url: `${API}/${c.id}/actions`, headers: { ...json, ...bearer(s.key) }, payload: payload as object });
    const error = expectError(await act({ action: 'bill_now', again: 'yes please' }), 403, 'insufficient_scope');
    expect(error.message).toBe('This API key lacks the permission billing: write. Use a key with billing: write.');
    expect(error.details).toEqual([{ path: 'permissions.billing', message: 'billing: write needed (has billing: read)' }]);
    expect(await eventRows(t, c.id)).toEqual([]);
    // The other actions are contracts': this key may.
    expect((await act({ action: 'skip' })).statusCode).toBe(200);
  });

  it('a read-only key says it is read-only', async () => {
    const s = await t.shopWithKey('enterprise', { access: 'read_only' });
    const error = expectError(await t.inject({ method: 'POST', url: '/api/v1/webhook-endpoints', headers: { ...json, ...bearer(s.key) }, payload: { url: 'http://127.0.0.1:9/x' } }), 403, 'insufficient_scope');
    expect(error.message).toBe('This API key is read-only: it can read but not change anything, and this needs webhooks: write. Use a key with webhooks: write.');
  });
});

describe('bulk jobs need bulk_jobs: write and the write permission of what they change', () => {
  const body = (contractId: string) => ({ selector: { contractIds: [contractId] }, change: { action: 'pause' }, preview: true });
  const jobCount = async (shopId: string) => (await sql<{ n: number }>(t, 'SELECT count(*)::int AS n FROM bulk_jobs WHERE shop_id = $1', [shopId]))[0].n;

  it('making one: each missing permission is named, both when both are missing; nothing is made', async () => {
    const s = await t.shopWithKey('enterprise', { permissions: { ...NONE, contracts: 'read', bulk_jobs: 'read' } });
    const [c] = await t.seed(s.shopId, 1);
    const both = expectError(await createJob(t, s.key, body(c.id)), 403, 'insufficient_scope');
    expect(both.message).toBe('This API key lacks the permissions bulk_jobs: write and contracts: write. Use a key with bulk_jobs: write and contracts: write.');
    expect(both.details?.map((d) => d.path)).toEqual(['permissions.bulk_jobs', 'permissions.contracts']);
    const headers = await adminAuth(t, s.domain);
    await patch(headers, s.keyId, { permissions: { ...NONE, contracts: 'read', bulk_jobs: 'write' } });
    expect(expectError(await createJob(t, s.key, body(c.id)), 403, 'insufficient_scope').details).toEqual([
      { path: 'permissions.contracts', message: 'contracts: write needed (has contracts: read)' },
    ]);
    await patch(headers, s.keyId, { permissions: { ...NONE, contracts: 'write', bulk_jobs: 'read' } });
    expect(expectError(await createJob(t, s.key, body(c.id)), 403, 'insufficient_scope').message).toContain('bulk_jobs: write');
    expect(await jobCount(s.shopId)).toBe(0);
    await patch(headers, s.keyId, { permissions: { ...NONE, contracts: 'write', bulk_jobs: 'write' } });
    expect((await createJob(t, s.key, body(c.id))).statusCode).toBe(201);
    expect(await jobCount(s.shopId)).toBe(1);
  });

  it('starting one another made: refused without contracts: write, and the job stays a preview; with it, it runs', async () => {
    const s = await t.shopWithKey('enterprise', { permissions: { ...NONE, contracts: 'read', bulk_jobs: 'write' } });
    const [c] = await t.seed(s.shopId, 1);
    const job = await createBulkJob(t.ctx, adminPrincipal(s.shopId), body(c.id));
    await runJobs(t);
    const refused = expectError(await postJob(t, s.key, job.id, 'start'), 403, 'insufficient_scope');
    expect(refused.message).toContain('contracts: write');
    const [row] = await sql<{ status: string }>(t, 'SELECT status FROM bulk_jobs WHERE id = $1', [job.id]);
    expect(row.status).toBe('previewed');
    const headers = await adminAuth(t, s.domain);
    await patch(headers, s.keyId, { permissions: { ...NONE, contracts: 'write', bulk_jobs: 'write' } });
    expect((await postJob(t, s.key, job.id, 'start')).statusCode).toBe(200);
    await runJobs(t);
    expect((await contractRow(t, c.id)).status).toBe('PAUSED');
    expect((await t.inject({ url: `${BULK}/${job.id}`, headers: bearer(s.key) })).json().bulkJob.status).toBe('completed');
  });
});
