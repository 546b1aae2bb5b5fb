import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { needsOf, OPERATIONS, type OperationName, type OperationPolicy } from '../src/domain/operations.js';
import { describePermission, PRESETS, RESOURCES, type Permission, type Permissions } from '../src/domain/permissions.js';
import { createBulkJob } from '../src/services/bulkJobs.js';
import { generateKey } from '../src/services/generateKey.js';
import { adminPrincipal } from '../src/services/principal.js';
import { updateKeyPermissions } from '../src/services/updateKeyPermissions.js';
import { sendTestWebhook } from '../src/services/webhookDeliveries.js';
import { createWebhookEndpoint } from '../src/services/webhookEndpoints.js';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { runJobs } from './support/bulk.js';
import { API, expectError, sql, tableDigests } from './support/fixtures.js';

/**
 * Every operation of the API (domain/operations.ts, the one table authorization reads), request by request: a key
 * lacking one permission the request needs is refused with 403 insufficient_scope naming it, and nothing anywhere
 * changes (with an Idempotency-Key too: nothing is kept for it); a key with exactly what the request needs, and
 * nothing else, is let through. An operation whose body decides (an action, a bulk job) is tried once per kind of
 * body that needs something different.
 */

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t?.close());

/** What one operation's request is made against: a shop with a contract, a webhook endpoint and delivery, a previewed bulk job. */
type Fixture = { shopId: string; contractId: string; endpointId: string; deliveryId: string; jobId: string };

async function fixture(): Promise<Fixture> {
  const s = await t.shopWithKey('enterprise', { permissions: { contracts: 'none', billing: 'none', webhooks: 'none', bulk_jobs: 'none' } });
  const [c] = await t.seed(s.shopId, 2);
  const admin = adminPrincipal(s.shopId);
  const { endpoint } = await createWebhookEndpoint({ ctx: t.ctx, input: { principal: admin, body: { url: 'http://127.0.0.1:9/hook' } } });
  const delivery = await sendTestWebhook({ ctx: t.ctx, input: { principal: admin, endpointId: endpoint.id, body: {} } });
  const job = await createBulkJob(t.ctx, admin, { selector: { contractIds: [c.id] }, change: { action: 'skip' }, preview: true });
  await runJobs(t);
  return { shopId: s.shopId, contractId: c.id, endpointId: endpoint.id, deliveryId: String(delivery.id), jobId: job.id };
}

const json = { 'content-type': 'application/json' };
const W = '/api/v1/webhook-endpoints';
const B = '/api/v1/bulk-jobs';

