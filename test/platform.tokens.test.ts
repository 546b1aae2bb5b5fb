import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ShopifyAdmin } from '../src/platform/shopify/admin.js';
import { startPlatform, type PlatformHarness } from './support/platform.js';

/**
 * A shop's token refresh under a lease (platform/shopify/tokens.ts): no transaction is open while the platform
 * answers, two instances refreshing at once make one call to the platform, and a refresher that died holding the lease
 * is taken over once its lease lapses.
 */

let p: PlatformHarness;
beforeAll(async () => {
  p = await startPlatform();
});
afterAll(() => p?.close());

/** Another instance: its own memory (no token cached), the same database and settings. */
const instance = () => new ShopifyAdmin(p.t.ctx, (p.t.shopify!.admin as unknown as { settings: ConstructorParameters<typeof ShopifyAdmin>[1] }).settings);

async function expiringShop() {
  const s = await p.install({ contracts: 1 });
  const refreshes = () => p.standIn.requests.filter((r) => r.shop === s.domain && r.grantType === 'refresh_token').length;
  const before = refreshes();
  p.clock.advance(56 * 60_000); // the 1 h token now expires within svc's 5-minute margin
  return { ...s, shop: { id: s.shopId, domain: s.domain }, refreshed: () => refreshes() - before };
}

const lease = (shopId: string) =>
  p.t.ctx.db.withSession((run) =>
    run<{ lease: string | null; until: Date | null }>(`SELECT refresh_lease::text AS lease, refresh_lease_until AS until FROM platform_installations WHERE shop_id = $1`, [shopId]),
  );

describe('token refresh under a lease', () => {
  it('two instances refreshing at once: one call to the platform, both get the new token, and the lease is given back', async () => {
    const s = await expiringShop();
    const [a, b] = [instance(), instance()];
    const [ta, tb] = await Promise.all([a.accessToken(s.shopId), b.accessToken(s.shopId)]);
    expect(s.refreshed()).toBe(1);
    expect(tb).toBe(ta);
    expect(p.standIn.tokens.liveAccessTokens(s.domain)).toContain(ta);
    expect(await lease(s.shopId)).toEqual([{ lease: null, until: null }]);
  });

  it('holds no transaction while the platform answers: the installation row can be locked meanwhile', async () => {
    const s = await expiringShop();
    p.standIn.faults.add({ kind: 'latency', ms: 1500 }, { shop: s.domain, endpoint: 'oauth' });
    let refreshDone = false;
    const refreshing = instance()
      .accessToken(s.shopId)
      .finally(() => (refreshDone = true));
    // Until the lease is taken the refresh has not called the platform yet.
    while (!(await lease(s.shopId))[0].lease) await new Promise((r) => setTimeout(r, 20));
    const locked = await p.t.ctx.db.transaction((run) => run(`SELECT shop_id FROM platform_installations WHERE shop_id = $1 FOR UPDATE NOWAIT`, [s.shopId]));
    expect(locked).toHaveLength(1);
    expect(refreshDone).toBe(false);
    await refreshing;
    expect(s.refreshed()).toBe(1);
  });

  it('a refresher that died holding the lease is taken over once the lease lapses, with one call to the platform', async () => {
    const s = await expiringShop();
    // A lease left by a process that is gone, for a minute more.
    await p.t.ctx.db.withSession((run) =>
      run(`UPDATE platform_installations SET refresh_lease = $2, refresh_lease_until = $3 WHERE shop_id = $1`, [s.shopId, randomUUID(), new Date(p.clock.now().getTime() + 60_000)]),
    );
    let done = false;
    const waiting = instance()
      .accessToken(s.shopId)
      .finally(() => (done = true));
    await new Promise((r) => setTimeout(r, 300));
    expect(done).toBe(false);
    expect(s.refreshed()).toBe(0);
    p.clock.advance(61_000);
    const token = await waiting;
    expect(s.refreshed()).toBe(1);
    expect(p.standIn.tokens.liveAccessTokens(s.domain)).toContain(token);
    expect(await lease(s.shopId)).toEqual([{ lease: null, until: null }]);
    // Every other instance now reads the new token, and refreshes nothing.
    expect(await instance().accessToken(s.shopId)).toBe(token);
    expect(s.refreshed()).toBe(1);
  });
});
