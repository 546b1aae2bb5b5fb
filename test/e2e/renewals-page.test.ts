import { randomUUID } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { BillingOutcome } from '../../src/domain/billing.js';
import { changeContract } from '../../src/services/changeContract.js';
import { recordBillingOutcome } from '../../src/services/recordBillingOutcome.js';
import { SYSTEM } from '../../src/services/principal.js';
import { contractRow, insertContract } from '../support/fixtures.js';
import { describeInBrowser, ensureAdminUiBuilt, launch, openTab, screenshot, serve, type Served, type Tab } from './browser.js';
import { expectNoClippedTables } from './clipping.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** The outcome arrives from the gateway, then the page's next look: a generous deadline on a busy machine. */
const SLOW = { timeout: 15_000 };
const WIDTHS = [1280, 375] as const;

describeInBrowser('admin UI: renewals in a real browser', () => {
  let s: Served;
  let browser: Browser;
  const tabs: Tab[] = [];

  beforeAll(async () => {
    await ensureAdminUiBuilt();
    s = await serve();
    browser = await launch();
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await s?.t.close();
  });

  const tab = async (width: number) => {
    const t = await openTab(browser, { width, height: 900 });
    tabs.push(t);
    return t;
  };
  const finish = async () => {
    for (const t of tabs.splice(0)) {
      expect(t.external, 'the standalone page loads nothing from another origin').toEqual([]);
      expect(t.errors, 'no script errors').toEqual([]);
      await t.context.close().catch(() => {});
    }
  };
  const open = async (t: Tab, domain: string, path: string) => t.page.goto(`${s.base}${path}#token=${await s.t.sessionToken(domain)}`);

  /** One attempt of the contract's due cycle (or its retry) made `at`, as the billing worker makes it, then its outcome. */
  const bill = async (shopId: string, contractId: string, at: Date, outcome: BillingOutcome) => {
    const now = s.t.clock.now();
    s.t.clock.set(at);
    try {
      const attemptId = randomUUID();
      const read = await contractRow(s.t, contractId);
      const committed = await changeContract(s.t.ctx, { shopId, contractId, read, request: { command: { name: 'bill', input: { attemptId, maxLateMs: 3 * DAY } }, actor: SYSTEM.billing.actor } });
      expect(committed?.changed).toBe(true);
      await recordBillingOutcome(s.t.ctx, { shopId, attemptId, outcome });
    } finally {
      s.t.clock.set(now);
    }
  };
  const paid = (amount: string, name: string): BillingOutcome => ({ kind: 'succeeded', order: { id: randomUUID(), name, amount, currencyCode: 'EUR' } });
  const declined: BillingOutcome = { kind: 'failed', errorCode: 'insufficient_funds', platformErrorCode: 'INSUFFICIENT_FUNDS', message: 'The card has insufficient funds.' };

  /**
   * A shop whose contract failed a payment two days ago and was recovered by the retry a day later (more than 24
   * hours ago: Bill now does not ask to bill again); and another contract due every two days from tomorrow.
   */
  const shopWithRenewals = async () => {
    const shop = await s.t.shopWithKey('enterprise');
    const now = s.t.clock.now();
    const failedAt = new Date(now.getTime() - 2 * DAY - 2 * HOUR);
    const c = await insertContract(s.t, shop.shopId, {
      customerEmail: 'ada.lovelace@example.com',
      nextBillingDate: new Date(failedAt.getTime() - HOUR),
      lines: [{ title: 'Coffee 1kg', variantId: '51', quantity: 1, price: { amount: '12.34', currencyCode: 'EUR' } }],
    });
    await bill(shop.shopId, c.id, failedAt, declined);
    await bill(shop.shopId, c.id, new Date(failedAt.getTime() + DAY + 60_000), paid('12.34', 'R-1'));
    const due = await insertContract(s.t, shop.shopId, {
      customerEmail: 'grace@example.com',
      nextBillingDate: new Date(now.getTime() + DAY),
      billingInterval: 'DAY',
      billingIntervalCount: 2,
      lines: [{ title: 'Tea 250g', variantId: '61', quantity: 1, price: { amount: '7.00', currencyCode: 'EUR' } }],
    });
    return { ...shop, contract: c, due, failedDay: failedAt.toISOString().slice(0, 10), recoveredDay: new Date(failedAt.getTime() + DAY + 60_000).toISOString().slice(0, 10) };
  };

  const attemptsTable = (page: Page, id: string) => page.getByRole('region', { name: `Billing attempts of contract ${id}` });
  const attemptRows = (page: Page, id: string) => attemptsTable(page, id).locator('tbody tr, li');

  for (const width of WIDTHS) {
    it(`the contract's Billing card: its dunning state and attempts newest first, and Bill now (${width} px)`, async () => {
      const shop = await shopWithRenewals();
      const t = await tab(width);
      const { page } = t;
      await open(t, shop.domain, `/admin/contracts/${shop.contract.id}`);
      const state = page.getByRole('group', { name: 'Billing state' });
      await state.getByText('Up to date').waitFor();
      await expect.poll(() => state.innerText()).toMatch(/Failed attempts this cycle\s+0/);
      await expect.poll(() => attemptRows(page, shop.contract.id).count(), SLOW).toBe(2);
      const [newest, oldest] = [attemptRows(page, shop.contract.id).nth(0), attemptRows(page, shop.contract.id).nth(1)];
      const texts = (row: typeof newest) => row.innerText();
      for (const part of ['Attempt 2 · Retry', 'Succeeded', 'Order R-1 · €12.34']) expect(await texts(newest)).toContain(part);
      for (const part of ['Attempt 1 · Scheduled', 'Failed', 'Insufficient funds (INSUFFICIENT_FUNDS)', 'The card has insufficient funds.']) expect(await texts(oldest)).toContain(part);
      await expectNoClippedTables(page, { where: 'the contract page' });
      await screenshot(page, `contract-billing-${width}`);

      // Bill now (it says when the retry billed, more than a day ago): a confirmation, then the attempt is pending until
      // the gateway's outcome, which the page then shows.
      await page.getByRole('button', { name: 'Bill now · last billed' }).click();
      await page.getByRole('heading', { name: `Bill contract #${shop.contract.id} now?` }).waitFor();
      await page.getByRole('dialog').getByRole('button', { name: 'Bill now' }).click();
      await expect.poll(() => attemptRows(page, shop.contract.id).count(), SLOW).toBe(3);
      for (const part of ['Attempt 1 · Bill now', 'Pending']) expect(await attemptRows(page, shop.contract.id).nth(0).innerText()).toContain(part);
      await expect.poll(() => s.t.billing.scheduler.size, SLOW).toBeGreaterThan(0);
      await s.t.billing.scheduler.runAll();
      await expect.poll(() => attemptRows(page, shop.contract.id).nth(0).innerText(), SLOW).toContain('Order #1001 · €12.34');
      const billed = await contractRow(s.t, shop.contract.id);
      expect(billed.billingLastAttempt).toMatchObject({ trigger: 'bill_now', status: 'succeeded', order: { name: '#1001' } });
      await page.getByRole('list', { name: `History of contract ${shop.contract.id}` }).getByText('Billed', { exact: true }).first().waitFor();
      await expectNoClippedTables(page, { where: 'the contract page after Bill now' });
      await finish();
    });

    it(`the Renewals page: a chart of 30 days and the next 7, with every figure in the table below (${width} px)`, async () => {
      const shop = await shopWithRenewals();
      const t = await tab(width);
      const { page } = t;
      await open(t, shop.domain, '/admin/renewals');
      await page.getByRole('heading', { name: 'Renewals', exact: true }).waitFor();
      const chart = page.getByRole('img', { name: 'Renewals per day' });
      await chart.waitFor();
      expect(await chart.locator('desc').textContent()).toContain('2 attempts, 1 succeeded, 1 recovered, 1 failed');
      // The bars: the failure (by its code), the recovery, and the renewals due ahead.
      expect(await chart.locator(`g[data-date="${shop.failedDay}"] rect[data-series="failed-insufficient_funds"]`).count()).toBe(1);
      expect(await chart.locator(`g[data-date="${shop.recoveredDay}"] rect[data-series="recovered"]`).count()).toBe(1);
      expect(await chart.locator('rect[data-series="due"]').count()).toBeGreaterThanOrEqual(3);
      // Revenue: the recovered payment's, and the renewals' expected ahead.
      expect(await chart.locator(`g[data-date="${shop.recoveredDay}"]`).count()).toBe(1);
      expect(await chart.locator('circle[data-series="revenue"]').count()).toBe(1);
      expect(await chart.locator('circle[data-series="expected-revenue"]').count()).toBeGreaterThanOrEqual(3);
      expect(await chart.locator(`g[data-date="${shop.failedDay}"] title`).textContent()).toMatch(/1 attempts: 0 succeeded \(0 recovered\), 1 failed; failed: Insufficient funds 1/);
      await page.getByRole('list', { name: 'Chart legend' }).getByText('Failed: Insufficient funds').waitFor();

      const table = page.getByRole('region', { name: 'Renewals per day' });
      const rows = table.locator('tbody tr, li');
      expect(await rows.count()).toBe(37);
      const row = (date: string) => table.locator('tr, li').filter({ has: page.locator(`time[datetime="${date}"]`) });
      expect(await row(shop.failedDay).innerText()).toMatch(/Insufficient funds: 1/);
      expect(await row(shop.recoveredDay).innerText()).toMatch(/€12\.34/);
      const tomorrow = new Date(s.t.clock.now().getTime() + DAY).toISOString().slice(0, 10);
      expect(await row(tomorrow).innerText()).toMatch(/1[\s\S]*€7\.00/);
      await expectNoClippedTables(page, { where: 'the Renewals page' });
      await screenshot(page, `renewals-${width}`);
      await finish();
    });
  }

  it('the Renewals page of a shop that billed nothing says so; the navigation leads to it', async () => {
    const shop = await s.t.shopWithKey('enterprise');
    const t = await tab(1280);
    const { page } = t;
    await open(t, shop.domain, '/admin/contracts');
    await page.getByRole('heading', { name: 'Contracts', exact: true }).waitFor();
    await page.getByRole('navigation').getByRole('link', { name: 'Renewals' }).click();
    await page.getByRole('heading', { name: 'Nothing billed yet' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/admin/renewals');
    expect(await page.getByRole('img', { name: 'Renewals per day' }).count()).toBe(0);
    await finish();
  });

  it('Settings → Billing: the policy form shows the server\'s refusal on its field, then saves and keeps the policy', async () => {
    const shop = await s.t.shopWithKey('enterprise');
    const t = await tab(1280);
    const { page } = t;
    await open(t, shop.domain, '/admin/settings');
    await page.getByRole('link', { name: 'Billing' }).first().click();
    await page.getByRole('heading', { name: 'Billing', exact: true }).waitFor();
    const saved = page.getByRole('status', { name: 'Saved state' });
    await saved.getByText('The default policy', { exact: true }).waitFor();
    expect(await page.getByLabel('Retry 1: wait').inputValue()).toBe('P1D');
    expect(await page.getByLabel('Retry 3: wait').inputValue()).toBe('P7D');
    await page.getByText('1 day after the failed attempt').waitFor();

    // A month is not a fixed wait: the server refuses it, naming the field; nothing is saved.
    await page.getByLabel('Retry 2: wait').fill('P2M');
    await page.getByText('Unsaved changes').waitFor();
    await page.getByRole('button', { name: 'Save' }).last().click();
    await page.getByText('The billing policy was not saved').waitFor();
    // The server's reason, on the field it names (the field's description, and the field marked invalid).
    const retry2 = page.getByLabel('Retry 2: wait');
    await expect.poll(() => retry2.getAttribute('aria-invalid')).toBe('true');
    const description = await retry2.evaluate((el) =>
      (el.getAttribute('aria-describedby') ?? '').split(/\s+/).map((id) => document.getElementById(id)?.textContent ?? '').join(' '),
    );
    expect(description).toContain('Must be an ISO 8601 duration from PT1S to P30D, e.g. P1D or PT12H');
    expect(await page.getByLabel('Retry 1: wait').getAttribute('aria-invalid')).not.toBe('true');
    const before = await (await fetch(`${s.base}/admin/api/billing-policy`, { headers: { authorization: `Bearer ${await s.t.sessionToken(shop.domain)}` } })).json();
    expect(before).toEqual({ paymentRetries: ['P1D', 'P3D', 'P7D'], inventoryRetries: { every: 'P1D', max: 5 }, finalAction: 'fail' });

    // Fixed: twelve hours, the third retry removed, contracts paused at the end; saved, and still there on reload.
    await page.getByLabel('Retry 2: wait').fill('PT12H');
    await page.getByText('12 hours after retry 1').waitFor();
    await page.getByRole('button', { name: 'Remove retry 3' }).click();
    await page.getByLabel('Tries at most').fill('3');
    await page.getByLabel('Final action').selectOption('pause');
    await page.getByRole('button', { name: 'Save' }).last().click();
    await page.getByText('Billing policy saved').waitFor();
    await saved.getByText(/^Saved /).waitFor();
    expect(await page.getByText('The billing policy was not saved').count()).toBe(0);
    const after = await (await fetch(`${s.base}/admin/api/billing-policy`, { headers: { authorization: `Bearer ${await s.t.sessionToken(shop.domain)}` } })).json();
    expect(after).toEqual({ paymentRetries: ['P1D', 'PT12H'], inventoryRetries: { every: 'P1D', max: 3 }, finalAction: 'pause' });

    await page.reload();
    await saved.getByText('This store’s own policy').waitFor();
    expect(await page.getByLabel('Retry 2: wait').inputValue()).toBe('PT12H');
    expect(await page.getByLabel('Retry 3: wait').count()).toBe(0);
    expect(await page.getByLabel('Final action').inputValue()).toBe('pause');
    await screenshot(page, 'settings-billing');
    await finish();
  });
});