/** Each operation's request, valid for the fixture; `body`: the body of the case being tried (operations whose body decides). */
const REQUESTS: Record<OperationName, (f: Fixture, body?: unknown) => InjectOptions> = {
  listSubscriptionContracts: () => ({ url: API }),
  getSubscriptionContract: (f) => ({ url: `${API}/${f.contractId}` }),
  listContractEvents: (f) => ({ url: `${API}/${f.contractId}/events` }),
  actOnSubscriptionContract: (f, body) => ({ method: 'POST', url: `${API}/${f.contractId}/actions`, headers: json, payload: body as object }),
  editSubscriptionContract: (f) => ({ method: 'POST', url: `${API}/${f.contractId}/edits`, headers: json, payload: { operations: [{ op: 'set_frequency', interval: 'WEEK', intervalCount: 2 }] } }),
  listContractBillingAttempts: (f) => ({ url: `${API}/${f.contractId}/billing-attempts` }),
  listBillingAttempts: () => ({ url: '/api/v1/billing-attempts' }),
  getUpcomingRenewals: (f) => ({ url: `${API}/${f.contractId}/upcoming` }),
  getBillingPolicy: () => ({ url: '/api/v1/billing-policy' }),
  listWebhookEndpoints: () => ({ url: W }),
  getWebhookEndpoint: (f) => ({ url: `${W}/${f.endpointId}` }),
  listWebhookDeliveries: (f) => ({ url: `${W}/${f.endpointId}/deliveries` }),
  createWebhookEndpoint: () => ({ method: 'POST', url: W, headers: json, payload: { url: 'http://127.0.0.1:9/other' } }),
  updateWebhookEndpoint: (f) => ({ method: 'PATCH', url: `${W}/${f.endpointId}`, headers: json, payload: { description: 'ERP' } }),
  deleteWebhookEndpoint: (f) => ({ method: 'DELETE', url: `${W}/${f.endpointId}` }),
  sendTestWebhook: (f) => ({ method: 'POST', url: `${W}/${f.endpointId}/test`, headers: json, payload: { type: 'contract.paused' } }),
  rotateWebhookSecret: (f) => ({ method: 'POST', url: `${W}/${f.endpointId}/rotate-secret` }),
  resendWebhookDelivery: (f) => ({ method: 'POST', url: `${W}/${f.endpointId}/deliveries/${f.deliveryId}/resend` }),
  resendFailedWebhookDeliveries: (f) => ({ method: 'POST', url: `${W}/${f.endpointId}/resend-failed`, headers: json, payload: { since: '2026-01-01T00:00:00Z' } }),
  listBulkJobs: () => ({ url: B }),
  getBulkJob: (f) => ({ url: `${B}/${f.jobId}` }),
  listBulkJobResults: (f) => ({ url: `${B}/${f.jobId}/results` }),
  createBulkJob: (f, body) => ({ method: 'POST', url: B, headers: json, payload: { selector: { contractIds: [f.contractId] }, ...(body as object), preview: true } }),
  startBulkJob: (f) => ({ method: 'POST', url: `${B}/${f.jobId}/start` }),
  cancelBulkJob: (f) => ({ method: 'POST', url: `${B}/${f.jobId}/cancel` }),
  getCurrentKey: () => ({ url: '/api/v1/key' }),
};

/** Each operation once per distinct set of needs: its fixed needs, or one body of each kind its cases list. */
type Case = { name: OperationName; label: string; body?: unknown; needs: readonly Permission[] };
const CASES: Case[] = (Object.keys(OPERATIONS) as OperationName[]).flatMap((name) => {
  const op = OPERATIONS[name] as OperationPolicy;
  if (!op.cases) return [{ name, label: name, needs: needsOf(name, undefined) }];
  const seen = new Map<string, Case>();
  for (const c of op.cases) {
    const needs = needsOf(name, c.body);
    const key = needs.map(describePermission).join(',');
    if (!seen.has(key)) seen.set(key, { name, label: `${name} (${c.field} ${c.value})`, body: c.body, needs });
  }
  return [...seen.values()];
});

const NONE: Permissions = { contracts: 'none', billing: 'none', webhooks: 'none', bulk_jobs: 'none' };
/** Everything (write on every resource) except `n`: one level below what it needs. */
const allBut = (n: Permission): Permissions => ({ ...PRESETS.read_write, [n.resource]: n.level === 'write' ? 'read' : 'none' });
/** Exactly what `needs` asks for, and nothing else. */
const exactly = (needs: readonly Permission[]): Permissions => {
  const p = { ...NONE };
  for (const n of needs) if (p[n.resource] !== 'write') p[n.resource] = n.level;
  return p;
};

async function keyWith(shopId: string, permissions: Permissions): Promise<string> {
  return (await generateKey({ ctx: t.ctx, input: { shopId, name: 'case', permissions } })).secret;
}

const withKey = (req: InjectOptions, key: string, extra: Record<string, string> = {}): InjectOptions => ({
  ...req,
  headers: { ...(req.headers as Record<string, string> | undefined), ...bearer(key), ...extra },
});

