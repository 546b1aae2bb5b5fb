import { TOOLS } from '../src/mcp/tools.js';
import { spawn } from 'node:child_process';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli/main.js';
import { newRawKey } from '../src/domain/keys.js';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { API, contractRow, eventRows, insertContract } from './support/fixtures.js';
import { listen, mcpClient, toolError, toolOk } from './support/mcp.js';

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** The command the README gives IDEs: works from any directory, and npm's -s keeps its banner off stdout. */
const README_COMMAND = { command: 'npm', args: ['--prefix', ROOT, 'run', '-s', 'svc', '--', 'mcp-stdio'] };

describe('svc mcp-stdio: the same tools over stdio, running on the HTTP API', () => {
  let t: TestApp;
  let base: string;
  let shop: Awaited<ReturnType<TestApp['shopWithKey']>>;

  /** One process launched as an IDE would, with the shop's key, shared by the tests that call tools (a launch takes seconds). */
  let launched: ReturnType<typeof stdioClient> | undefined;
  const shared = () => (launched ??= stdioClient({ SVC_API_KEY: shop.key, SVC_BASE_URL: base }));

  beforeAll(async () => {
    t = await startTestApp();
    base = await listen(t);
    shop = await t.shopWithKey();
  });
  afterAll(async () => {
    try {
      if (launched) await (await launched).client.close();
    } finally {
      await t.close();
    }
  });

  async function stdioClient(env: Record<string, string>) {
    const transport = new StdioClientTransport({ ...README_COMMAND, env, cwd: os.tmpdir(), stderr: 'pipe' });
    let stderr = '';
    transport.stderr?.on('data', (b: Buffer) => (stderr += b.toString()));
    const client = new Client({ name: 'svc-tests', version: '1.0.0' });
    await client.connect(transport);
    /** Stderr once it matches (it travels on its own pipe, so it may trail stdout a little). */
    const stderrMatching = async (re: RegExp) => {
      while (!re.test(stderr)) await new Promise((r) => transport.stderr!.once('data', r));
      return stderr;
    };
    return { client, stderrMatching };
  }

  it('lists the same tools as /mcp and runs them through the API, with the API\'s codes on refusal', async () => {
    const c = await insertContract(t, shop.shopId);
    const { client, stderrMatching } = await shared();
    const http = await mcpClient(base, shop.key);
    try {
      expect((await client.listTools()).tools).toEqual((await http.listTools()).tools);

      const got = toolOk(await client.callTool({ name: 'get_subscription_contract', arguments: { contractId: c.id } }));
      expect(got.contract).toMatchObject({ id: c.id, status: 'ACTIVE' });
      const paused = toolOk(
        await client.callTool({ name: 'pause_subscription_contract', arguments: { contractId: c.id, resumeAt: '2027-01-05T00:00:00Z' } }),
      );
      expect(paused.contract).toMatchObject({ status: 'PAUSED', resumeAt: '2027-01-05T00:00:00.000Z' });
      const list = toolOk(await client.callTool({ name: 'list_subscription_contracts', arguments: { status: 'PAUSED', limit: 5 } }));
      expect(list.contracts.map((x: { id: string }) => x.id)).toContain(c.id);
      // Several statuses and a filter reach the API as its query (status repeated).
      const filtered = toolOk(await client.callTool({ name: 'list_subscription_contracts', arguments: { status: ['PAUSED', 'CANCELLED'], customerId: c.customerId } }));
      expect(filtered.contracts.map((x: { id: string }) => x.id)).toContain(c.id);
      expect(new Set(filtered.contracts.map((x: { status: string; customer: { id: string } }) => `${x.status} ${x.customer.id}`))).toEqual(new Set([`PAUSED ${c.customerId}`]));
      const events = toolOk(await client.callTool({ name: 'list_contract_events', arguments: { contractId: c.id } }));
      // A client of the HTTP API: its actions are the key's, like any integration's.
      expect(events.events[0]).toMatchObject({ type: 'contract.paused', actor: { type: 'api_key', keyFingerprint: shop.fingerprint } });

      const refused = toolError(await client.callTool({ name: 'skip_next_order', arguments: { contractId: c.id } }));
      expect(refused).toMatchObject({ code: 'invalid_state', message: expect.stringContaining('PAUSED') });
      expect(refused.requestId).toMatch(/^[0-9a-f-]{36}$/);
      const missing = toolError(await client.callTool({ name: 'get_subscription_contract', arguments: { contractId: '99999999' } }));
      expect(missing.code).toBe('not_found');
      const invalid = toolError(
        await client.callTool({ name: 'reschedule_subscription_contract', arguments: { contractId: c.id, nextBillingDate: '2020-01-01T00:00:00Z' } }),
      );
      expect(invalid).toMatchObject({ code: 'invalid_request', details: [{ path: 'nextBillingDate' }] });
      expect(await eventRows(t, c.id)).toHaveLength(1);
      expect(await stderrMatching(/serving the svc tools on stdio/)).not.toContain(shop.key);
    } finally {
      await http.close();
    }
  });

  it('resume, cancel, skip and reschedule change the contract through the API, as the key (actor api_key)', async () => {
    // The actions run in the API, i.e. in this process on the test app's clock (2026-11-22T10:00:00Z): the child
    // only relays them. Dates are chosen in the future of that clock (and of the real one).
    const now = t.clock.now().toISOString();
    const { client } = await shared();
    const act = async (name: string, contractId: string, args: object = {}) =>
      toolOk(await client.callTool({ name, arguments: { contractId, ...args } })).contract;
    /** The contract as the API reads it back now, with the key: the same as the tool's result. */
    const viaApi = async (id: string) => {
      const res = await t.inject({ method: 'GET', url: `${API}/${id}`, headers: bearer(shop.key) });
      expect(res.statusCode).toBe(200);
      return res.json().contract;
    };
    const asKey = { actorType: 'api_key', actorKeyFingerprint: shop.fingerprint, at: new Date(now) };

    // Resume a paused contract whose next billing date has passed: ACTIVE, pause cleared, date moved to the first
    // whole interval after now.
    const p = await insertContract(t, shop.shopId, {
      status: 'PAUSED',
      pausedAt: new Date('2026-09-15T00:00:00.000Z'),
      resumeAt: new Date('2027-01-05T00:00:00.000Z'),
      nextBillingDate: new Date('2026-10-01T00:00:00.000Z'),
    });
    const resumed = await act('resume_subscription_contract', p.id);
    expect(resumed).toMatchObject({
      id: p.id,
      status: 'ACTIVE',
      pausedAt: null,
      resumeAt: null,
      nextBillingDate: '2026-12-01T00:00:00.000Z',
      cancelledAt: null,
      cancellationReason: null,
      updatedAt: now,
    });
    expect(await viaApi(p.id)).toEqual(resumed);
    expect(await contractRow(t, p.id)).toMatchObject({
      status: 'ACTIVE',
      pausedAt: null,
      resumeAt: null,
      nextBillingDate: new Date('2026-12-01T00:00:00.000Z'),
    });
    expect(await eventRows(t, p.id)).toMatchObject([
      {
        type: 'contract.resumed',
        fromStatus: 'PAUSED',
        toStatus: 'ACTIVE',
        data: { previousNextBillingDate: '2026-10-01T00:00:00.000Z', nextBillingDate: '2026-12-01T00:00:00.000Z' },
        ...asKey,
      },
    ]);

    // Reschedule, skip, then cancel one ACTIVE contract (next billing date 2026-12-01, monthly).
    const c = await insertContract(t, shop.shopId);
    const rescheduled = await act('reschedule_subscription_contract', c.id, { nextBillingDate: '2027-02-10T08:30:00.5Z' });
    expect(rescheduled).toMatchObject({ id: c.id, status: 'ACTIVE', nextBillingDate: '2027-02-10T08:30:00.500Z', updatedAt: now });
    expect(await viaApi(c.id)).toEqual(rescheduled);
    expect((await contractRow(t, c.id)).nextBillingDate).toEqual(new Date('2027-02-10T08:30:00.500Z'));

    const skipped = await act('skip_next_order', c.id);
    expect(skipped).toMatchObject({ id: c.id, status: 'ACTIVE', nextBillingDate: '2027-03-10T08:30:00.500Z' });
    expect(await viaApi(c.id)).toEqual(skipped);
    expect((await contractRow(t, c.id)).nextBillingDate).toEqual(new Date('2027-03-10T08:30:00.500Z'));

    const cancelled = await act('cancel_subscription_contract', c.id, { reason: 'Moving abroad' });
    expect(cancelled).toMatchObject({
      id: c.id,
      status: 'CANCELLED',
      cancelledAt: now,
      cancellationReason: 'Moving abroad',
      nextBillingDate: '2027-03-10T08:30:00.500Z',
      pausedAt: null,
      resumeAt: null,
    });
    expect(await viaApi(c.id)).toEqual(cancelled);
    expect(await contractRow(t, c.id)).toMatchObject({
      status: 'CANCELLED',
      cancelledAt: new Date(now),
      cancellationReason: 'Moving abroad',
    });

    expect(await eventRows(t, c.id)).toMatchObject([
      {
        type: 'contract.rescheduled',
        fromStatus: 'ACTIVE',
        toStatus: 'ACTIVE',
        data: { previousNextBillingDate: '2026-12-01T00:00:00.000Z', nextBillingDate: '2027-02-10T08:30:00.500Z' },
        ...asKey,
      },
      {
        type: 'contract.skipped',
        fromStatus: 'ACTIVE',
        toStatus: 'ACTIVE',
        data: { previousNextBillingDate: '2027-02-10T08:30:00.500Z', nextBillingDate: '2027-03-10T08:30:00.500Z' },
        ...asKey,
      },
      { type: 'contract.cancelled', fromStatus: 'ACTIVE', toStatus: 'CANCELLED', data: { reason: 'Moving abroad' }, ...asKey },
    ]);
    // And the history as the tool reports it, newest first.
    const events = toolOk(await client.callTool({ name: 'list_contract_events', arguments: { contractId: c.id } }));
    expect(events.events).toMatchObject([
      { type: 'contract.cancelled', at: now, actor: { type: 'api_key', keyFingerprint: shop.fingerprint }, from: 'ACTIVE', to: 'CANCELLED' },
      { type: 'contract.skipped', actor: { type: 'api_key', keyFingerprint: shop.fingerprint } },
      { type: 'contract.rescheduled', actor: { type: 'api_key', keyFingerprint: shop.fingerprint } },
    ]);
    expect(events.nextCursor).toBeNull();
  });

  it('writes nothing but JSON-RPC on stdout and exits 0 when the client closes stdin', async () => {
    const child = spawn(README_COMMAND.command, README_COMMAND.args, {
      cwd: os.tmpdir(),
      env: { PATH: process.env.PATH, HOME: process.env.HOME, SVC_API_KEY: shop.key, SVC_BASE_URL: base },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '0' } } };
    const lines = [
      init,
      { jsonrpc: '2.0', method: 'notifications/initialized' }, // a notification: no answer
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      'not json', // not a message: a line on stderr, no answer
      { jsonrpc: '2.0', id: 3, method: 'ping' },
      { jsonrpc: '2.0', id: 4, method: 'resources/list' },
    ];
    child.stdin.write(lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n');
    while (stdout.split('\n').filter(Boolean).length < 4) await new Promise((r) => child.stdout.once('data', r));
    child.stdin.end();
    expect(await exited).toBe(0);
    const answers = stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l));
    expect(answers.sort((a, b) => a.id - b.id)).toMatchObject([
      { jsonrpc: '2.0', id: 1, result: { serverInfo: { name: 'svc' } } },
      { jsonrpc: '2.0', id: 2, result: { tools: expect.any(Array) } },
      { jsonrpc: '2.0', id: 3, result: {} },
      { jsonrpc: '2.0', id: 4, error: { code: -32601 } },
    ]);
    expect(stderr).toContain('ignored a line that is not a JSON-RPC 2.0 message');
  });

  it('a read-only key: it is told the key at start, lists the read tools as /mcp does, and the API refuses a change', async () => {
    const ro = await t.shopWithKey('enterprise', { access: 'read_only' });
    const c = await insertContract(t, ro.shopId);
    const { client, stderrMatching } = await stdioClient({ SVC_API_KEY: ro.key, SVC_BASE_URL: base });
    const http = await mcpClient(base, ro.key);
    try {
      // Its start-up probe is GET /api/v1/key: what the key is, said on stderr (never the key itself).
      const said = await stderrMatching(/serving the svc tools on stdio/);
      expect(said).toContain(`key "test" (fingerprint ${ro.fingerprint}) of ${ro.domain}: contracts: read, billing: read, webhooks: read, bulk_jobs: read.`);
      expect(said).not.toContain(ro.key);
      // It asks the API what the key may do, and offers those tools only: the same list as /mcp.
      const tools = (await client.listTools()).tools;
      expect(tools).toEqual((await http.listTools()).tools);
      expect(tools.length).toBeLessThan(TOOLS.length);
      expect(tools.every((x) => x.annotations?.readOnlyHint)).toBe(true);
      expect(toolOk(await client.callTool({ name: 'get_subscription_contract', arguments: { contractId: c.id } })).contract.id).toBe(c.id);
      const err = toolError(await client.callTool({ name: 'pause_subscription_contract', arguments: { contractId: c.id } }));
      expect(err).toMatchObject({ code: 'insufficient_scope', requestId: expect.stringMatching(/^[0-9a-f-]{36}$/) });
      expect((await contractRow(t, c.id)).status).toBe('ACTIVE');
    } finally {
      await http.close();
      await client.close();
    }
  });

  describe('a key it cannot use is a clear message on stderr and exit code 1, before serving', () => {
    async function run(env: Record<string, string>) {
      const out: string[] = [];
      const err: string[] = [];
      const code = await runCli(['mcp-stdio'], { out: (s) => out.push(s), err: (s) => err.push(s) }, env);
      return { code, out: out.join('\n'), err: err.join('\n') };
    }

    it('missing or malformed, without echoing it', async () => {
      const missing = await run({ SVC_BASE_URL: base });
      expect(missing).toMatchObject({ code: 1, out: '' });
      expect(missing.err).toMatch(/SVC_API_KEY is not set.*Settings → API/);
      const typo = shop.key.slice(0, -1) + (shop.key.endsWith('A') ? 'B' : 'A');
      const malformed = await run({ SVC_API_KEY: typo, SVC_BASE_URL: base });
      expect(malformed).toMatchObject({ code: 1, out: '' });
      expect(malformed.err).toMatch(/not a valid svc API key/);
      expect(malformed.err).not.toContain(typo);
    });

    it('refused by the API: unknown or revoked (unauthorized), or the shop lost access (plan_required)', async () => {
      const unknown = await run({ SVC_API_KEY: newRawKey(), SVC_BASE_URL: base });
      expect(unknown).toMatchObject({ code: 1, out: '' });
      expect(unknown.err).toMatch(/refused SVC_API_KEY \(unauthorized\): The API key is invalid or has been revoked/);
      const basic = await t.shopWithKey('basic');
      const plan = await run({ SVC_API_KEY: basic.key, SVC_BASE_URL: base });
      expect(plan).toMatchObject({ code: 1, out: '' });
      expect(plan.err).toMatch(/plan_required.*Enterprise plan/);
    });

    it('a base URL that is not one', async () => {
      const bad = await run({ SVC_API_KEY: shop.key, SVC_BASE_URL: 'localhost:3000' });
      expect(bad).toMatchObject({ code: 1, out: '' });
      expect(bad.err).toMatch(/SVC_BASE_URL must be an http/);
    });
  });

  it('serves while the API is unreachable, and each tool call says so', async () => {
    const closed = await closedPort();
    const { client, stderrMatching } = await stdioClient({ SVC_API_KEY: shop.key, SVC_BASE_URL: `http://127.0.0.1:${closed}` });
    try {
      expect(await stderrMatching(/warning:/)).toContain(`Cannot reach the svc API at http://127.0.0.1:${closed} (ECONNREFUSED)`);
      const err = toolError(await client.callTool({ name: 'get_subscription_contract', arguments: { contractId: '1' } }));
      expect(err).toMatchObject({ code: 'unavailable', message: expect.stringContaining('SVC_BASE_URL') });
    } finally {
      await client.close();
    }
  });
});
