import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokenDigest } from '../src/domain/oauth.js';
import { setShopPlan } from '../src/services/shops.js';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { sql } from './support/fixtures.js';
import { listen } from './support/mcp.js';
import { connect, decide, openAuthorizeUrl, pkce, register, token } from './support/oauth.js';

/**
 * OAuth for /mcp against each attack it must withstand (docs/mcp-assistants.md): a wrong PKCE verifier, a replayed
 * code, a redirect URI not registered, a token for another resource, a reused refresh token, a disconnected grant,
 * another shop's grant, an OAuth token on the API, an approval without the admin session token, a shop without
 * the Enterprise plan.
 */

let t: TestApp;
let base: string;
beforeAll(async () => {
  t = await startTestApp();
  base = await listen(t);
});
afterAll(() => t?.close());

const REDIRECT = 'http://127.0.0.1:9/callback';
const list = (tool = 'tools/list') => ({ jsonrpc: '2.0', id: 1, method: tool, params: {} });
/** A raw MCP call with a bearer token, at `origin` (this server's unless said). */
const mcp = (accessToken: string, origin = base) =>
  fetch(`${origin}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...bearer(accessToken) },
    body: JSON.stringify(list()),
  });
const authorizeUrl = (clientId: string, over: Record<string, string | null> = {}) => {
  const { challenge } = pkce();
  const q = new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', state: 'xyz', resource: `${base}/mcp` });
  for (const [k, v] of Object.entries(over)) if (v === null) q.delete(k);
  else q.set(k, v);
  return `${base}/oauth/authorize?${q}`;
};
const admin = async (domain: string) => bearer(await t.sessionToken(domain));

describe('the code', () => {
  it('a wrong PKCE verifier gets invalid_grant, and uses the code up', async () => {
    const s = await t.shopWithKey();
    const clientId = await register(base);
    const { verifier, challenge } = pkce();
    const request = await openAuthorizeUrl(authorizeUrl(clientId, { code_challenge: challenge }));
    const code = new URL((await decide(t, s.domain, request)).json().redirectTo).searchParams.get('code')!;
    const wrong = await token(base, { grant_type: 'authorization_code', code, code_verifier: pkce().verifier, client_id: clientId, redirect_uri: REDIRECT });
    expect(wrong).toEqual({ status: 400, body: { error: 'invalid_grant', error_description: expect.stringContaining('code_verifier') } });
    const right = await token(base, { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: clientId, redirect_uri: REDIRECT });
    expect(right.body.error).toBe('invalid_grant');
  });

  it('a replayed code gets invalid_grant and revokes the tokens issued from it', async () => {
    const s = await t.shopWithKey();
    const c = await connect(t, base, s.domain);
    expect((await mcp(c.tokens.access_token)).status).toBe(200);
    const replay = await token(base, { grant_type: 'authorization_code', code: c.code, code_verifier: c.verifier, client_id: c.clientId, redirect_uri: c.redirect });
    expect(replay.status).toBe(400);
    expect(replay.body.error).toBe('invalid_grant');
    const after = await mcp(c.tokens.access_token);
    expect(after.status).toBe(401);
    expect(after.headers.get('www-authenticate')).toMatch(/^Bearer error="invalid_token", resource_metadata="/);
    expect((await token(base, { grant_type: 'refresh_token', refresh_token: c.tokens.refresh_token, client_id: c.clientId })).body.error).toBe('invalid_grant');
  });

  it('a code is good for 10 minutes, for the client it was issued to', async () => {
    const s = await t.shopWithKey();
    const clientId = await register(base);
    const other = await register(base);
    const { verifier, challenge } = pkce();
    const issue = async () => new URL((await decide(t, s.domain, await openAuthorizeUrl(authorizeUrl(clientId, { code_challenge: challenge })))).json().redirectTo).searchParams.get('code')!;
    const code = await issue();
    expect((await token(base, { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: other })).body.error).toBe('invalid_grant');
    const late = await issue();
    t.clock.advance(10 * 60_000 + 1);
    expect((await token(base, { grant_type: 'authorization_code', code: late, code_verifier: verifier, client_id: clientId })).body).toMatchObject({ error: 'invalid_grant', error_description: expect.stringContaining('expired') });
  });

  it('PKCE is required, with S256 only: the browser goes back to the client with invalid_request', async () => {
    const clientId = await register(base);
    for (const over of [{ code_challenge_method: 'plain' }, { code_challenge: null }, { code_challenge_method: null }] as Record<string, string | null>[]) {
      const res = await fetch(authorizeUrl(clientId, over), { redirect: 'manual' });
      expect(res.status).toBe(302);
      const back = new URL(res.headers.get('location')!);
      expect(`${back.origin}${back.pathname}`).toBe(REDIRECT);
      expect(back.searchParams.get('error')).toBe('invalid_request');
      expect(back.searchParams.get('state')).toBe('xyz');
    }
  });

  it('codes and tokens are stored only as their SHA-256 digests', async () => {
    const s = await t.shopWithKey();
    const c = await connect(t, base, s.domain);
    const tokens = await sql<{ digest: string }>(t, `SELECT t.digest FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id WHERE g.shop_id = $1`, [s.shopId]);
    expect(tokens.map((r) => r.digest).sort()).toEqual([tokenDigest(c.tokens.access_token), tokenDigest(c.tokens.refresh_token)].sort());
    const codes = await sql<{ digest: string }>(t, `SELECT digest FROM oauth_codes WHERE shop_id = $1`, [s.shopId]);
    expect(codes.map((r) => r.digest)).toEqual([tokenDigest(c.code)]);
    const dump = JSON.stringify(await sql(t, `SELECT * FROM oauth_grants g JOIN oauth_tokens t ON t.grant_id = g.id WHERE g.shop_id = $1`, [s.shopId]));
    for (const secret of [c.tokens.access_token, c.tokens.refresh_token, c.code]) expect(dump).not.toContain(secret);
  });
});

describe('the redirect URI', () => {
  it('one the client did not register is shown as an error, never redirected to', async () => {
    const clientId = await register(base);
    for (const uri of ['https://evil.example/callback', 'http://127.0.0.1:9/other', 'http://127.0.0.2:9/callback']) {
      const res = await fetch(authorizeUrl(clientId, { redirect_uri: uri }), { redirect: 'manual' });
      expect(res.status).toBe(400);
      expect(res.headers.get('location')).toBeNull();
      expect(res.headers.get('content-type')).toMatch(/text\/html/);
      expect(await res.text()).toContain('not one the app registered');
    }
    const unknown = await fetch(authorizeUrl('svc_client_nobody'), { redirect: 'manual' });
    expect(unknown.status).toBe(400);
    expect(unknown.headers.get('location')).toBeNull();
  });

  it('a loopback redirect matches on any port (RFC 8252), and the code is bound to the URI used', async () => {
    const s = await t.shopWithKey();
    const clientId = await register(base);
    const { verifier, challenge } = pkce();
    const used = 'http://127.0.0.1:53123/callback';
    const request = await openAuthorizeUrl(authorizeUrl(clientId, { redirect_uri: used, code_challenge: challenge }));
    const back = new URL((await decide(t, s.domain, request)).json().redirectTo);
    expect(back.port).toBe('53123');
    const code = back.searchParams.get('code')!;
    expect((await token(base, { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: clientId, redirect_uri: REDIRECT })).body.error).toBe('invalid_grant');
  });

  it('registration refuses redirect URIs a code could leak through, and confidential clients', async () => {
    const post = (body: object) => fetch(`${base}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    for (const uri of ['javascript:alert(1)', 'http://example.com/cb', 'https://example.com/cb#frag', 'data:text/html,x']) {
      const res = await post({ client_name: 'x', redirect_uris: [uri] });
      expect(res.status).toBe(400);
      expect((await res.json()).error).toBe('invalid_redirect_uri');
    }
    const secretClient = await post({ client_name: 'x', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'client_secret_basic' });
    expect((await secretClient.json()).error).toBe('invalid_client_metadata');
  });
});

