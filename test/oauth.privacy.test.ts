import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkAuthorizationRequest, approveAuthorization } from '../src/services/oauth/authorize.js';
import { registerClient } from '../src/services/oauth/clients.js';
import { exchangeCode } from '../src/services/oauth/tokens.js';
import { bearer } from './support/app.js';
import { pkce } from './support/oauth.js';
import { startPlatform, type InstalledShop, type PlatformHarness } from './support/platform.js';

/** A shop's OAuth connections end with the app: an uninstall and a shop redaction delete its grants, codes and tokens. */

let p: PlatformHarness;
beforeAll(async () => {
  p = await startPlatform({ timeoutMs: 1500 });
});
afterAll(() => p?.close());

const count = async (sql: string, params: unknown[]) => (await p.t.ctx.db.withSession((run) => run<{ n: number }>(sql, params)))[0].n;
const oauthRows = async (s: InstalledShop) => ({
  grants: await count(`SELECT count(*)::int AS n FROM oauth_grants WHERE shop_id = $1`, [s.shopId]),
  codes: await count(`SELECT count(*)::int AS n FROM oauth_codes WHERE shop_id = $1`, [s.shopId]),
  tokens: await count(`SELECT count(*)::int AS n FROM oauth_tokens WHERE shop_id = $1`, [s.shopId]),
});

/** A connection of the shop, made through the services: its access token. */
async function connectApp(s: InstalledShop): Promise<string> {
  const ctx = p.t.ctx;
  const redirect = 'http://127.0.0.1:9/cb';
  const { client_id } = (await registerClient(ctx, { client_name: 'Assistant', redirect_uris: [redirect] })) as { client_id: string };
  const { verifier, challenge } = pkce();
  const request = await checkAuthorizationRequest(ctx, { response_type: 'code', client_id, code_challenge: challenge, code_challenge_method: 'S256' }, `${p.base}/mcp`, p.base);
  const { redirectTo } = await approveAuthorization(ctx, { shopId: s.shopId, request, approved: request.asked, issuer: p.base });
  // A second approval whose code is never exchanged: its code must go too.
  await approveAuthorization(ctx, { shopId: s.shopId, request, approved: request.asked, issuer: p.base });
  const tokens = await exchangeCode(ctx, { code: new URL(redirectTo).searchParams.get('code')!, code_verifier: verifier, client_id });
  return tokens.access_token;
}

const mcpStatus = async (token: string) =>
  (
    await fetch(`${p.base}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', ...bearer(token) },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    })
  ).status;

describe('a shop’s OAuth connections', () => {
  it('end when the app is uninstalled: grants, codes and tokens deleted', async () => {
    const s = await p.install({ contracts: 1 });
    const token = await connectApp(s);
    expect(await mcpStatus(token)).toBe(200);
    expect(await oauthRows(s)).toEqual({ grants: 2, codes: 2, tokens: 2 });
    p.standIn.uninstall(s.domain);
    await p.settle();
    expect(await oauthRows(s)).toEqual({ grants: 0, codes: 0, tokens: 0 });
    expect(await mcpStatus(token)).toBe(401);
  });

  it('are deleted by shop/redact with every other row of the shop', async () => {
    const s = await p.install({ contracts: 1 });
    await connectApp(s);
    // The uninstall's own webhook never arrives: the redaction alone must delete them.
    p.standIn.webhooks.fault({ mode: 'drop' }, { shop: s.domain, topic: 'app/uninstalled' });
    p.standIn.uninstall(s.domain);
    await p.settle();
    expect((await oauthRows(s)).grants).toBe(2);
    p.standIn.sendCompliance(s.domain, 'shop/redact');
    await p.settle();
    expect(await oauthRows(s)).toEqual({ grants: 0, codes: 0, tokens: 0 });
    expect(await count(`SELECT count(*)::int AS n FROM shops WHERE id = $1`, [s.shopId])).toBe(0);
  });
});
