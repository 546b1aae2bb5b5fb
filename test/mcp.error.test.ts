import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { contractRow, eventRows, insertContract } from './support/fixtures.js';
import { callBody, listen, mcpClient, rawPost, toolError } from './support/mcp.js';

describe('MCP refusals: tool errors carry the API error code, HTTP errors are the envelope', () => {
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

  const call = (name: string, args: Record<string, unknown>) => client.callTool({ name, arguments: args });

  it('an action not allowed from the status is invalid_state, naming it, and changes nothing', async () => {
    const c = await insertContract(t, shop.shopId);
    const err = toolError(await call('resume_subscription_contract', { contractId: c.id }));
    expect(err).toMatchObject({ code: 'invalid_state', message: expect.stringMatching(/ACTIVE.*PAUSED or FAILED/) });
    expect(err.requestId).toMatch(/^[0-9a-f-]{36}$/);

    await call('cancel_subscription_contract', { contractId: c.id });
    const again = toolError(await call('cancel_subscription_contract', { contractId: c.id, reason: 'twice' }));
    expect(again.code).toBe('invalid_state');
    expect(toolError(await call('skip_next_order', { contractId: c.id })).code).toBe('invalid_state');
    expect((await contractRow(t, c.id)).cancellationReason).toBeNull();
    expect(await eventRows(t, c.id)).toHaveLength(1);
  });

  it('an unknown contract, or one of another shop, is not_found', async () => {
    const other = await t.shopWithKey();
    const theirs = await insertContract(t, other.shopId);
    for (const contractId of ['999999999', theirs.id, '9223372036854775808']) {
      expect(toolError(await call('get_subscription_contract', { contractId })).code).toBe('not_found');
      expect(toolError(await call('pause_subscription_contract', { contractId })).code).toBe('not_found');
      expect(toolError(await call('list_contract_events', { contractId })).code).toBe('not_found');
    }
    expect((await contractRow(t, theirs.id)).status).toBe('ACTIVE');
  });

  it('timestamps follow the API rules: UTC with Z, in the future, at most 5 years ahead', async () => {
    const c = await insertContract(t, shop.shopId);
    const cases: [string, RegExp][] = [
      ['2027-01-05T00:00:00+02:00', /UTC/],
      ['2027-01-05', /UTC/],
      ['2027-02-30T00:00:00Z', /UTC/],
      ['2026-11-22T09:59:59Z', /future/],
      ['2031-11-22T10:00:01Z', /5 years/],
    ];
    for (const [resumeAt, message] of cases) {
      const err = toolError(await call('pause_subscription_contract', { contractId: c.id, resumeAt }));
      expect(err, resumeAt).toMatchObject({ code: 'invalid_request', details: [{ path: 'resumeAt', message: expect.stringMatching(message) }] });
      const r = toolError(await call('reschedule_subscription_contract', { contractId: c.id, nextBillingDate: resumeAt }));
      expect(r.details?.[0].path).toBe('nextBillingDate');
    }
    expect((await contractRow(t, c.id)).status).toBe('ACTIVE');
  });

  it('bad arguments are invalid_request with details: id shape, types, unknown and missing fields, lengths, cursors', async () => {
    const c = await insertContract(t, shop.shopId);
    const expectInvalid = async (name: string, args: Record<string, unknown>, path: string) => {
      const err = toolError(await call(name, args));
      expect(err.code, JSON.stringify(args)).toBe('invalid_request');
      expect(err.details?.map((d) => d.path), JSON.stringify(args)).toContain(path);
    };
    await expectInvalid('get_subscription_contract', { contractId: 'abc' }, 'contractId');
    await expectInvalid('get_subscription_contract', { contractId: 42 }, 'contractId');
    await expectInvalid('get_subscription_contract', {}, 'contractId');
    await expectInvalid('skip_next_order', { contractId: c.id, when: 'now' }, 'when');
    await expectInvalid('cancel_subscription_contract', { contractId: c.id, reason: 'x'.repeat(501) }, 'reason');
    await expectInvalid('list_subscription_contracts', { limit: 0 }, 'limit');
    await expectInvalid('list_subscription_contracts', { limit: 101 }, 'limit');
    await expectInvalid('list_subscription_contracts', { status: 'paused' }, 'status');
    await expectInvalid('list_subscription_contracts', { cursor: 'not-a-cursor' }, 'cursor');
    await expectInvalid('list_contract_events', { contractId: c.id, limit: 2.5 }, 'limit');
    expect(await eventRows(t, c.id)).toHaveLength(0);
  });

  it('an unknown tool is a protocol error, not a tool result', async () => {
    // The client adds "MCP error -32602: " once; the server's own message does not carry it too.
    await expect(call('delete_everything', {})).rejects.toMatchObject({ code: -32602, message: 'MCP error -32602: Unknown tool: delete_everything' });
  });

  it('an unknown tool named like a key: the error does not echo the key', async () => {
    const keyLike = `svc_live_${'A'.repeat(49)}`;
    const err = (await call(keyLike, {}).catch((e: unknown) => e)) as { code: number; message: string };
    expect(err.code).toBe(-32602);
    expect(err.message).toContain('Unknown tool');
    expect(err.message).not.toContain('AAAAAAAA');
  });

  it('params a method does not take are -32602 invalid params, naming the field', async () => {
    // The SDK's own Server answers these with -32603 and its schema's raw issue list; JSON-RPC names them -32602.
    const cases: [object, string][] = [
      [{ method: 'tools/call', params: { name: 5, arguments: {} } }, 'params.name'],
      [{ method: 'tools/call' }, 'params'],
      [{ method: 'tools/call', params: { name: 'get_subscription_contract', arguments: ['1'] } }, 'params.arguments'],
      [{ method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {} } }, 'params.clientInfo'],
      [{ method: 'tools/list', params: { cursor: 5 } }, 'params.cursor'],
    ];
    for (const [m, field] of cases) {
      const res = await rawPost(base, { jsonrpc: '2.0', id: 'x', ...m }, bearer(shop.key));
      expect(res.status).toBe(200);
      const body = (await res.json()) as any;
      expect(body, JSON.stringify(m)).toEqual({ jsonrpc: '2.0', id: 'x', error: { code: -32602, message: expect.stringContaining(`${field}:`) } });
      // The code has its own field; the message does not start with it (a client prefixes it once).
      expect(body.error.message).toMatch(new RegExp(`^Invalid ${(m as { method: string }).method} request: `));
    }
  });

  it('the error text is the envelope with the request id of the HTTP exchange', async () => {
    const res = await rawPost(base, callBody('get_subscription_contract', { contractId: '424242' }), bearer(shop.key));
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    const envelope = JSON.parse(body.result.content[0].text);
    expect(envelope).toEqual({ error: { code: 'not_found', message: expect.any(String), requestId: res.headers.get('x-request-id') } });
  });

  describe('HTTP level: the service envelope', () => {
    const envelope = async (res: Response, status: number, code: string) => {
      expect(res.status).toBe(status);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      const body = (await res.json()) as any;
      expect(body).toEqual({ error: { code, message: expect.any(String), requestId: res.headers.get('x-request-id') } });
      return body.error;
    };

    it('GET and DELETE are 405 with Allow: POST', async () => {
      for (const method of ['GET', 'DELETE']) {
        const res = await fetch(`${base}/mcp`, { method, headers: { ...bearer(shop.key), accept: 'text/event-stream' } });
        await envelope(res, 405, 'method_not_allowed');
        expect(res.headers.get('allow')).toBe('POST');
      }
    });

    it('a body that is not JSON: 415 for another media type, 400 for broken JSON, 413 over 16 KiB', async () => {
      await envelope(await rawPost(base, 'hello', { ...bearer(shop.key), 'content-type': 'text/plain' }), 415, 'unsupported_media_type');
      await envelope(await rawPost(base, '{"jsonrpc":', bearer(shop.key)), 400, 'invalid_request');
      const big = JSON.stringify(callBody('get_subscription_contract', { contractId: '1', pad: 'x'.repeat(17 * 1024) }));
      await envelope(await rawPost(base, big, bearer(shop.key)), 413, 'payload_too_large');
    });

    it('an unsupported MCP-Protocol-Version header is 400', async () => {
      const err = await envelope(
        await rawPost(base, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { ...bearer(shop.key), 'mcp-protocol-version': '1999-01-01' }),
        400,
        'invalid_request',
      );
      expect(err.message).toContain('2025-06-18');
    });
  });

  it('JSON that is not a message the server takes is 400 invalid_request in the envelope; inside the protocol, JSON-RPC', async () => {
    const tooMany = Array.from({ length: 11 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'ping' }));
    const sameId = [{ jsonrpc: '2.0', id: 1, method: 'ping' }, { jsonrpc: '2.0', id: 1, method: 'tools/list' }];
    const initialize = { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } };
    const initInBatch = [{ jsonrpc: '2.0', id: 1, method: 'initialize', params: initialize }, { jsonrpc: '2.0', id: 2, method: 'ping' }];
    for (const [body, says] of [
      [{ hello: 'world' }, 'not a JSON-RPC 2.0 message'],
      [[], 'a batch holds 1 to 10 messages'],
      [tooMany, 'a batch holds 1 to 10 messages'],
      [sameId, 'share an id'],
      [initInBatch, 'initialize must be sent alone'],
    ] as const) {
      const res = await rawPost(base, body, bearer(shop.key));
      const envelope = await res.json();
      expect(res.status).toBe(400);
      expect(Object.keys(envelope)).toEqual(['error']);
      expect(envelope.error).toMatchObject({ code: 'invalid_request', requestId: res.headers.get('x-request-id') });
      expect(envelope.error.message).toContain(says);
    }
    const unknownMethod = await rawPost(base, { jsonrpc: '2.0', id: 3, method: 'resources/list' }, bearer(shop.key));
    expect(await unknownMethod.json()).toMatchObject({ id: 3, error: { code: -32601 } });
  });
});