describe('the resource', () => {
  it('an authorization request for another resource is refused with invalid_target', async () => {
    const clientId = await register(base);
    const res = await fetch(authorizeUrl(clientId, { resource: 'https://other.example/mcp' }), { redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(new URL(res.headers.get('location')!).searchParams.get('error')).toBe('invalid_target');
  });

  it('a token issued for this server at one origin is refused at another (the resource is checked on every call)', async () => {
    const s = await t.shopWithKey();
    const c = await connect(t, base, s.domain);
    expect((await mcp(c.tokens.access_token)).status).toBe(200);
    const elsewhere = base.replace('127.0.0.1', 'localhost');
    const res = await mcp(c.tokens.access_token, elsewhere);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain(`resource_metadata="${elsewhere}/.well-known/oauth-protected-resource/mcp"`);
  });
});

describe('the refresh token', () => {
  it('rotates; a reused one revokes the whole grant', async () => {
    const s = await t.shopWithKey();
    const c = await connect(t, base, s.domain);
    const first = await token(base, { grant_type: 'refresh_token', refresh_token: c.tokens.refresh_token, client_id: c.clientId });
    expect(first.status).toBe(200);
    expect(first.body.refresh_token).not.toBe(c.tokens.refresh_token);
    expect((await mcp(first.body.access_token)).status).toBe(200);
    // The old refresh token again (a thief's copy, or the client's): the grant ends, every token of it.
    const reused = await token(base, { grant_type: 'refresh_token', refresh_token: c.tokens.refresh_token, client_id: c.clientId });
    expect(reused.body.error).toBe('invalid_grant');
    expect((await mcp(first.body.access_token)).status).toBe(401);
    expect((await mcp(c.tokens.access_token)).status).toBe(401);
    expect((await token(base, { grant_type: 'refresh_token', refresh_token: first.body.refresh_token, client_id: c.clientId })).body.error).toBe('invalid_grant');
    const [grant] = await sql<{ revoked_reason: string }>(t, `SELECT revoked_reason FROM oauth_grants WHERE shop_id = $1`, [s.shopId]);
    expect(grant.revoked_reason).toBe('refresh_reused');
    expect((await t.inject({ url: '/admin/api/connections', headers: await admin(s.domain) })).json().connections).toEqual([]);
  });

  it('cannot widen the grant, and an access token is no refresh token', async () => {
    const s = await t.shopWithKey();
    const c = await connect(t, base, s.domain, { scope: 'contracts:read' });
    expect((await token(base, { grant_type: 'refresh_token', refresh_token: c.tokens.refresh_token, client_id: c.clientId, scope: 'contracts:write' })).body.error).toBe('invalid_scope');
    expect((await token(base, { grant_type: 'refresh_token', refresh_token: c.tokens.access_token, client_id: c.clientId })).body.error).toBe('invalid_grant');
  });
});

describe('the grant', () => {
  it('disconnecting it refuses its very next request', async () => {
    const s = await t.shopWithKey();
    const c = await connect(t, base, s.domain);
    expect((await mcp(c.tokens.access_token)).status).toBe(200);
    const [conn] = (await t.inject({ url: '/admin/api/connections', headers: await admin(s.domain) })).json().connections;
    const res = await t.inject({ method: 'POST', url: `/admin/api/connections/${conn.id}/disconnect`, headers: await admin(s.domain) });
    expect(res.json()).toEqual({ disconnected: true });
    const refused = await mcp(c.tokens.access_token);
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toMatch(/^Bearer error="invalid_token", resource_metadata="/);
    expect((await refused.json()).error.code).toBe('unauthorized');
    expect((await token(base, { grant_type: 'refresh_token', refresh_token: c.tokens.refresh_token, client_id: c.clientId })).body.error).toBe('invalid_grant');
  });

  it('belongs to one shop: another shop can neither see nor disconnect it, and its token reads only its shop', async () => {
    const a = await t.shopWithKey();
    const b = await t.shopWithKey();
    const [theirs] = await t.seed(b.shopId, 1);
    const c = await connect(t, base, a.domain);
    const [conn] = (await t.inject({ url: '/admin/api/connections', headers: await admin(a.domain) })).json().connections;
    expect((await t.inject({ url: '/admin/api/connections', headers: await admin(b.domain) })).json().connections).toEqual([]);
    const res = await t.inject({ method: 'POST', url: `/admin/api/connections/${conn.id}/disconnect`, headers: await admin(b.domain) });
    expect(res.statusCode).toBe(404);
    expect((await mcp(c.tokens.access_token)).status).toBe(200);
    const call = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', ...bearer(c.tokens.access_token) },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_subscription_contract', arguments: { contractId: theirs.id } } }),
    });
    const result = (await call.json()).result;
    expect(result.isError).toBe(true);
    expect(JSON.parse(result.content[0].text).error.code).toBe('not_found');
  });

  it('an OAuth token is refused on the API (401), which only keys open', async () => {
    const s = await t.shopWithKey();
    const c = await connect(t, base, s.domain);
    const res = await t.inject({ url: '/api/v1/subscription-contracts', headers: bearer(c.tokens.access_token) });
    expect(res.statusCode).toBe(401);
    expect(res.json().error).toMatchObject({ code: 'unauthorized', message: expect.stringContaining('/mcp only') });
  });

  it('scopes svc does not know are ignored; none known asks for everything', async () => {
    const s = await t.shopWithKey();
    const clientId = await register(base);
    const shown = async (scope: string) => {
      const request = await openAuthorizeUrl(authorizeUrl(clientId, { scope }));
      return (await t.inject({ url: `/admin/api/oauth/authorization?${new URLSearchParams(request)}`, headers: { ...(await admin(s.domain)), host: new URL(base).host } })).json();
    };
    expect((await shown('openid contracts:read offline_access')).asked).toEqual({ contracts: 'read', billing: 'none', webhooks: 'none', bulk_jobs: 'none' });
    expect((await shown('openid')).scope).toBe('contracts:read contracts:write billing:read billing:write webhooks:read webhooks:write bulk_jobs:read bulk_jobs:write');
  });

  it('the merchant narrows what was asked, and can never widen it', async () => {
    const s = await t.shopWithKey();
    const c = await connect(t, base, s.domain, { scope: 'contracts:write billing:read', permissions: { contracts: 'read', billing: 'write', webhooks: 'write', bulk_jobs: 'write' } });
    expect(c.tokens.scope).toBe('contracts:read billing:read');
    const [conn] = (await t.inject({ url: '/admin/api/connections', headers: await admin(s.domain) })).json().connections;
    expect(conn.permissions).toEqual({ contracts: 'read', billing: 'read', webhooks: 'none', bulk_jobs: 'none' });
  });
});