describe('every operation × its permissions', () => {
  it('covers every operation of the table, and the table says what docs/keys-and-permissions.md says', () => {
    expect(Object.keys(REQUESTS).sort()).toEqual(Object.keys(OPERATIONS).sort());
    const said = Object.fromEntries(CASES.map((c) => [c.label, c.needs.map(describePermission).join(' + ')]));
    expect(said).toEqual({
      listSubscriptionContracts: 'contracts: read',
      getSubscriptionContract: 'contracts: read',
      listContractEvents: 'contracts: read',
      'actOnSubscriptionContract (action pause)': 'contracts: write',
      'actOnSubscriptionContract (action bill_now)': 'billing: write',
      editSubscriptionContract: 'contracts: write',
      listContractBillingAttempts: 'billing: read',
      listBillingAttempts: 'billing: read',
      getUpcomingRenewals: 'billing: read',
      getBillingPolicy: 'billing: read',
      listWebhookEndpoints: 'webhooks: read',
      getWebhookEndpoint: 'webhooks: read',
      listWebhookDeliveries: 'webhooks: read',
      createWebhookEndpoint: 'webhooks: write',
      updateWebhookEndpoint: 'webhooks: write',
      deleteWebhookEndpoint: 'webhooks: write',
      sendTestWebhook: 'webhooks: write',
      rotateWebhookSecret: 'webhooks: write',
      resendWebhookDelivery: 'webhooks: write',
      resendFailedWebhookDeliveries: 'webhooks: write',
      listBulkJobs: 'bulk_jobs: read',
      getBulkJob: 'bulk_jobs: read',
      listBulkJobResults: 'bulk_jobs: read',
      'createBulkJob (change.action pause)': 'bulk_jobs: write + contracts: write',
      startBulkJob: 'bulk_jobs: write + contracts: write',
      cancelBulkJob: 'bulk_jobs: write',
      getCurrentKey: '',
    });
  });

  it.each(CASES)('$label', async ({ name, body, needs }) => {
    const f = await fixture();
    const request = REQUESTS[name](f, body);
    const post = request.method !== undefined && request.method !== 'GET';
    for (const lacking of needs) {
      const key = await keyWith(f.shopId, allBut(lacking));
      const before = await tableDigests(t);
      const variants: Record<string, string>[] = post ? [{}, { 'idempotency-key': `lacking-${name}-${lacking.resource}` }] : [{}];
      for (const extra of variants) {
        const res = await t.inject(withKey(request, key, extra));
        const error = expectError(res, 403, 'insufficient_scope');
        expect(error.message).toContain(describePermission(lacking));
        expect(error.details).toContainEqual({ path: `permissions.${lacking.resource}`, message: expect.stringContaining(describePermission(lacking)) });
      }
      expect(await tableDigests(t), `${name} without ${describePermission(lacking)} changed nothing`).toEqual(before);
    }
    const res = await t.inject(withKey(request, await keyWith(f.shopId, exactly(needs))));
    expect(res.statusCode, `${name} with exactly ${needs.map(describePermission).join(', ') || 'nothing'}: ${res.body}`).toBeGreaterThanOrEqual(200);
    expect(res.statusCode, `${name} with exactly its permissions: ${res.body}`).toBeLessThan(300);
  });

  it('a key with no permission at all may call only GET /api/v1/key', async () => {
    const f = await fixture();
    const key = await keyWith(f.shopId, NONE);
    const before = await tableDigests(t);
    for (const c of CASES) {
      const res = await t.inject(withKey(REQUESTS[c.name](f, c.body), key));
      if (c.needs.length === 0) expect(res.statusCode, c.label).toBe(200);
      else expectError(res, 403, 'insufficient_scope');
    }
    expect(await tableDigests(t)).toEqual(before);
    // Each resource by itself at read (the same key, its permissions changed): that resource's reads pass, and
    // everything else is refused.
    const [{ id }] = await sql<{ id: string }>(t, `SELECT id::text AS id FROM api_keys WHERE shop_id = $1 AND name = 'case'`, [f.shopId]);
    for (const r of RESOURCES) {
      await updateKeyPermissions({ ctx: t.ctx, input: { shopId: f.shopId, keyId: id, permissions: { ...NONE, [r]: 'read' } } });
      for (const c of CASES) {
        const allowed = c.needs.every((n) => n.resource === r && n.level === 'read');
        const res = await t.inject(withKey(REQUESTS[c.name](f, c.body), key));
        expect(res.statusCode === 403, `${c.label} with ${r}: read`).toBe(!allowed);
      }
    }
    expect(await tableDigests(t)).toEqual(before);
  });
});
