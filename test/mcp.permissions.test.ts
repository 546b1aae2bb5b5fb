import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describePermission, PRESETS, type Permission, type Permissions } from '../src/domain/permissions.js';
import { createBulkJob } from '../src/services/bulkJobs.js';
import { generateKey } from '../src/services/generateKey.js';
import { adminPrincipal } from '../src/services/principal.js';
import { TOOLS } from '../src/mcp/tools.js';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { runJobs } from './support/bulk.js';
import { tableDigests } from './support/fixtures.js';

/**
 * Over MCP, a key is offered only the tools it may call (domain/operations.ts, through each tool's operation), and a
 * tool called anyway is a tool error carrying insufficient_scope that names what is missing, with nothing changed.
 * Tool by tool: a key lacking one permission the tool needs, and a key with exactly what it needs.
 */

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t?.close());

const NONE: Permissions = { contracts: 'none', billing: 'none', webhooks: 'none', bulk_jobs: 'none' };
const allBut = (n: Permission): Permissions => ({ ...PRESETS.read_write, [n.resource]: n.level === 'write' ? 'read' : 'none' });
const exactly = (needs: readonly Permission[]): Permissions => {
  const p = { ...NONE };
  for (const n of needs) if (p[n.resource] !== 'write') p[n.resource] = n.level;
  return p;
};

type Fixture = { shopId: string; contractId: string; jobId: string };
async function fixture(): Promise<Fixture> {
  const s = await t.shopWithKey('enterprise', { permissions: NONE });
  const [c] = await t.seed(s.shopId, 1);
  const job = await createBulkJob(t.ctx, adminPrincipal(s.shopId), { selector: { contractIds: [c.id] }, change: { action: 'skip' }, preview: true });
  await runJobs(t);
  return { shopId: s.shopId, contractId: c.id, jobId: job.id };
}

/** Valid arguments for each tool, against the fixture. */
const ARGS: Record<string, (f: Fixture) => Record<string, unknown>> = {
  pause_subscription_contract: (f) => ({ contractId: f.contractId }),
  resume_subscription_contract: (f) => ({ contractId: f.contractId }),
  cancel_subscription_contract: (f) => ({ contractId: f.contractId, reason: 'moving' }),
  skip_next_order: (f) => ({ contractId: f.contractId }),
  reschedule_subscription_contract: (f) => ({ contractId: f.contractId, nextBillingDate: '2027-02-01T00:00:00Z' }),
  bill_now: (f) => ({ contractId: f.contractId }),
  edit_subscription_contract: (f) => ({ contractId: f.contractId, operations: [{ op: 'set_frequency', interval: 'WEEK', intervalCount: 2 }] }),
  preview_bulk_change: (f) => ({ selector: { contractIds: [f.contractId] }, change: { action: 'pause' } }),
  start_bulk_job: (f) => ({ jobId: f.jobId }),
  get_bulk_job: (f) => ({ jobId: f.jobId }),
  list_bulk_jobs: () => ({}),
  get_subscription_contract: (f) => ({ contractId: f.contractId }),
  list_subscription_contracts: () => ({}),
  list_billing_attempts: () => ({}),
  get_upcoming_renewals: (f) => ({ contractId: f.contractId }),
  list_contract_events: (f) => ({ contractId: f.contractId }),
};

let rpcId = 0;
async function rpc(key: string, method: string, params?: object) {
  const res = await t.inject({
    method: 'POST',
    url: '/mcp',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...bearer(key) },
    payload: { jsonrpc: '2.0', id: ++rpcId, method, ...(params && { params }) },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().result;
}
const listed = async (key: string): Promise<string[]> => (await rpc(key, 'tools/list')).tools.map((x: { name: string }) => x.name);
const keyWith = async (shopId: string, permissions: Permissions) => (await generateKey({ ctx: t.ctx, input: { shopId, name: 'mcp', permissions } })).secret;

describe('MCP tools × permissions', () => {
  it('every tool has arguments here', () => {
    expect(Object.keys(ARGS).sort()).toEqual(TOOLS.map((x) => x.name).sort());
  });

  it.each(TOOLS.map((tool) => ({ name: tool.name, needs: tool.needs })))('$name', async ({ name, needs }) => {
    const f = await fixture();
    for (const lacking of needs) {
      const key = await keyWith(f.shopId, allBut(lacking));
      expect(await listed(key), `${name} is not offered without ${describePermission(lacking)}`).not.toContain(name);
      const before = await tableDigests(t);
      const result = await rpc(key, 'tools/call', { name, arguments: ARGS[name](f) });
      expect(result.isError).toBe(true);
      const error = JSON.parse(result.content[0].text).error;
      expect(error).toMatchObject({ code: 'insufficient_scope', message: expect.stringContaining(describePermission(lacking)) });
      expect(error.details).toContainEqual({ path: `permissions.${lacking.resource}`, message: expect.stringContaining(describePermission(lacking)) });
      expect(await tableDigests(t), `${name} without ${describePermission(lacking)} changed nothing`).toEqual(before);
    }
    const key = await keyWith(f.shopId, exactly(needs));
    expect(await listed(key)).toContain(name);
    // The preview waits for the bulk-job worker, which no test server runs: it is offered, and that is what is shown.
    if (name === 'preview_bulk_change') return;
    const result = await rpc(key, 'tools/call', { name, arguments: ARGS[name](f) });
    // The fixture's contract is ACTIVE: resuming it is refused for its state, not for the key.
    if (name === 'resume_subscription_contract') expect(JSON.parse(result.content[0].text).error.code).toBe('invalid_state');
    else expect(result.isError ?? false, `${name} with exactly its permissions: ${JSON.stringify(result)}`).toBe(false);
  });

  it('a tool outside the key\'s permissions is refused for them before its arguments are looked at', async () => {
    const f = await fixture();
    const key = await keyWith(f.shopId, { ...NONE, contracts: 'read' });
    const before = await tableDigests(t);
    // A lone call of a tool that reads its contract first (resolved by that read when the arguments are good), and
    // one resolved before the call: either way, bad arguments do not come first.
    for (const [name, args] of [
      ['pause_subscription_contract', { contractId: 'not-a-number', resumeAt: 'soon' }],
      ['list_billing_attempts', { limit: 1000 }],
      ['start_bulk_job', {}],
    ] as const) {
      const result = await rpc(key, 'tools/call', { name, arguments: args });
      expect(JSON.parse(result.content[0].text).error.code, name).toBe('insufficient_scope');
    }
    // A tool it may call, with bad arguments: those are what is wrong.
    const bad = await rpc(key, 'tools/call', { name: 'get_subscription_contract', arguments: { contractId: 'x' } });
    expect(JSON.parse(bad.content[0].text).error.code).toBe('invalid_request');
    expect(await tableDigests(t)).toEqual(before);
  });

  it('the list follows the permissions resource by resource', async () => {
    const f = await fixture();
    const only = async (p: Partial<Permissions>) => (await listed(await keyWith(f.shopId, { ...NONE, ...p }))).sort();
    expect(await only({})).toEqual([]);
    expect(await only({ billing: 'read' })).toEqual(['list_billing_attempts', 'get_upcoming_renewals'].sort());
    expect(await only({ billing: 'write' })).toEqual(['bill_now', 'get_upcoming_renewals', 'list_billing_attempts'].sort());
    // Bulk jobs: write without contracts: write cannot make or start a job that changes anything.
    expect(await only({ bulk_jobs: 'write' })).toEqual(['get_bulk_job', 'list_bulk_jobs']);
  });
});