describe('consent', () => {
  it('cannot be given without the admin session token (a cross-site form or fetch carries cookies, not it)', async () => {
    const s = await t.shopWithKey();
    const clientId = await register(base);
    const request = await openAuthorizeUrl(authorizeUrl(clientId));
    for (const headers of [{}, { cookie: 'session=anything' }, { origin: 'https://evil.example', cookie: 'x=y' }] as Record<string, string>[]) {
      const res = await fetch(`${base}/admin/api/oauth/authorization`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ request, approve: true }) });
      expect(res.status).toBe(401);
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
    }
    // A form post (what a page of another site can make a browser send without a preflight) is not even read.
    const form = await fetch(`${base}/admin/api/oauth/authorization`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'approve=true' });
    expect(form.status).toBe(401);
    const preflight = await fetch(`${base}/admin/api/oauth/authorization`, { method: 'OPTIONS', headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization' } });
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    expect(await sql(t, `SELECT 1 FROM oauth_grants WHERE shop_id = $1`, [s.shopId])).toEqual([]);
  });

  it('needs the Enterprise plan, as a key does; a connection of a shop that left it answers 403 plan_required', async () => {
    const s = await t.shopWithKey('basic');
    const clientId = await register(base);
    const res = await decide(t, s.domain, await openAuthorizeUrl(authorizeUrl(clientId)));
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe('plan_required');

    const e = await t.shopWithKey();
    const c = await connect(t, base, e.domain);
    const [contract] = await t.seed(e.shopId, 1);
    expect((await mcp(c.tokens.access_token)).status).toBe(200);
    await setShopPlan({ ctx: t.ctx, input: { domain: e.domain, plan: 'basic' } });
    // A tool call whose first step reads a contract reads the connection's state with it: refused all the same.
    const call = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', ...bearer(c.tokens.access_token) },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_subscription_contract', arguments: { contractId: contract.id } } }),
    });
    expect(call.status).toBe(403);
    expect((await call.json()).error.code).toBe('plan_required');
    const refused = await mcp(c.tokens.access_token);
    expect(refused.status).toBe(403);
    expect((await refused.json()).error.code).toBe('plan_required');
  });

  it('declining sends the browser back with access_denied and creates nothing', async () => {
    const s = await t.shopWithKey();
    const clientId = await register(base);
    const res = await decide(t, s.domain, await openAuthorizeUrl(authorizeUrl(clientId)), { approve: false });
    const back = new URL(res.json().redirectTo);
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect(back.searchParams.get('state')).toBe('xyz');
    expect(await sql(t, `SELECT 1 FROM oauth_grants WHERE shop_id = $1`, [s.shopId])).toEqual([]);
  });
});

