import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { createLogger } from '../../src/http/logging.js';
import { generateKey } from '../../src/services/generateKey.js';
import { signSessionToken } from '../../src/services/sessionTokens.js';
import { setShopPlan } from '../../src/services/shops.js';
import { TEST_CREDENTIALS, uniqueShop } from '../support/app.js';
import { describeInBrowser, ensureAdminUiBuilt, launch, openTab, screenshot, serve, type Served } from './browser.js';

describeInBrowser('admin UI: session tokens in a real browser', () => {
  let s: Served;
  let browser: Browser;

  beforeAll(async () => {
    await ensureAdminUiBuilt();
    s = await serve();
    browser = await launch();
  });
  afterAll(async () => {
    await browser?.close();
    await s?.t.close();
  });

  it('without a token: says how to get an admin link, and calls no admin endpoint', async () => {
    const tab = await openTab(browser);
    await tab.page.goto(`${s.base}/admin`);
    await tab.page.getByRole('heading', { name: 'Open this page with an admin link' }).waitFor();
    await tab.page.getByText('npm run svc -- admin-link <shop>.myshopify.com').waitFor();
    expect(tab.adminCalls).toEqual([]);
    expect(tab.errors).toEqual([]);
    await tab.context.close();
  });

  it('an expired link: a clear page naming the command for a new link, and no admin call', async () => {
    const domain = uniqueShop('expired');
    const token = await signSessionToken(TEST_CREDENTIALS, domain, { now: new Date(Date.now() - 2 * 3600_000), ttlSeconds: 60 });
    const tab = await openTab(browser);
    await tab.page.goto(`${s.base}/admin#token=${token}`);
    await tab.page.getByRole('heading', { name: 'Your session has expired' }).waitFor();
    await tab.page.getByText(`npm run svc -- admin-link ${domain}`).waitFor();
    expect(tab.page.url()).not.toContain('token=');
    expect(tab.adminCalls).toEqual([]);
    await screenshot(tab.page, 'session-expired');
    await tab.context.close();
  });

  it('a token the server refuses (401) ends the session: the same page, and the stored token is dropped', async () => {
    const domain = uniqueShop('forged');
    const forged = await signSessionToken({ ...TEST_CREDENTIALS, secret: 'not-the-app-secret-0123456789' }, domain);
    const tab = await openTab(browser);
    await tab.page.goto(`${s.base}/admin#token=${forged}`);
    await tab.page.getByRole('heading', { name: 'Your session has expired' }).waitFor();
    expect(tab.adminCalls.length).toBeGreaterThan(0);
    expect(await tab.page.evaluate(() => localStorage.length)).toBe(0);
    const calls = tab.adminCalls.length;
    await tab.page.reload();
    await tab.page.getByRole('heading', { name: 'Open this page with an admin link' }).waitFor();
    expect(tab.adminCalls.length).toBe(calls);
    await tab.context.close();
  });

  it('embedded (SHOPIFY_API_KEY set): App Bridge supplies the token; standalone pages do not load App Bridge', async () => {
    const domain = uniqueShop('embedded');
    const shop = await setShopPlan({ ctx: s.t.ctx, input: { domain, plan: 'enterprise' } });
    await generateKey({ ctx: s.t.ctx, input: { shopId: shop.id, name: 'from embedded' } });
    const app = await buildApp({
      ctx: s.t.ctx,
      credentials: TEST_CREDENTIALS,
      logger: createLogger({ level: 'silent' }),
      adminUi: { shopifyApiKey: TEST_CREDENTIALS.apiKey },
    });
    try {
      const base = await app.listen({ port: 0, host: '127.0.0.1' });
      const token = await s.t.sessionToken(domain);
      const tab = await openTab(browser);
      const bridgeRequests: string[] = [];
      // Stands in for the platform's App Bridge script (the test machine has no internet).
      await tab.context.route('https://cdn.shopify.com/**', (route) => {
        bridgeRequests.push(route.request().url());
        return route.fulfill({
          contentType: 'text/javascript',
          body: `window.shopify = { idToken: async () => ${JSON.stringify(token)}, config: { shop: ${JSON.stringify(domain)} } };`,
        });
      });
      await tab.page.goto(`${base}/admin/settings/api?shop=${domain}`);
      await tab.page.getByRole('row', { name: /from embedded/ }).waitFor();
      expect(bridgeRequests).toEqual(['https://cdn.shopify.com/shopifycloud/app-bridge.js']);
      expect(tab.adminCalls.length).toBeGreaterThan(0);
      expect(tab.adminCalls.every((c) => c.authorization === `Bearer ${token}`)).toBe(true);
      await tab.context.close();

      // The standalone server (no SHOPIFY_API_KEY) never asks for App Bridge.
      const standalone = await openTab(browser);
      await standalone.page.goto(`${s.base}/admin#token=${await s.t.sessionToken(domain)}`);
      await standalone.page.getByRole('row', { name: /from embedded/ }).waitFor();
      expect(standalone.external).toEqual([]);
      await standalone.context.close();
    } finally {
      await app.close();
    }
  });
});
