import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryRateLimitStore } from '../src/http/rateLimitStore.js';
import { OAUTH_REQUESTS_PER_MINUTE } from '../src/http/oauth/routes.js';
import { bearer, startTestApp, TestClock, type TestApp } from './support/app.js';
import { listen } from './support/mcp.js';
import { connect } from './support/oauth.js';

/**
 * Rate limits hold for OAuth as for keys: a connection's calls spend its shop's budget, an unknown token is a failed
 * lookup of its address, and open registration has a budget per address.
 */

const PER_SHOP = 5;
const FAILURES = 3;
let t: TestApp;
let base: string;
beforeAll(async () => {
  const clock = new TestClock();
  t = await startTestApp({ clock, appDeps: { rateLimit: { perMinute: PER_SHOP, authFailuresPerMinute: FAILURES, store: new MemoryRateLimitStore(clock) } } });
  base = await listen(t);
});
afterAll(async () => {
  // Responses read only for their status leave their connections busy for the client; on Node 22 the server's close
  // then waits for them, so they are closed here.
  t?.app.server.closeAllConnections();
  await t?.close();
});

const list = (token: string) =>
  fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', ...bearer(token) },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
  });

describe('OAuth under rate limits', () => {
  it('a connection spends its shop\'s budget, shared with the shop\'s keys', async () => {
    const s = await t.shopWithKey();
    const c = await connect(t, base, s.domain);
    const statuses: number[] = [];
    for (let i = 0; i < PER_SHOP; i++) statuses.push((await list(c.tokens.access_token)).status);
    expect(statuses).toEqual(Array(PER_SHOP).fill(200));
    const over = await list(c.tokens.access_token);
    expect(over.status).toBe(429);
    expect((await t.inject({ url: '/api/v1/subscription-contracts', headers: bearer(s.key) })).statusCode).toBe(429);
    t.clock.advance(60_000);
  });

  it('unknown tokens use up the address\'s failed lookups; then even a valid token is refused 429 until the window ends', async () => {
    const s = await t.shopWithKey();
    const c = await connect(t, base, s.domain);
    const forged = `svc_oat_${'A'.repeat(43)}`;
    for (let i = 0; i < FAILURES; i++) expect((await list(forged)).status).toBe(401);
    expect((await list(forged)).status).toBe(429);
    t.clock.advance(60_000);
    expect((await list(c.tokens.access_token)).status).toBe(200);
    t.clock.advance(60_000);
  });

  it('registration has a budget per address', async () => {
    const register = () =>
      fetch(`${base}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name: 'x', redirect_uris: ['http://127.0.0.1:9/cb'] }) });
    let last: Response | null = null;
    for (let i = 0; i <= OAUTH_REQUESTS_PER_MINUTE; i++) last = await register();
    expect(last!.status).toBe(429);
    expect(last!.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await last!.json()).toMatchObject({ error: 'temporarily_unavailable' });
    t.clock.advance(60_000);
    expect((await register()).status).toBe(201);
  });
});
