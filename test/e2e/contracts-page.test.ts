import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { resumeDueContracts } from '../../src/services/resumeDueContracts.js';
import { describeInBrowser, ensureAdminUiBuilt, launch, openTab, screenshot, serve, type Served } from './browser.js';

// As the page writes a date (the browser runs in en-US, UTC): to the minute, so a resume date is never confused with
// a next billing date that falls on the same day (seeded contracts bill at a random moment).
const when = (d: Date) =>
  new Intl.DateTimeFormat('en-US', { year: 'numeric', month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit', timeZoneName: 'short', timeZone: 'UTC' }).format(d);

describeInBrowser('admin UI: Contracts page in a real browser', () => {
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

  const act = async (key: string, id: string, body: object) => {
    const res = await fetch(`${s.base}/api/v1/subscription-contracts/${id}/actions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
  };

  it('shows what the API and the scheduler did: status, dates, and each event with who did it', async () => {
    const { shopId, domain, key, fingerprint } = await s.t.shopWithKey('enterprise');
    const [paused, cancelled, resumed] = await s.t.seed(shopId, 3);
    const now = s.t.clock.now();
    const resumeAt = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 30));
    await act(key, paused.id, { action: 'pause', resumeAt: resumeAt.toISOString() });
    await act(key, cancelled.id, { action: 'cancel', reason: 'Moved abroad' });
    await act(key, resumed.id, { action: 'pause', resumeAt: new Date(now.getTime() + 60_000).toISOString() });
    s.t.clock.advance(120_000);
    await resumeDueContracts({ ctx: s.t.ctx, input: {} });

    const tab = await openTab(browser);
    const { page } = tab;
    await page.goto(`${s.base}/admin/contracts#token=${await s.t.sessionToken(domain)}`);
    await page.getByRole('heading', { name: 'Contracts', exact: true }).waitFor();

    const card = (id: string) => page.getByRole('region', { name: `Contract #${id}` });
    const p = card(paused.id);
    await p.getByText('Paused', { exact: true }).waitFor();
    await p.getByText(when(resumeAt), { exact: true }).waitFor();
    await p.getByRole('button', { name: 'Show history' }).click();
    const history = p.getByRole('list', { name: `History of contract ${paused.id}` });
    await history.getByText('Paused', { exact: true }).waitFor();
    await history.getByText(`By API key ${fingerprint}`).waitFor();
    await history.getByText(new RegExp(`Resumes ${when(resumeAt)}`)).waitFor();
    expect(await p.getByRole('button', { name: 'Hide history' }).getAttribute('aria-expanded')).toBe('true');

    const c = card(cancelled.id);
    await c.getByText('Cancelled', { exact: true }).first().waitFor();
    await c.getByText('Cancellation reason: Moved abroad').waitFor();

    const r = card(resumed.id);
    await r.getByText('Active', { exact: true }).waitFor();
    await r.getByRole('button', { name: 'Show history' }).click();
    const rh = r.getByRole('list', { name: `History of contract ${resumed.id}` });
    await rh.getByText('By Scheduler (automatic resume)').waitFor();
    await rh.getByText(`By API key ${fingerprint}`).waitFor();
    await screenshot(page, 'contracts-history');

    // The status filter asks the server for paused contracts only.
    await page.getByLabel('Status').selectOption('PAUSED');
    await expect.poll(() => page.getByRole('region', { name: /^Contract #/ }).count()).toBe(1);
    await card(paused.id).waitFor();
    expect(tab.adminCalls.some((call) => call.url.includes('status=PAUSED'))).toBe(true);
    await screenshot(page, 'contracts-filter-paused');

    // In-app navigation to Settings → API, without reloading the page.
    await page.evaluate(() => ((window as unknown as { marker: number }).marker = 1));
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('link', { name: 'API', exact: true }).first().click();
    await page.getByRole('heading', { name: 'API', exact: true }).waitFor();
    expect(page.url()).toBe(`${s.base}/admin/settings/api`);
    expect(await page.evaluate(() => (window as unknown as { marker?: number }).marker)).toBe(1);

    expect(tab.external).toEqual([]);
    expect(tab.errors).toEqual([]);
    await tab.context.close();
  });

  it('is readable at 375 px, with the navigation behind the menu button', async () => {
    const { shopId, domain } = await s.t.shopWithKey('enterprise');
    await s.t.seed(shopId, 2);
    const tab = await openTab(browser, { width: 375, height: 812 });
    const { page } = tab;
    await page.goto(`${s.base}/admin/contracts#token=${await s.t.sessionToken(domain)}`);
    await page.getByRole('region', { name: /^Contract #/ }).first().waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await screenshot(page, 'contracts-mobile-375');
    await page.getByRole('button', { name: 'Toggle menu' }).click();
    await page.getByRole('link', { name: 'Contracts' }).waitFor();
    expect(tab.errors).toEqual([]);
    await tab.context.close();
  });
});
