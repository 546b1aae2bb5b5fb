import { TOOLS } from '../src/mcp/tools.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newRawKey } from '../src/domain/keys.js';
import { revokeKey } from '../src/services/revokeKey.js';
import { listKeys } from '../src/services/listKeys.js';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { contractRow, eventRows, insertContract } from './support/fixtures.js';
import { callBody, listen, mcpClient, rawPost, toolError, toolOk } from './support/mcp.js';

const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '0' } } };

describe('MCP auth: the same key, checks and codes as the API, at the HTTP level', () => {
  let t: TestApp;
  let base: string;

  beforeAll(async () => {
    t = await startTestApp();
    base = await listen(t);
  });
  afterAll(() => t.close());

  /** The SDK client fails to connect, and the raw answer is the envelope with the status and code. */
  async function refusedAtConnect(authorization: string | undefined, status: number, code: string) {
    const headers: Record<string, string> = authorization === undefined ? {} : { authorization };
    const res = await rawPost(base, initialize, headers);
    expect(res.status).toBe(status);
    const body = (await res.json()) as any;
    expect(body).toEqual({ error: { code, message: expect.any(String), requestId: res.headers.get('x-request-id') } });
    // A key, valid or not, never gets the OAuth discovery: its client was configured with the header. Anything else
    // does (docs/mcp-assistants.md): no credentials, another scheme, a bearer token that is no key.
    const discovery = `resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`;
    const challenge = authorization?.startsWith('Bearer svc_live_')
      ? 'Bearer'
      : authorization?.startsWith('Bearer ')
        ? `Bearer error="invalid_token", ${discovery}`
        : `Bearer ${discovery}`;
    if (status === 401) expect(res.headers.get('www-authenticate')).toBe(challenge);
    else expect(res.headers.get('www-authenticate')).toBeNull();
    return body.error.message as string;
  }

  it('no key, another scheme, a bad checksum, an unknown key: 401 unauthorized with WWW-Authenticate: Bearer', async () => {
    const { key } = await t.shopWithKey();
    const badChecksum = key.slice(0, -1) + (key.endsWith('A') ? 'B' : 'A');
    expect(await refusedAtConnect(undefined, 401, 'unauthorized')).toMatch(/Authorization: Bearer/);
    await refusedAtConnect(`Basic ${Buffer.from(`x:${key}`).toString('base64')}`, 401, 'unauthorized');
    expect(await refusedAtConnect(`Bearer ${badChecksum}`, 401, 'unauthorized')).toMatch(/invalid or has been revoked/);
    await refusedAtConnect(`Bearer ${newRawKey()}`, 401, 'unauthorized');
  });

  it('the SDK client cannot connect with a refused key and sees the status', async () => {
    const err = await mcpClient(base, newRawKey()).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StreamableHTTPError);
    expect((err as StreamableHTTPError).code).toBe(401);
    expect((err as Error).message).toContain('unauthorized');
  });

  it('a revoked key stops working at once, also for a client already connected', async () => {
    const shop = await t.shopWithKey();
    const c = await insertContract(t, shop.shopId);
    const client = await mcpClient(base, shop.key);
    try {
      const ok = await client.callTool({ name: 'get_subscription_contract', arguments: { contractId: c.id } });
      expect(ok.isError ?? false).toBe(false);
      const [k] = (await listKeys({ ctx: t.ctx, input: { shopId: shop.shopId } })).keys;
      await revokeKey({ ctx: t.ctx, input: { shopId: shop.shopId, keyId: k.id } });
      await expect(client.callTool({ name: 'get_subscription_contract', arguments: { contractId: c.id } })).rejects.toMatchObject({ code: 401 });
      await refusedAtConnect(`Bearer ${shop.key}`, 401, 'unauthorized');
    } finally {
      await client.close();
    }
  });

  it('a shop without API access: 403 plan_required (no WWW-Authenticate), and works again on enterprise', async () => {
    const shop = await t.shopWithKey('basic');
    expect(await refusedAtConnect(`Bearer ${shop.key}`, 403, 'plan_required')).toMatch(/Enterprise plan/);
    const err = await mcpClient(base, shop.key).then(
      () => null,
      (e: unknown) => e,
    );
    expect((err as StreamableHTTPError).code).toBe(403);
    const { setShopPlan } = await import('../src/services/shops.js');
    await setShopPlan({ ctx: t.ctx, input: { domain: shop.domain, plan: 'enterprise' } });
    const client = await mcpClient(base, shop.key);
    await client.close();
  });

  it('a read-only key is shown only the read tools, and a change through it is refused with insufficient_scope', async () => {
    const shop = await t.shopWithKey('enterprise', { access: 'read_only' });
    const c = await insertContract(t, shop.shopId);
    const client = await mcpClient(base, shop.key);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((x) => x.name).sort()).toEqual([
        'get_bulk_job',
        'get_subscription_contract',
        'get_upcoming_renewals',
        'list_billing_attempts',
        'list_bulk_jobs',
        'list_contract_events',
        'list_subscription_contracts',
      ]);
      expect(toolOk(await client.callTool({ name: 'get_subscription_contract', arguments: { contractId: c.id } })).contract.id).toBe(c.id);
      // A tool it is not shown is still not an unknown tool: the call is refused as the API refuses it.
      for (const [name, args] of [['pause_subscription_contract', {}], ['cancel_subscription_contract', { reason: 'no' }], ['skip_next_order', {}], ['bill_now', {}]] as const) {
        const err = toolError(await client.callTool({ name, arguments: { contractId: c.id, ...args } }));
        expect(err, name).toMatchObject({ code: 'insufficient_scope', message: expect.stringContaining('read-only') });
      }
      expect((await contractRow(t, c.id)).status).toBe('ACTIVE');
      expect(await eventRows(t, c.id)).toHaveLength(0);
    } finally {
      await client.close();
    }
    // A read-write key sees all eight.
    const rw = await mcpClient(base, (await t.shopWithKey()).key);
    expect((await rw.listTools()).tools).toHaveLength(TOOLS.length);
    await rw.close();
  });

  it('an admin session token does not work here', async () => {
    const shop = await t.shopWithKey();
    await refusedAtConnect(`Bearer ${await t.sessionToken(shop.domain)}`, 401, 'unauthorized');
  });

  it('authentication comes before the body is read: a refused key with a broken body is still 401', async () => {
    const res = await rawPost(base, '{not json', { authorization: `Bearer ${newRawKey()}` });
    expect(res.status).toBe(401);
    const text = await rawPost(base, 'x', { authorization: `Bearer ${newRawKey()}`, 'content-type': 'text/plain' });
    expect(text.status).toBe(401);
  });

  it('serves the OAuth discovery documents (docs/mcp-assistants.md), and no CORS', async () => {
    for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-authorization-server']) {
      const res = await fetch(`${base}${path}`, { headers: { origin: 'https://evil.example' } });
      expect(res.status, path).toBe(200);
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
    }
    for (const path of ['/register', '/authorize']) {
      const res = await fetch(`${base}${path}`);
      expect(res.status, path).toBe(404);
      expect(((await res.json()) as any).error.code).toBe('not_found');
    }
    const { key } = await t.shopWithKey();
    const preflight = await fetch(`${base}/mcp`, {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization' },
    });
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    const res = await rawPost(base, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { ...bearer(key), origin: 'https://evil.example' });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('never writes the key to a log line, whatever the outcome', async () => {
    const shop = await t.shopWithKey();
    const c = await insertContract(t, shop.shopId);
    await rawPost(base, callBody('get_subscription_contract', { contractId: c.id }), bearer(shop.key));
    await rawPost(base, callBody('get_subscription_contract', { contractId: shop.key }), bearer(shop.key));
    await rawPost(base, callBody('pause_subscription_contract', { contractId: c.id, resumeAt: shop.key }), bearer(shop.key));
    // An unknown field named like a key: the refusal names the field, but not the key.
    const echoed = await rawPost(base, callBody('skip_next_order', { contractId: c.id, [shop.key]: 1 }), bearer(shop.key));
    const text = JSON.stringify(await echoed.json());
    expect(text).toContain('invalid_request');
    expect(text).not.toContain(shop.key);
    const badChecksum = shop.key.slice(0, -1) + (shop.key.endsWith('A') ? 'B' : 'A');
    await rawPost(base, initialize, { authorization: `Bearer ${badChecksum}` });
    const logs = t.logs.join('\n');
    expect(logs).toContain('/mcp');
    expect(logs).not.toContain(shop.key);
    expect(logs).not.toContain(badChecksum);
    expect(logs).not.toContain(shop.key.slice(9, 30));
  });
});
