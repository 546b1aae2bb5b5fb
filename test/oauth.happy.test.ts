import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SCOPES } from '../src/domain/oauth.js';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { listen, toolError, toolOk } from './support/mcp.js';
import { connect, decide, openAuthorizeUrl, TestOAuthProvider } from './support/oauth.js';
import { logRows } from './support/requestLog.js';

/**
 * An AI assistant connects to /mcp through OAuth (docs/mcp-assistants.md), driven by the MCP SDK's own OAuth client:
 * discovery from the 401, dynamic registration, the authorize URL, the merchant's consent through the admin API (their
 * session token), the code exchanged with PKCE, tools listed and called with the grant's permissions, a refresh.
 */

let t: TestApp;
let base: string;
beforeAll(async () => {
  t = await startTestApp();
  base = await listen(t);
});
afterAll(() => t?.close());

describe('discovery', () => {
  it('a request without credentials gets 401 with the protected resource metadata URL', async () => {
    const res = await fetch(`${base}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`);
    expect((await res.json()).error.code).toBe('unauthorized');
  });

  it('a request with a bad API key gets the plain challenge, never the OAuth discovery', async () => {
    const s = await t.shopWithKey();
    const bad = s.key.slice(0, -1) + (s.key.endsWith('A') ? 'B' : 'A');
    const res = await fetch(`${base}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', ...bearer(bad) }, body: '{}' });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('serves RFC 9728 and RFC 8414 documents naming svc as its own authorization server', async () => {
    for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
      const prm = await (await fetch(`${base}${path}`)).json();
      expect(prm).toMatchObject({ resource: `${base}/mcp`, authorization_servers: [base], scopes_supported: SCOPES, bearer_methods_supported: ['header'] });
    }
    const as = await (await fetch(`${base}/.well-known/oauth-authorization-server`)).json();
    expect(as).toMatchObject({
      issuer: base,
      authorization_endpoint: `${base}/oauth/authorize`,
      token_endpoint: `${base}/oauth/token`,
      registration_endpoint: `${base}/oauth/register`,
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
      client_id_metadata_document_supported: true,
    });
  });
});

describe('the MCP SDK OAuth client, end to end', () => {
  it('registers, is approved with narrowed permissions, lists only what it may call, calls a tool, refreshes', async () => {
    const s = await t.shopWithKey();
    const [contract] = await t.seed(s.shopId, 1);
    const provider = new TestOAuthProvider();
    const transportFor = () => new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider });

    // 1. The first connect meets the 401, discovers, registers and sends the browser to the authorize URL.
    const first = transportFor();
    await expect(new Client({ name: 'assistant', version: '1' }).connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
    expect(provider.client?.client_id).toMatch(/^svc_client_/);
    const url = provider.authorizationUrl!;
    expect(url.searchParams.get('resource')).toBe(`${base}/mcp`);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');

    // 2. The browser lands on the consent page; the merchant sees the app's name and what it asks.
    const request = await openAuthorizeUrl(url);
    const shown = await t.inject({ method: 'GET', url: `/admin/api/oauth/authorization?${new URLSearchParams(request)}`, headers: { ...bearer(await t.sessionToken(s.domain)), host: new URL(base).host } });
    expect(shown.statusCode, shown.body).toBe(200);
    expect(shown.json()).toMatchObject({ client: { name: 'Test Assistant', kind: 'registered' }, redirectHost: '127.0.0.1:9', resource: `${base}/mcp` });

    // 3. Approved with contracts read only.
    const approved = await decide(t, s.domain, request, { permissions: { contracts: 'read', billing: 'none', webhooks: 'none', bulk_jobs: 'none' } });
    expect(approved.statusCode, approved.body).toBe(200);
    const back = new URL(approved.json().redirectTo);
    expect(`${back.origin}${back.pathname}`).toBe('http://127.0.0.1:9/callback');
    expect(back.searchParams.get('state')).toBe(provider.sentState);
    expect(back.searchParams.get('iss')).toBe(base);
    await first.finishAuth(back.searchParams.get('code')!);
    expect(provider.saved).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'contracts:read' });
    expect(provider.saved!.access_token).toMatch(/^svc_oat_/);

    // 4. Connected: the tools it may call, and a call.
    const client = new Client({ name: 'assistant', version: '1' });
    await client.connect(transportFor());
    const names = (await client.listTools()).tools.map((tool) => tool.name);
    expect(names).toContain('get_subscription_contract');
    expect(names).not.toContain('pause_subscription_contract');
    const got = toolOk(await client.callTool({ name: 'get_subscription_contract', arguments: { contractId: contract.id } }));
    expect(got.contract.id).toBe(contract.id);
    // A tool outside the grant, called anyway: a tool error saying to connect again with the permission.
    const refused = toolError(await client.callTool({ name: 'pause_subscription_contract', arguments: { contractId: contract.id } }));
    expect(refused.code).toBe('insufficient_scope');
    expect(refused.message).toContain('Connect the app again and approve contracts: write');

    // 5. An hour later the access token has expired: the SDK refreshes (rotation) and the call goes through.
    const firstTokens = provider.saved!;
    t.clock.advance(3601_000);
    const again = toolOk(await client.callTool({ name: 'get_subscription_contract', arguments: { contractId: contract.id } }));
    expect(again.contract.id).toBe(contract.id);
    expect(provider.saved!.access_token).not.toBe(firstTokens.access_token);
    expect(provider.saved!.refresh_token).not.toBe(firstTokens.refresh_token);
    await client.close();

    // 6. Settings → API lists the connection; the request log shows its requests under its name.
    const admin = bearer(await t.sessionToken(s.domain));
    const list = (await t.inject({ method: 'GET', url: '/admin/api/connections', headers: admin })).json();
    expect(list.connections).toHaveLength(1);
    expect(list.connections[0]).toMatchObject({ clientName: 'Test Assistant', permissions: { contracts: 'read', billing: 'none' }, createdAt: expect.any(String) });
    expect(list.connections[0].lastUsedAt).not.toBeNull();
    await vi.waitFor(() => expect(t.app.requestLog!.stats.recorded).toBeGreaterThan(0));
    await t.app.requestLog!.flush();
    const rows = await logRows(t, s.domain, { connectionId: list.connections[0].id });
    expect(rows.length).toBeGreaterThan(3);
    expect(rows.every((r) => r.connectionName === 'Test Assistant' && r.keyId === null && r.connectionId === list.connections[0].id)).toBe(true);
    expect(rows.map((r) => r.mcpTool)).toContain('pause_subscription_contract');
    // The whole shop's log shows them too, beside the keys' requests.
    expect((await logRows(t, s.domain)).some((r) => r.connectionName === 'Test Assistant')).toBe(true);
  });
});

describe('contract events', () => {
  it('a change made through a connection records the actor oauth with the connection id', async () => {
    const s = await t.shopWithKey();
    const [contract] = await t.seed(s.shopId, 1);
    const { tokens } = await connect(t, base, s.domain, { scope: 'contracts:write' });
    const client = new Client({ name: 'assistant', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: bearer(tokens.access_token) } }));
    toolOk(await client.callTool({ name: 'skip_next_order', arguments: { contractId: contract.id } }));
    await client.close();
    const grant = (await t.inject({ method: 'GET', url: '/admin/api/connections', headers: bearer(await t.sessionToken(s.domain)) })).json().connections[0];
    const events = (await t.inject({ method: 'GET', url: `/api/v1/subscription-contracts/${contract.id}/events`, headers: bearer(s.key) })).json().events;
    expect(events[0].actor).toEqual({ type: 'oauth', id: grant.id });
  });
});