describe('client ID metadata documents', () => {
  let server: Server;
  let docBase: string;
  const docs = new Map<string, object>();
  beforeAll(async () => {
    server = createServer((req, res) => {
      const doc = docs.get(req.url!);
      res.writeHead(doc ? 200 : 404, { 'content-type': 'application/json' }).end(JSON.stringify(doc ?? {}));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    docBase = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('a client_id that is its document\'s URL is read from there; a document naming another id is no client', async () => {
    const s = await t.shopWithKey();
    const id = `${docBase}/client.json`;
    docs.set('/client.json', { client_id: id, client_name: 'Document Assistant', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' });
    const request = await openAuthorizeUrl(authorizeUrl(id));
    const shown = await t.inject({ url: `/admin/api/oauth/authorization?${new URLSearchParams(request)}`, headers: { ...(await admin(s.domain)), host: new URL(base).host } });
    expect(shown.json().client).toEqual({ id, name: 'Document Assistant', kind: 'metadata_document' });

    docs.set('/liar.json', { client_id: 'https://someone-else.example/client.json', client_name: 'Liar', redirect_uris: [REDIRECT] });
    const liar = await fetch(authorizeUrl(`${docBase}/liar.json`), { redirect: 'manual' });
    expect(liar.status).toBe(400);
    expect(liar.headers.get('location')).toBeNull();
  });
});
