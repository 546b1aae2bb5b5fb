import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { findShopByDomain } from '../../src/services/shops.js';
import { uniqueShop } from '../support/app.js';
import { startPlatform, type PlatformHarness } from '../support/platform.js';
import { describeInBrowser, ensureAdminUiBuilt, launch, openTab, screenshot, type Tab } from './browser.js';
import { expectNoClippedTables } from './clipping.js';

/**
 * The admin screens in platform mode (docs/product.md §9), against the platform's stand-in: the install's import on the
 * Contracts page, changes made on the platform in a contract's history, and "Upgrade to Enterprise" through the
 * platform's confirmation page and back. The stand-in listens on 127.0.0.1 too, so its page is reachable; anything
 * else leaving the machine is aborted and fails the test.
 */
describeInBrowser('admin UI in platform mode: import, platform changes, upgrade', () => {
  let p: PlatformHarness;
  let browser: Browser;
  const tabs: Tab[] = [];

  beforeAll(async () => {
    await ensureAdminUiBuilt();
    // Bulk operations finish when the test says so: the import's running state can be looked at.
    p = await startPlatform({ standIn: { bulk: { autoComplete: false } } });
    browser = await launch();
  });
  afterAll(async () => {
    await browser?.close();
    await p?.close();
  });

  const tab = async (opts?: Parameters<typeof openTab>[1]) => {
    const t = await openTab(browser, opts);
    tabs.push(t);
    return t;
  };
  // App Bridge's tokens live a minute; a test that goes to the platform and back needs longer than that.
  const open = (t: Tab, domain: string, path = '/admin') => t.page.goto(`${p.base}${path}#token=${p.standIn.sessionToken(domain, { ttlSeconds: 900 })}`);
  const done = async () => {
    for (const t of tabs.splice(0)) {
      expect(t.external, 'only 127.0.0.1 is reached').toEqual([]);
      expect(t.errors, 'no script errors').toEqual([]);
      await t.context.close().catch(() => {});
    }
  };
  // The rows of the Contracts table, by the link each has to its contract's page.
  const contractRows = (t: Tab) => t.page.locator('a[aria-label^="Contract #"]');

  // Hundreds of contracts read through slowed pages: more room than the other browser tests need.
  it('a large shop opens the app: the install starts, the page shows the import page by page, then in bulk, then every contract', { timeout: 150_000 }, async () => {
    const domain = uniqueShop('import');
    p.standIn.createShop(domain);
    const ids: string[] = [];
    for (let i = 0; i < 263; i++) ids.push(String(p.standIn.createContract(domain, {}, { silent: true }).id));
    // Slow pages, so the paged part of the import is seen in progress; past 250 contracts it goes on in bulk.
    p.standIn.faults.add({ kind: 'latency', ms: 300 }, { shop: domain, operation: 'subscriptionContracts', count: 100 });

    const t = await tab();
    const { page } = t;
    await open(t, domain, '/admin/contracts');
    await page.getByRole('heading', { name: 'Contracts', exact: true }).waitFor();
    const banner = page.getByText('Importing your subscription contracts from Shopify');
    // The first request installs the shop (token exchange) before it answers.
    await banner.waitFor({ timeout: 20_000 });
    expect(p.standIn.tokens.liveAccessTokens(domain).length).toBeGreaterThan(0);

    // Paged: a count that grows, and a first page that fills in as contracts arrive.
    await page.getByText(/^\d+ contracts imported so far$/).waitFor();
    await page.getByText('Contracts are read from Shopify page by page.', { exact: false }).waitFor();
    await expect.poll(() => contractRows(t).count(), { timeout: 10_000 }).toBe(25);
    await screenshot(page, 'platform-import-paged', false);

    // Bulk: the operation runs on the platform until the stand-in completes it (after 32 slowed pages of 8 contracts).
    await page.getByText('Shopify is preparing every contract of the store for the import.').waitFor({ timeout: 60_000 });
    await page.getByText(/bulk operation on Shopify/).waitFor();
    await screenshot(page, 'platform-import-bulk', false);
    expect(t.adminCalls.filter((c) => c.url === '/admin/api/shop').length).toBeGreaterThan(2);

    await p.standIn.bulk.settle();
    await p.settle();
    await page.getByText('Import finished').waitFor({ timeout: 10_000 });
    await page.getByText(`All ${ids.length} contracts of this store are here`, { exact: false }).waitFor();
    expect(await banner.count()).toBe(0);
    await expect.poll(() => contractRows(t).count()).toBe(25);
    expect(await page.getByRole('button', { name: 'Next' }).isEnabled()).toBe(true);
    await expectNoClippedTables(page, { scrolling: false, where: 'the imported contracts' });
    await screenshot(page, 'platform-import-finished', false);

    // Once finished, the page stops asking.
    const asked = t.adminCalls.filter((c) => c.url === '/admin/api/shop').length;
    await page.waitForTimeout(2_500);
    expect(t.adminCalls.filter((c) => c.url === '/admin/api/shop').length).toBe(asked);
    const installed = (await findShopByDomain({ ctx: p.t.ctx, input: { domain } }))!;
    const installation = await p.t.shopify!.installer.installation(installed.id);
    expect(installation).toMatchObject({ importStatus: 'completed', importMode: 'bulk', importDone: ids.length });
    await done();
  });

  it('an import that fails says why and that it is retried (on a phone); once it gets through the contracts are there', async () => {
    const domain = uniqueShop('failing');
    p.standIn.createShop(domain);
    for (let i = 0; i < 3; i++) p.standIn.createContract(domain, {}, { silent: true });
    p.standIn.faults.add({ kind: 'error', status: 500 }, { shop: domain, operation: 'subscriptionContracts', count: Infinity });

    const t = await tab({ width: 375, height: 812 });
    const { page } = t;
    await open(t, domain, '/admin/contracts');
    await page.getByText('The import of your contracts stopped').waitFor({ timeout: 10_000 });
    await page.getByText(/HTTP 500/).waitFor();
    await page.getByText(/It is retried automatically/).waitFor();
    await page.getByText('No contracts imported yet').waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await screenshot(page, 'platform-import-failed-375');

    // The platform recovers; the next admin request takes the import up again (a retry the page's own requests set
    // off just before may still end in the old failure: then the one after gets through).
    p.standIn.faults.clear();
    const installed = () => p.openAdmin(domain).then(() => true, () => false);
    await expect.poll(installed, { timeout: 10_000 }).toBe(true);
    await page.reload();
    await expect.poll(() => contractRows(t).count()).toBe(3);
    expect(await page.getByText('The import of your contracts stopped').count()).toBe(0);
    await expectNoClippedTables(page, { where: 'the imported contracts on a phone' });
    await done();
  });

  it("a change made on the platform appears in the contract's history, marked Platform", async () => {
    const shop = await p.install({ contracts: 2 });
    const [pausedThere, movedThere] = shop.contractIds;
    p.standIn.platform.pause(shop.domain, pausedThere);
    const nextBillingDate = new Date(Date.UTC(new Date().getUTCFullYear() + 1, 2, 1, 9));
    p.standIn.platform.update(shop.domain, movedThere, { nextBillingDate });
    await p.settle();

    const t = await tab();
    const { page } = t;
    await open(t, shop.domain, '/admin/contracts');
    await page.getByRole('row', { name: new RegExp(`#${pausedThere}`) }).getByText('Paused', { exact: true }).waitFor();
    // Platform mode, in a tab opened with a link: the frame does not call it standalone.
    expect(await page.getByText('Standalone admin').count()).toBe(0);
    await page.getByText('Opened with an admin link').first().waitFor({ state: 'attached' });
    await page.getByRole('link', { name: `Contract #${pausedThere}` }).click();
    await page.getByTestId('contract-status').getByText('Paused').waitFor();
    const history = page.getByRole('list', { name: `History of contract ${pausedThere}` });
    await history.getByText('Paused', { exact: true }).waitFor();
    await history.getByText('Platform', { exact: true }).waitFor();
    await history.getByText('By Platform (changed in Shopify, not through this app)').waitFor();
    await history.getByText(/Paused until resumed · Active → Paused/).waitFor();

    await page.locator('main').getByRole('link', { name: 'Contracts' }).click();
    await page.getByRole('link', { name: `Contract #${movedThere}` }).click();
    const movedHistory = page.getByRole('list', { name: `History of contract ${movedThere}` });
    await movedHistory.getByText('Updated', { exact: true }).waitFor();
    await movedHistory.getByText('Platform', { exact: true }).waitFor();
    await movedHistory.getByText(/^Next billing \w{3} \d+, \d{4}, \d+:\d\d [AP]M UTC → Mar 1, \d{4}, 9:00 AM UTC$/).waitFor();
    // An import is not news: no banner once it is long done.
    expect(await page.getByText('Importing your subscription contracts from Shopify').count()).toBe(0);
    expect(await page.getByText('Import finished').count()).toBe(0);
    await screenshot(page, 'platform-contract-history');
    await done();
  });

  it('Upgrade to Enterprise: the platform asks the merchant to approve, sends them back, and API access turns on', async () => {
    const shop = await p.install({ contracts: 1, plan: 'basic' });
    const t = await tab();
    const { page } = t;
    await open(t, shop.domain);
    await page.getByText('Plan required: API access needs the Enterprise plan').waitFor();
    const upgrade = page.getByRole('button', { name: 'Upgrade to Enterprise' });
    await upgrade.waitFor();
    expect(await page.getByRole('button', { name: 'Generate key' }).isDisabled()).toBe(true);
    await screenshot(page, 'platform-upgrade-offered');

    // The platform's confirmation page, a top-level navigation away from the app.
    await upgrade.click();
    await page.waitForURL(/\/admin\/charges\/.*confirm_recurring_application_charge/);
    expect(new URL(page.url()).origin).toBe(new URL(p.standIn.url).origin);
    await page.getByRole('heading', { name: 'Enterprise' }).waitFor();
    await page.getByText('299.00 USD (test)').waitFor();
    await screenshot(page, 'platform-upgrade-confirmation', false);
    expect(t.adminCalls.some((c) => c.url === '/admin/api/billing/upgrade')).toBe(true);

    // Approved: back to Settings → API, where the page asks what became of that subscription; svc reads the plan
    // again at once, without waiting for the platform's app_subscriptions/update (held back here).
    p.standIn.webhooks.fault({ mode: 'hold' }, { shop: shop.domain, topic: 'app_subscriptions/update' });
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.waitForURL((u) => u.pathname === '/admin/settings/api');
    expect(page.url().startsWith(`${p.base}/admin/settings/api?`)).toBe(true);
    await page.getByText('The Enterprise plan is active').waitFor({ timeout: 10_000 });
    expect(t.adminCalls.some((c) => /^\/admin\/api\/billing\/upgrade\/\d+$/.test(c.url))).toBe(true);
    // One subscription, approved: the page offered no second upgrade.
    expect(p.standIn.shop(shop.domain).appSubscriptions.map((s) => s.status)).toEqual(['ACTIVE']);
    p.standIn.webhooks.clearFaults();
    p.standIn.webhooks.release();
    await p.settle();
    await expect.poll(() => new URL(page.url()).searchParams.has('charge_id')).toBe(false);
    await screenshot(page, 'platform-upgrade-confirmed');

    await page.reload();
    await page.getByText('Enterprise plan', { exact: true }).waitFor();
    const generate = page.getByRole('button', { name: 'Generate key' });
    await expect.poll(() => generate.isEnabled()).toBe(true);
    expect(await page.getByRole('button', { name: 'Upgrade to Enterprise' }).count()).toBe(0);
    await screenshot(page, 'platform-upgrade-after-reload');
    await done();
  });

  it('Upgrade to Enterprise, declined on the platform: the page says so at once, and the upgrade stays on offer', async () => {
    const shop = await p.install({ contracts: 1, plan: 'basic' });
    const t = await tab();
    const { page } = t;
    await open(t, shop.domain);
    await page.getByRole('button', { name: 'Upgrade to Enterprise' }).click();
    await page.waitForURL(/\/admin\/charges\/.*confirm_recurring_application_charge/);
    await page.getByRole('button', { name: 'Decline' }).click();
    await page.waitForURL((u) => u.pathname === '/admin/settings/api');
    await page.getByText('The Enterprise subscription was not approved').waitFor({ timeout: 5_000 });
    await expect.poll(() => new URL(page.url()).searchParams.has('charge_id')).toBe(false);
    expect(p.standIn.shop(shop.domain).appSubscriptions.map((s) => s.status)).toEqual(['DECLINED']);
    expect(await page.getByRole('button', { name: 'Upgrade to Enterprise' }).isEnabled()).toBe(true);
    expect(await page.getByRole('button', { name: 'Generate key' }).isDisabled()).toBe(true);
    await screenshot(page, 'platform-upgrade-declined');
    await done();
  });

  it('an upgrade the platform fails is shown with its code and request id, and the merchant stays on the page', async () => {
    const shop = await p.install({ contracts: 1, plan: 'basic' });
    p.standIn.faults.add({ kind: 'error', status: 500 }, { shop: shop.domain, operation: 'appSubscriptionCreate' });
    const t = await tab();
    const { page } = t;
    await open(t, shop.domain);
    await page.getByRole('button', { name: 'Upgrade to Enterprise' }).click();
    const alert = page.getByRole('alert');
    await alert.getByText('The upgrade could not be started').waitFor();
    await alert.getByText(/The platform did not answer the change \(HTTP 500\): it may have been made there/).waitFor();
    await alert.getByText(/^HTTP 503 · platform_unavailable · request \S+$/).waitFor();
    expect(new URL(page.url()).pathname).toBe('/admin/settings/api');
    expect(await page.getByRole('button', { name: 'Upgrade to Enterprise' }).isEnabled()).toBe(true);
    await screenshot(page, 'platform-upgrade-refused');
    await done();
  });
});
