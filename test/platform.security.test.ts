import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { ShopifyAdmin } from '../src/platform/shopify/admin.js';
import { TokenCipher } from '../src/platform/shopify/tokenCipher.js';
import { WebhookDispatcher } from '../src/workers/webhookDispatcher.js';
import { bearer, TEST_CREDENTIALS } from './support/app.js';
import { startPlatform, type PlatformHarness } from './support/platform.js';
import { startReceiver } from './support/receiver.js';

let p: PlatformHarness;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
beforeAll(async () => {
  p = await startPlatform();
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await p?.close();
});

describe('tokens', () => {
  it('are stored encrypted and never appear in a log line', async () => {
    const s = await p.install({ contracts: 2 });
    await p.t.inject({ method: 'POST', url: `/api/v1/subscription-contracts/${s.contractIds[0]}/actions`, headers: { ...bearer(s.key), 'content-type': 'application/json' }, payload: { action: 'pause' } });
    const tokens = p.standIn.tokens.liveAccessTokens(s.domain);
    expect(tokens.length).toBeGreaterThan(0);
    const [row] = await p.t.ctx.db.withSession((run) => run<Record<string, unknown>>(`SELECT * FROM platform_installations WHERE shop_id = $1`, [s.shopId]));
    const dump = JSON.stringify(row);
    for (const token of tokens) {
      expect(dump).not.toContain(token);
      expect(p.t.logs.join('\n')).not.toContain(token);
    }
    expect(dump).not.toMatch(/shp(at|rt)_/);
  });

  it('AES-256-GCM: a sealed token opens only with its key and for its shop', () => {
    const cipher = new TokenCipher(randomBytes(32));
    const sealed = cipher.seal('shpat_secret', '42');
    expect(cipher.open(sealed, '42')).toBe('shpat_secret');
    expect(cipher.open(sealed, '43')).toBeNull();
    expect(new TokenCipher(randomBytes(32)).open(sealed, '42')).toBeNull();
    // One character changed in the middle, where every bit of a base64 character is significant (near the end, the
    // padding's unused bits can absorb a change and leave the bytes as they were).
    const i = Math.floor(sealed.length / 2);
    const tampered = sealed.slice(0, i) + (sealed[i] === 'A' ? 'B' : 'A') + sealed.slice(i + 1);
    expect(cipher.open(tampered, '42')).toBeNull();
  });

  it('platform mode needs a 32-byte TOKEN_ENCRYPTION_KEY and an https PUBLIC_URL (http on loopback only), and never prints the key', () => {
    const env = { PLATFORM: 'shopify', SHOPIFY_API_KEY: 'k', SHOPIFY_API_SECRET: 'a-secret-of-16-chars', PUBLIC_URL: 'https://svc.example.com' };
    expect(() => loadConfig(env)).toThrow(/needs TOKEN_ENCRYPTION_KEY/);
    expect(() => loadConfig({ ...env, TOKEN_ENCRYPTION_KEY: 'short-and-secret' })).toThrow(/TOKEN_ENCRYPTION_KEY=\(16 characters, not shown\) must be 32 bytes/);
    const key = randomBytes(32).toString('base64');
    expect(loadConfig({ ...env, TOKEN_ENCRYPTION_KEY: key }).platform).toMatchObject({ kind: 'shopify', shopUrlTemplate: 'https://{shop}', apiVersion: '2026-10' });
    expect(() => loadConfig({ ...env, TOKEN_ENCRYPTION_KEY: key, PUBLIC_URL: 'http://svc.example.com' })).toThrow(/must be https/);
    expect(loadConfig({ ...env, TOKEN_ENCRYPTION_KEY: key, PUBLIC_URL: 'http://127.0.0.1:3000' }).platform.kind).toBe('shopify');
  });

  it('an expiring token is refreshed before it expires, once even when two instances need it at the same moment', async () => {
    const s = await p.install({ contracts: 1 });
    const refreshes = () => p.standIn.requests.filter((r) => r.shop === s.domain && r.grantType === 'refresh_token').length;
    const before = refreshes();
    p.clock.advance(56 * 60_000); // the 1 h token now expires within svc's 5-minute margin
    const settings = {
      apiKey: TEST_CREDENTIALS.apiKey,
      apiSecret: TEST_CREDENTIALS.secret,
      apiVersion: '2026-10',
      shopUrlTemplate: p.standIn.shopUrlTemplate,
      tokenKey: (p.t.shopify!.admin as unknown as { settings: { tokenKey: Buffer } }).settings.tokenKey,
    };
    // Two instances: their own memory, one database.
    const a = new ShopifyAdmin(p.t.ctx, settings);
    const b = new ShopifyAdmin(p.t.ctx, settings);
    const shop = { id: s.shopId, domain: s.domain };
    const q = `query SvcShopName { shop { name } }`;
    const [ra, rb] = await Promise.all([a.graphql<{ shop: { name: string } }>(shop, q), b.graphql<{ shop: { name: string } }>(shop, q)]);
    expect(ra.shop.name).toBeTruthy();
    expect(rb.shop.name).toBe(ra.shop.name);
    expect(refreshes() - before).toBe(1);
    // The action path picks the refreshed token up from the database too.
    const res = await p.t.inject({ method: 'POST', url: `/api/v1/subscription-contracts/${s.contractIds[0]}/actions`, headers: { ...bearer(s.key), 'content-type': 'application/json' }, payload: { action: 'pause' } });
    expect(res.statusCode).toBe(200);
    expect(refreshes() - before).toBe(1);
  });

  it('a refresh whose answer was lost (its refresh token spent) leaves the shop reconnectable: the next visit to the app exchanges anew', async () => {
    const s = await p.install({ contracts: 1 });
    p.clock.advance(56 * 60_000);
    p.standIn.faults.add({ kind: 'error', status: 502 } as never, { shop: s.domain, endpoint: 'oauth', when: 'after', count: 1 });
    const pause = () =>
      p.t.inject({ method: 'POST', url: `/api/v1/subscription-contracts/${s.contractIds[0]}/actions`, headers: { ...bearer(s.key), 'content-type': 'application/json' }, payload: { action: 'pause' } });
    expect((await pause()).statusCode).toBe(503);
    const refused = await pause();
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.code).toBe('app_not_installed');
    await p.openAdmin(s.domain);
    expect((await pause()).statusCode).toBe(200);
  });

  it('a refresh whose commit fails keeps the rotated tokens: every instance goes on with them, the shop stays connected', async () => {
    const s = await p.install({ contracts: 1 });
    const refreshes = () => p.standIn.requests.filter((r) => r.shop === s.domain && r.grantType === 'refresh_token').length;
    const before = refreshes();
    p.clock.advance(56 * 60_000);
    // The first commit of the refreshed tokens fails (a deferred check; a lost connection would do the same).
    await p.t.ctx.db.withSession((run) =>
      run(
        `CREATE SEQUENCE test_commit_failures;
         CREATE FUNCTION test_fail_first_commit() RETURNS trigger LANGUAGE plpgsql AS $$
           BEGIN IF nextval('test_commit_failures') = 1 THEN RAISE EXCEPTION 'commit refused by a test'; END IF; RETURN NULL; END $$;
         CREATE CONSTRAINT TRIGGER test_fail_first_commit AFTER UPDATE ON platform_installations DEFERRABLE INITIALLY DEFERRED
           FOR EACH ROW WHEN (OLD.access_token IS DISTINCT FROM NEW.access_token) EXECUTE FUNCTION test_fail_first_commit();`,
        [],
        { multi: true },
      ),
    );
    const pause = () =>
      p.t.inject({ method: 'POST', url: `/api/v1/subscription-contracts/${s.contractIds[0]}/actions`, headers: { ...bearer(s.key), 'content-type': 'application/json' }, payload: { action: 'pause' } });
    try {
      expect((await pause()).statusCode).toBe(200);
    } finally {
      await p.t.ctx.db.withSession((run) =>
        run('DROP TRIGGER test_fail_first_commit ON platform_installations; DROP FUNCTION test_fail_first_commit(); DROP SEQUENCE test_commit_failures;', [], { multi: true }),
      );
    }
    expect(refreshes() - before).toBe(1);
    // Another instance (its own memory, the same database) finds the rotated tokens stored, and uses them.
    const settings = (p.t.shopify!.admin as unknown as { settings: ConstructorParameters<typeof ShopifyAdmin>[1] }).settings;
    const other = new ShopifyAdmin(p.t.ctx, settings);
    const shop = { id: s.shopId, domain: s.domain };
    expect((await other.graphql<{ shop: { name: string } }>(shop, 'query SvcShopName { shop { name } }')).shop.name).toBeTruthy();
    expect(refreshes() - before).toBe(1);
    // And when it is that instance's turn to refresh, the stored refresh token is the live one.
    p.clock.advance(56 * 60_000);
    expect((await other.graphql<{ shop: { name: string } }>(shop, 'query SvcShopName { shop { name } }')).shop.name).toBeTruthy();
    expect(refreshes() - before).toBe(2);
    const row = await p.t.shopify!.installer.installation(s.shopId);
    expect(row?.accessToken).not.toBeNull();
  });

  it('a token the platform refuses (401) is refreshed and the change made, once', async () => {
    const s = await p.install({ contracts: 1 });
    p.standIn.faults.add({ kind: 'error', status: 401, body: { errors: '[API] Invalid API key or access token (unrecognized login or wrong password)' } } as never, { shop: s.domain, endpoint: 'graphql', count: 1 });
    const res = await p.t.inject({ method: 'POST', url: `/api/v1/subscription-contracts/${s.contractIds[0]}/actions`, headers: { ...bearer(s.key), 'content-type': 'application/json' }, payload: { action: 'pause' } });
    expect(res.statusCode).toBe(200);
    expect(p.standIn.calls('subscriptionContractPause', s.domain)).toHaveLength(1);
    expect(p.standIn.contract(s.domain, s.contractIds[0]).status).toBe('PAUSED');
  });
});

describe('changes learnt from the platform reach the merchant’s webhooks', () => {
  it('a pause made in the shop admin is delivered as contract.paused with actor platform, signed', async () => {
    const s = await p.install({ contracts: 1 });
    const created = await p.t.inject({
      method: 'POST',
      url: '/api/v1/webhook-endpoints',
      headers: { ...bearer(s.key), 'content-type': 'application/json' },
      payload: { url: `${receiver.url}/platform-hook`, events: ['*'] },
    });
    expect(created.statusCode).toBe(201);
    p.standIn.platform.pause(s.domain, s.contractIds[0]);
    await p.settle();
    await new WebhookDispatcher(p.t.ctx).tick();
    const got = receiver.received.filter((r) => r.path === '/platform-hook');
    expect(got).toHaveLength(1);
    const payload = new Webhook(created.json().secret).verify(got[0].body, got[0].headers as Record<string, string>) as { type: string; data: { event: { actor: { type: string } }; contract: { status: string } } };
    expect(payload.type).toBe('contract.paused');
    expect(payload.data.event.actor.type).toBe('platform');
    expect(payload.data.contract.status).toBe('PAUSED');
  });
});
