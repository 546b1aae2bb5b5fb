import { createHash, randomBytes } from 'node:crypto';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { expect } from 'vitest';
import type { Permissions } from '../../src/domain/permissions.js';
import { bearer, type TestApp } from './app.js';

/** An OAuth client as the MCP SDK drives it: everything kept in memory, the authorization URL captured. */
export class TestOAuthProvider implements OAuthClientProvider {
  client?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier?: string;
  authorizationUrl?: URL;
  readonly sentState = randomBytes(8).toString('hex');
  constructor(
    readonly redirect = 'http://127.0.0.1:9/callback',
    readonly name = 'Test Assistant',
  ) {}
  get redirectUrl() {
    return this.redirect;
  }
  get clientMetadata(): OAuthClientMetadata {
    return { client_name: this.name, redirect_uris: [this.redirect], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' };
  }
  state() {
    return this.sentState;
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.client = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier!;
  }
}

/** A PKCE pair (S256). */
export function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/**
 * What a browser does with an authorize URL: GET it (no redirect followed), expect the consent page, and return the
 * parameters the consent page reads.
 */
export async function openAuthorizeUrl(url: string | URL): Promise<Record<string, string>> {
  const res = await fetch(url, { redirect: 'manual' });
  expect(res.status, await res.clone().text()).toBe(302);
  const consent = new URL(res.headers.get('location')!);
  expect(consent.pathname).toBe('/admin/oauth/consent');
  return Object.fromEntries(consent.searchParams);
}

/** The merchant's decision on the consent page, through the admin API with their session token: where to go next. */
export async function decide(t: TestApp, domain: string, request: Record<string, string>, opts: { approve?: boolean; permissions?: Permissions } = {}) {
  const res = await t.inject({
    method: 'POST',
    url: '/admin/api/oauth/authorization',
    // As the browser sends it: to the server's own origin (the resource the request names is on it).
    headers: { ...bearer(await t.sessionToken(domain)), host: new URL(request.resource).host },
    payload: { request, approve: opts.approve ?? true, ...(opts.permissions && { permissions: opts.permissions }) },
  });
  return res;
}

/** Registers a client over HTTP (RFC 7591): its client_id. */
export async function register(base: string, redirectUris = ['http://127.0.0.1:9/callback'], name = 'Test Assistant'): Promise<string> {
  const res = await fetch(`${base}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: name, redirect_uris: redirectUris, token_endpoint_auth_method: 'none' }),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { client_id: string }).client_id;
}

/** POST /oauth/token with a form. */
export async function token(base: string, form: Record<string, string>): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form).toString() });
  return { status: res.status, body: await res.json() };
}

/**
 * The whole flow by hand for one shop: register, authorize (with `scope`), approve, exchange. Returns the tokens,
 * the client id, the code and the verifier.
 */
export async function connect(t: TestApp, base: string, domain: string, opts: { scope?: string; permissions?: Permissions; redirect?: string } = {}) {
  const redirect = opts.redirect ?? 'http://127.0.0.1:9/callback';
  const clientId = await register(base, [redirect]);
  const { verifier, challenge } = pkce();
  const q = new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: redirect, code_challenge: challenge, code_challenge_method: 'S256', state: 'st', resource: `${base}/mcp` });
  if (opts.scope) q.set('scope', opts.scope);
  const request = await openAuthorizeUrl(`${base}/oauth/authorize?${q}`);
  const approved = await decide(t, domain, request, { permissions: opts.permissions });
  expect(approved.statusCode, approved.body).toBe(200);
  const code = new URL(approved.json().redirectTo).searchParams.get('code')!;
  const tokens = await token(base, { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: clientId, redirect_uri: redirect, resource: `${base}/mcp` });
  expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
  return { clientId, code, verifier, redirect, tokens: tokens.body as { access_token: string; refresh_token: string; scope: string; expires_in: number } };
}
