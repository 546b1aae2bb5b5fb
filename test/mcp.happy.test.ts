import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { serviceOperations } from '../src/mcp/operations.js';
import { PRESETS } from '../src/domain/permissions.js';
import { resolvedCaller } from '../src/services/principal.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { API, eventRows, insertContract } from './support/fixtures.js';
import { callBody, listen, mcpClient, rawPost, referenceServer, toolOk } from './support/mcp.js';

const TOOL_NAMES = [
  'get_subscription_contract',
  'list_subscription_contracts',
  'pause_subscription_contract',
  'resume_subscription_contract',
  'cancel_subscription_contract',
  'skip_next_order',
  'reschedule_subscription_contract',
  'list_contract_events',
  'edit_subscription_contract',
  'bill_now',
  'list_billing_attempts',
  'get_upcoming_renewals',
  'preview_bulk_change',
  'start_bulk_job',
  'get_bulk_job',
  'list_bulk_jobs',
];

describe('MCP over Streamable HTTP: the tools do what the API does', () => {
  let t: TestApp;
  let base: string;
  let shop: Awaited<ReturnType<TestApp['shopWithKey']>>;
  let client: Client;

  beforeAll(async () => {
    t = await startTestApp();
    base = await listen(t);
    shop = await t.shopWithKey();
    client = await mcpClient(base, shop.key);
  });
  afterAll(async () => {
    await client?.close();
    await t.close();
  });

  it('lists the tools with described inputs, output schemas and truthful annotations', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((x) => x.name).sort()).toEqual([...TOOL_NAMES].sort());
    const byName = Object.fromEntries(tools.map((x) => [x.name, x]));
    for (const tool of tools) {
      expect(tool.description!.length).toBeGreaterThan(40);
      expect(tool.outputSchema?.type).toBe('object');
      expect(JSON.stringify(tool.outputSchema)).not.toContain('$ref');
      for (const [name, prop] of Object.entries(tool.inputSchema.properties ?? {})) {
        expect((prop as { description?: string }).description, `${tool.name}.${name}`).toMatch(/\w{3,}/);
      }
      expect(tool.annotations?.openWorldHint).toBe(false);
    }
    const resumeAt = (byName.pause_subscription_contract.inputSchema.properties as any).resumeAt;
    expect(resumeAt.description).toMatch(/ISO 8601.*UTC.*Z/);
    expect(resumeAt.description).toContain('2027-01-05T00:00:00Z');
    expect(byName.pause_subscription_contract.inputSchema.required).toEqual(['contractId']);
    expect(byName.reschedule_subscription_contract.inputSchema.required).toEqual(['contractId', 'nextBillingDate']);
    expect((byName.get_subscription_contract.inputSchema.properties as any).contractId.pattern).toBe('^\\d{1,19}$');

    for (const name of ['get_subscription_contract', 'list_subscription_contracts', 'list_contract_events']) {
      expect(byName[name].annotations).toMatchObject({ readOnlyHint: true });
    }
    expect(byName.cancel_subscription_contract.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    for (const name of ['pause_subscription_contract', 'resume_subscription_contract', 'skip_next_order', 'reschedule_subscription_contract']) {
      expect(byName[name].annotations, name).toMatchObject({ readOnlyHint: false, destructiveHint: false });
    }
    // Idempotent only where a repeat changes nothing at all: a second resume or cancel is refused (invalid_state),
    // while every skip moves the date again and every pause or reschedule records another event.
    expect(Object.fromEntries(TOOL_NAMES.filter((n) => !n.startsWith('get_') && !n.startsWith('list_')).map((n) => [n, byName[n].annotations?.idempotentHint]))).toEqual({
      pause_subscription_contract: false,
      resume_subscription_contract: true,
      cancel_subscription_contract: true,
      skip_next_order: false,
      reschedule_subscription_contract: false,
      edit_subscription_contract: false,
      bill_now: false,
      // Every preview makes a job; every start runs one.
      preview_bulk_change: false,
      start_bulk_job: false,
    });
    // A preview changes no contract; starting one changes many.
    expect(byName.preview_bulk_change.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false });
    expect(byName.start_bulk_job.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    for (const name of ['get_bulk_job', 'list_bulk_jobs']) expect(byName[name].annotations).toMatchObject({ readOnlyHint: true });
    // bill_now charges the customer: destructive, and every call bills again.
    expect(byName.bill_now.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    for (const name of ['list_billing_attempts', 'get_upcoming_renewals']) expect(byName[name].annotations).toMatchObject({ readOnlyHint: true });
    expect(byName.edit_subscription_contract.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
  });

  it('get_subscription_contract returns exactly what GET /api/v1 returns', async () => {
    const c = await insertContract(t, shop.shopId);
    const result = await client.callTool({ name: 'get_subscription_contract', arguments: { contractId: c.id } });
    const out = toolOk(result);
    const api = await t.inject({ url: `${API}/${c.id}`, headers: bearer(shop.key) });
    expect(out).toEqual(api.json());
    // Byte for byte: the tool's text is the API's answer.
    expect((result.content as { text: string }[])[0].text).toBe(api.body);
    expect(out.contract).toMatchObject({ id: c.id, status: 'ACTIVE', nextBillingDate: '2026-12-01T00:00:00.000Z' });
  });

  it('list_subscription_contracts filters by status and pages with the cursor', async () => {
    const other = await t.shopWithKey();
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await insertContract(t, other.shopId)).id);
    const paused = await insertContract(t, other.shopId, { status: 'PAUSED', pausedAt: t.clock.now() });
    const c2 = await mcpClient(base, other.key);
    try {
      const first = toolOk(await c2.callTool({ name: 'list_subscription_contracts', arguments: { status: 'ACTIVE', limit: 2 } }));
      expect(first.contracts.map((c: { id: string }) => c.id)).toEqual(ids.slice(0, 2));
      const second = toolOk(
        await c2.callTool({ name: 'list_subscription_contracts', arguments: { status: 'ACTIVE', limit: 2, cursor: first.nextCursor } }),
      );
      expect(second).toMatchObject({ contracts: [{ id: ids[2] }], nextCursor: null });
      const all = toolOk(await c2.callTool({ name: 'list_subscription_contracts', arguments: {} }));
      expect(all.contracts.map((c: { id: string }) => c.id)).toEqual([...ids, paused.id]);
    } finally {
      await c2.close();
    }
  });

  it('list_subscription_contracts takes the list endpoint\'s filters: statuses, a customer, a variant, a window of dates', async () => {
    const other = await t.shopWithKey();
    const day = (n: number) => new Date(t.clock.now().getTime() + n * 86_400_000);
    const ada = await insertContract(t, other.shopId, { customerEmail: 'ada@example.com', nextBillingDate: day(2) });
    const paused = await insertContract(t, other.shopId, { customerEmail: 'Ada@Example.com', status: 'PAUSED', pausedAt: t.clock.now(), nextBillingDate: day(5) });
    const later = await insertContract(t, other.shopId, { customerEmail: 'bob@example.com', nextBillingDate: day(40) });
    await insertContract(t, other.shopId, { customerEmail: 'cy@example.com', status: 'CANCELLED', nextBillingDate: day(3) });
    const c2 = await mcpClient(base, other.key);
    const ids = async (args: Record<string, unknown>) =>
      toolOk(await c2.callTool({ name: 'list_subscription_contracts', arguments: args })).contracts.map((c: { id: string }) => c.id);
    try {
      expect(await ids({ status: ['ACTIVE', 'PAUSED'] })).toEqual([ada.id, paused.id, later.id]);
      expect(await ids({ customerEmail: 'ADA@example.com' })).toEqual([ada.id, paused.id]);
      expect(await ids({ status: 'ACTIVE', nextBillingDateTo: day(10).toISOString() })).toEqual([ada.id]);
      expect(await ids({ nextBillingDateFrom: day(4).toISOString(), nextBillingDateTo: day(60).toISOString() })).toEqual([paused.id, later.id]);
      // The same answer as the API's list with the same query.
      const api = await t.inject({ url: `${API}?status=ACTIVE&status=PAUSED&customerEmail=ada%40example.com`, headers: bearer(other.key) });
      expect(toolOk(await c2.callTool({ name: 'list_subscription_contracts', arguments: { status: ['ACTIVE', 'PAUSED'], customerEmail: 'ada@example.com' } }))).toEqual(api.json());
      // A filter that is not one: refused as the tool's arguments, nothing listed.
      const bad = await c2.callTool({ name: 'list_subscription_contracts', arguments: { variantId: 'espresso' } });
      expect(bad.isError).toBe(true);
    } finally {
      await c2.close();
    }
  });

  it('pause, reschedule, resume, skip and cancel change the contract and record actor mcp with the key fingerprint', async () => {
    const c = await insertContract(t, shop.shopId);
    const call = async (name: string, args: object) => toolOk(await client.callTool({ name, arguments: { contractId: c.id, ...args } })).contract;

    expect(await call('pause_subscription_contract', { resumeAt: '2027-01-05T00:00:00Z' })).toMatchObject({
      status: 'PAUSED',
      pausedAt: '2026-11-22T10:00:00.000Z',
      resumeAt: '2027-01-05T00:00:00.000Z',
    });
    expect(await call('reschedule_subscription_contract', { nextBillingDate: '2027-02-10T08:30:00.5Z' })).toMatchObject({
      status: 'PAUSED',
      nextBillingDate: '2027-02-10T08:30:00.500Z',
    });
    expect(await call('resume_subscription_contract', {})).toMatchObject({ status: 'ACTIVE', pausedAt: null, resumeAt: null });
    expect(await call('skip_next_order', {})).toMatchObject({ status: 'ACTIVE', nextBillingDate: '2027-03-10T08:30:00.500Z' });
    expect(await call('cancel_subscription_contract', { reason: 'Moving abroad' })).toMatchObject({
      status: 'CANCELLED',
      cancelledAt: '2026-11-22T10:00:00.000Z',
      cancellationReason: 'Moving abroad',
    });

    const rows = await eventRows(t, c.id);
    expect(rows.map((r) => r.type)).toEqual([
      'contract.paused',
      'contract.rescheduled',
      'contract.resumed',
      'contract.skipped',
      'contract.cancelled',
    ]);
    for (const r of rows) expect({ type: r.actorType, fp: r.actorKeyFingerprint }).toEqual({ type: 'mcp', fp: shop.fingerprint });

    const events = toolOk(await client.callTool({ name: 'list_contract_events', arguments: { contractId: c.id, limit: 2 } }));
    expect(events.events.map((e: { type: string }) => e.type)).toEqual(['contract.cancelled', 'contract.skipped']);
    expect(events.events[0]).toMatchObject({ actor: { type: 'mcp', keyFingerprint: shop.fingerprint }, from: 'ACTIVE', to: 'CANCELLED' });
    const rest = toolOk(await client.callTool({ name: 'list_contract_events', arguments: { contractId: c.id, cursor: events.nextCursor } }));
    expect(rest.events).toHaveLength(3);
    expect(rest.nextCursor).toBeNull();
  });

  it('pause without resumeAt pauses until resumed', async () => {
    const c = await insertContract(t, shop.shopId);
    const out = toolOk(await client.callTool({ name: 'pause_subscription_contract', arguments: { contractId: c.id } }));
    expect(out.contract).toMatchObject({ status: 'PAUSED', resumeAt: null });
  });

  it('edit_subscription_contract previews, then edits, as the API does (actor mcp)', async () => {
    const c = await insertContract(t, shop.shopId);
    const operations = [{ op: 'set_quantity', lineId: c.lines[0].id, quantity: 3 }];
    const preview = toolOk(await client.callTool({ name: 'edit_subscription_contract', arguments: { contractId: c.id, operations, preview: true } }));
    expect(preview).toMatchObject({ preview: true, contract: { lines: [{ quantity: 3 }], totals: { total: '72.00' } } });
    expect(await eventRows(t, c.id)).toEqual([]);
    const done = toolOk(await client.callTool({ name: 'edit_subscription_contract', arguments: { contractId: c.id, operations } }));
    expect(done).toMatchObject({ preview: false, contract: { lines: [{ quantity: 3 }] } });
    expect((await t.inject({ url: `${API}/${c.id}`, headers: bearer(shop.key) })).json().contract).toEqual(done.contract);
    expect((await eventRows(t, c.id)).map((e) => [e.type, e.actorType])).toEqual([['contract.updated', 'mcp']]);
    const bad = await client.callTool({ name: 'edit_subscription_contract', arguments: { contractId: c.id, operations: [{ op: 'remove_line', lineId: 'nope' }] } });
    expect(bad.isError).toBe(true);
    expect(JSON.stringify(bad.content)).toContain('invalid_edit');
  });

  it('answers as an event stream to a client that accepts only that, and batches as arrays', async () => {
    const c = await insertContract(t, shop.shopId);
    const sse = await rawPost(base, callBody('get_subscription_contract', { contractId: c.id }, 7), {
      ...bearer(shop.key),
      accept: 'text/event-stream',
    });
    expect(sse.status).toBe(200);
    expect(sse.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const text = await sse.text();
    expect(text).toMatch(/^event: message\ndata: /);
    const message = JSON.parse(text.split('data: ')[1]);
    expect(message).toMatchObject({ jsonrpc: '2.0', id: 7, result: { structuredContent: { contract: { id: c.id } } } });

    const batch = await rawPost(base, [callBody('get_subscription_contract', { contractId: c.id }, 'a'), { jsonrpc: '2.0', id: 'b', method: 'ping' }], bearer(shop.key));
    expect(batch.status).toBe(200);
    const answers = (await batch.json()) as { id: string }[];
    expect(answers.map((a) => a.id).sort()).toEqual(['a', 'b']);

    const note = await rawPost(base, { jsonrpc: '2.0', method: 'notifications/initialized' }, bearer(shop.key));
    expect(note.status).toBe(202);
    expect(await note.text()).toBe('');
  });

  it('answers every message exactly as the SDK\'s own Server with the same tools answers it', async () => {
    const [c] = await t.seed(shop.shopId, 1);
    // The same services for the same caller, served by the SDK's Server instead of our dispatch.
    const caller = resolvedCaller({ kind: 'shop', shopId: shop.shopId, actor: { type: 'mcp', keyFingerprint: shop.fingerprint }, permissions: PRESETS.read_write, who: 'This API key' });
    const reference = await referenceServer({ ops: serviceOperations(t.ctx, caller) });
    const initialize = (protocolVersion: string) => ({ method: 'initialize', params: { protocolVersion, capabilities: {}, clientInfo: { name: 't', version: '1' } } });
    const call = (name: string, args: object, _meta?: object) => ({ method: 'tools/call', params: { name, arguments: args, ...(_meta && { _meta }) } });
    const messages: object[] = [
      initialize(LATEST_PROTOCOL_VERSION),
      initialize('2025-03-26'), // an older version we support: kept
      initialize('1999-01-01'), // one we do not: our latest, and the client decides
      { method: 'ping' },
      { method: 'ping', params: { _meta: { progressToken: 1 } } },
      { method: 'tools/list' },
      { method: 'tools/list', params: { cursor: 'x' } },
      call('get_subscription_contract', { contractId: c.id }),
      call('get_subscription_contract', { contractId: c.id }, { progressToken: 'p' }),
      call('get_subscription_contract', { contractId: '999999999' }), // not_found
      call('get_subscription_contract', { contractId: 'x', colour: 1 }), // invalid_request with details
      call('list_contract_events', { contractId: c.id }),
      { method: 'tools/call', params: { name: 'get_subscription_contract' } }, // no arguments: invalid_request
      call('delete_everything', {}), // unknown tool: a protocol error
      { method: 'resources/list' }, // unknown method
      { method: 'completion/complete', params: {} },
    ];
    // The error envelope's requestId is each exchange's own; everything else must be the same.
    const strip = (x: unknown) => JSON.parse(JSON.stringify(x).replace(/\\"requestId\\":\\"[^\\"]*\\"/g, ''));
    for (const [i, m] of messages.entries()) {
      const body = { jsonrpc: '2.0', id: i, ...m };
      const res = await rawPost(base, body, bearer(shop.key));
      expect(res.status).toBe(200);
      const ours = strip(await res.json());
      const theirs = strip(await reference.ask(body));
      // The one difference in an error: the SDK's message starts with "MCP error <code>: ", which a client adds
      // again when it reports the error; ours is the message alone (the code has its own field).
      if (ours.error) {
        expect(ours.error.message, JSON.stringify(m)).not.toMatch(/^MCP error/);
        theirs.error.message = String(theirs.error.message).replace(`MCP error ${theirs.error.code}: `, '');
      }
      expect(ours, JSON.stringify(m)).toEqual(theirs);
    }
    await reference.close();
  });

  it('keeps concurrent clients apart: same JSON-RPC ids, different shops, each gets its own contract', async () => {
    const shops = await Promise.all([t.shopWithKey(), t.shopWithKey()]);
    const contracts = await Promise.all(shops.map((s) => insertContract(t, s.shopId)));
    const calls = Array.from({ length: 24 }, (_, i) => {
      const k = i % 2;
      return rawPost(base, callBody('get_subscription_contract', { contractId: contracts[k].id }, 1), bearer(shops[k].key)).then(
        async (res) => ({ k, body: (await res.json()) as any }),
      );
    });
    for (const { k, body } of await Promise.all(calls)) {
      expect(body.result.structuredContent.contract.id).toBe(contracts[k].id);
    }
  });

  it('a client that initializes with an older protocol version still works', async () => {
    const res = await rawPost(base, {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'old', version: '0' } },
    }, bearer(shop.key));
    const body = (await res.json()) as any;
    expect(body.result).toMatchObject({ protocolVersion: '2025-03-26', serverInfo: { name: 'svc' }, capabilities: { tools: {} } });
    expect(body.result.instructions).toContain('invalid_state');
  });
});
