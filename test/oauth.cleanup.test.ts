import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeExpiredOAuth } from '../src/services/oauth/purge.js';
import { startTestApp, type TestApp } from './support/app.js';
import { sql } from './support/fixtures.js';
import { listen } from './support/mcp.js';
import { connect, register, token } from './support/oauth.js';

/** What OAuth no longer needs goes (services/oauth/purge.ts); what a live connection needs stays. */

let t: TestApp;
let base: string;
beforeAll(async () => {
  t = await startTestApp();
  base = await listen(t);
});
afterAll(() => t?.close());

const HOUR = 3600_000;
const DAY = 24 * HOUR;
const count = async (table: string, shopId: string) => (await sql<{ n: number }>(t, `SELECT count(*)::int AS n FROM ${table} WHERE shop_id = $1`, [shopId]))[0].n;

describe('the OAuth cleanup', () => {
  it('keeps a live connection, drops expired tokens, and ends a connection whose tokens all expired', async () => {
    const s = await t.shopWithKey();
    const c = await connect(t, base, s.domain);
    await purgeExpiredOAuth(t.ctx);
    expect(await count('oauth_tokens', s.shopId)).toBe(2);
    expect(await count('oauth_grants', s.shopId)).toBe(1);

    // Two hours on: the access token is gone, the refresh token and the connection stay, and a refresh works.
    t.clock.advance(2 * HOUR);
    await purgeExpiredOAuth(t.ctx);
    expect(await count('oauth_tokens', s.shopId)).toBe(1);
    const refreshed = await token(base, { grant_type: 'refresh_token', refresh_token: c.tokens.refresh_token, client_id: c.clientId });
    expect(refreshed.status).toBe(200);

    // 31 days without a refresh: every token has expired, the app can no longer act; the connection goes.
    t.clock.advance(31 * DAY);
    await purgeExpiredOAuth(t.ctx);
    expect(await count('oauth_tokens', s.shopId)).toBe(0);
    expect(await count('oauth_codes', s.shopId)).toBe(0);
    expect(await count('oauth_grants', s.shopId)).toBe(0);
  });

  it('keeps an ended connection 14 days (its requests show its name), then deletes it; forgets clients never used', async () => {
    const s = await t.shopWithKey();
    const c = await connect(t, base, s.domain);
    const unused = await register(base);
    const replay = await token(base, { grant_type: 'authorization_code', code: c.code, code_verifier: c.verifier, client_id: c.clientId });
    expect(replay.body.error).toBe('invalid_grant');
    t.clock.advance(13 * DAY);
    await purgeExpiredOAuth(t.ctx);
    expect(await count('oauth_grants', s.shopId)).toBe(1);
    t.clock.advance(2 * DAY);
    await purgeExpiredOAuth(t.ctx);
    expect(await count('oauth_grants', s.shopId)).toBe(0);
    t.clock.advance(16 * DAY);
    await purgeExpiredOAuth(t.ctx);
    expect(await sql(t, `SELECT id FROM oauth_clients WHERE id = ANY($1)`, [[unused, c.clientId]])).toEqual([]);
  });
});
