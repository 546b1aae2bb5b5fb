import { randomUUID } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { BillingOutcome } from '../../src/domain/billing.js';
import { changeContract } from '../../src/services/changeContract.js';
import { recordBillingOutcome } from '../../src/services/recordBillingOutcome.js';
import { SYSTEM } from '../../src/services/principal.js';
import { contractRow, insertContract, setContract, sql } from '../support/fixtures.js';
import { describeInBrowser, ensureAdminUiBuilt, launch, openTab, screenshot, serve, type Served, type Tab } from './browser.js';
import { expectNoClippedTables } from './clipping.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** The page's next look after an outcome, on a busy machine. */
const SLOW = { timeout: 15_000 };
/** As the Bill now button writes a moment this year (the browser runs in en-US, UTC). */
const short = (d: Date) => new Intl.DateTimeFormat('en-US', { month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit', timeZone: 'UTC' }).format(d);
const when = (d: Date) =>
  new Intl.DateTimeFormat('en-US', { year: 'numeric', month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit', timeZoneName: 'short', timeZone: 'UTC' }).format(d);
const longDay = (d: Date) => new Intl.DateTimeFormat('en-US', { dateStyle: 'long', timeZone: 'UTC' }).format(d);

describeInBrowser('admin UI: payment trouble in a real browser', () => {
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

  /** The contract's due cycle (or its retry) billed `at`, as the billing worker bills it, then its outcome. */
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
  const declined: BillingOutcome = { kind: 'failed', errorCode: 'insufficient_funds', platformErrorCode: 'INSUFFICIENT_FUNDS', message: 'The card has insufficient funds.' };
  const paid = (name: string): BillingOutcome => ({ kind: 'succeeded', order: { id: randomUUID(), name, amount: '12.34', currencyCode: 'EUR' } });
  const coffee = [{ title: 'Coffee 1kg', variantId: '51', quantity: 1, price: { amount: '12.34', currencyCode: 'EUR' } }];

  /** A contract whose cycle of 12 days ago failed four times (the default policy): FAILED, its order unpaid. */
  const failedContract = async (shopId: string, email = 'ada.lovelace@example.com') => {
    const cycle = new Date(s.t.clock.now().getTime() - 12 * DAY);
    const c = await insertContract(s.t, shopId, { customerEmail: email, nextBillingDate: cycle, lines: coffee });
    for (const after of [60_000, DAY + 2 * 60_000, 4 * DAY + 3 * 60_000, 11 * DAY + 4 * 60_000]) await bill(shopId, c.id, new Date(cycle.getTime() + after), declined);
    const row = await contractRow(s.t, c.id);
    expect(row.status).toBe('FAILED');
    return { ...c, cycle };
  };
  /** A contract whose payment of an hour ago failed once: in dunning, retried tomorrow. */
  const dunningContract = async (shopId: string, email: string) => {
    const cycle = new Date(s.t.clock.now().getTime() - HOUR);
    const c = await insertContract(s.t, shopId, { customerEmail: email, nextBillingDate: cycle, lines: coffee });
    await bill(shopId, c.id, new Date(cycle.getTime() + 60_000), declined);
    return c;
  };

  const dialog = async (page: Page, title: string) => {
    await page.getByRole('heading', { name: title }).waitFor();
    return page.getByRole('dialog');
  };

  it('a FAILED contract: "Payment failed", no next date; Resume says it bills now, with the date, and does', async () => {
    const shop = await s.t.shopWithKey('enterprise');
    const c = await failedContract(shop.shopId);
    // Its next billing date stands months ahead: resuming still bills the unpaid order at once.
    const later = new Date(s.t.clock.now().getTime() + 120 * DAY);
    await setContract(s.t, c.id, { nextBillingDate: later });
    const t = await tab(1280);
    const { page } = t;
    await open(t, shop.domain, `/admin/contracts/${c.id}`);
    const state = page.getByRole('group', { name: 'Billing state' });
    await state.getByText('Payment failed').waitFor();
    expect(await state.getByText('Up to date').count()).toBe(0);
    expect(await state.innerText()).toMatch(/Failed attempts this cycle\s+4/);
    expect(await state.innerText()).toMatch(/Next attempt\s+None: billed when resumed/);
    await page.getByText('None while failed: resuming bills now').waitFor();
    await page.getByText(/unpaid after 4 failed attempts, and is not retried while the contract is failed\. Resuming the contract bills it now/).waitFor();
    // The date months ahead is shown nowhere: nothing bills the contract then.
    expect(await page.getByText(when(later)).count()).toBe(0);

    await page.getByRole('button', { name: 'Resume', exact: true }).click();
    const d = await dialog(page, `Resume contract #${c.id}?`);
    const text = await d.innerText();
    expect(text).toContain(`Resuming bills now (${longDay(s.t.clock.now())})`);
    expect(text).toContain('ada.lovelace@example.com is charged €12.34 at once for the unpaid order due');
    await screenshot(page, 'contract-failed-resume-dialog', false);
    await d.getByRole('button', { name: 'Resume and bill now' }).click();
    await page.getByTestId('contract-status').getByText('Active').waitFor();
    const row = await contractRow(s.t, c.id);
    expect(row.nextBillingDate.toISOString()).toBe(s.t.clock.now().toISOString());
    expect(row.billingStatus).toBe('ok');
    await finish();
  });

  it('a paused contract: Resume says the date it is next billed', async () => {
    const shop = await s.t.shopWithKey('enterprise');
    const next = new Date(Date.UTC(2030, 0, 15, 9, 30));
    const c = await insertContract(s.t, shop.shopId, { status: 'PAUSED', pausedAt: s.t.clock.now(), nextBillingDate: next, lines: coffee });
    const t = await tab(1280);
    await open(t, shop.domain, `/admin/contracts/${c.id}`);
    await t.page.getByRole('button', { name: 'Resume', exact: true }).click();
    const d = await dialog(t.page, `Resume contract #${c.id}?`);
    expect(await d.innerText()).toContain('The contract becomes active and is next billed on Jan 15, 2030, 9:30 AM UTC');
    expect(await d.innerText()).not.toContain('bills now');
    await d.getByRole('button', { name: 'Resume contract' }).click();
    await t.page.getByTestId('contract-status').getByText('Active').waitFor();
    expect((await contractRow(s.t, c.id)).nextBillingDate).toEqual(next);
    await finish();
  });

  it('the Contracts list flags payment trouble beside the status and filters by it', async () => {
    const shop = await s.t.shopWithKey('enterprise');
    const failed = await failedContract(shop.shopId, 'failed@example.com');
    const dunning = await dunningContract(shop.shopId, 'dunning@example.com');
    const fine = await insertContract(s.t, shop.shopId, { customerEmail: 'fine@example.com', nextBillingDate: new Date(s.t.clock.now().getTime() + DAY), lines: coffee });
    const t = await tab(1280);
    const { page } = t;
    await open(t, shop.domain, '/admin/contracts');
    const row = (id: string) => page.locator('tbody tr').filter({ has: page.getByRole('link', { name: `Contract #${id}` }) });
    await row(fine.id).waitFor();
    expect(await row(failed.id).innerText()).toMatch(/Failed[\s\S]*Payment failed/);
    expect(await row(failed.id).innerText()).toContain('Not until resumed');
    expect(await row(dunning.id).innerText()).toMatch(/Active[\s\S]*Retrying a failed payment/);
    expect(await row(fine.id).innerText()).not.toMatch(/Payment|Retrying/);
    await expectNoClippedTables(page, { scrolling: false, where: 'the contracts list with payment trouble' });

    await page.getByLabel('Billing', { exact: true }).selectOption('trouble');
    await expect.poll(async () => page.locator('tbody tr').count(), SLOW).toBe(2);
    expect(await row(fine.id).count()).toBe(0);
    expect(new URL(page.url()).searchParams.get('billing')).toBe('trouble');
    expect(t.adminCalls.some((c) => c.url.includes('billingStatus=retrying&billingStatus=action_required'))).toBe(true);
    await screenshot(page, 'contracts-payment-trouble', false);
    // Only the failed ones: the filters AND together.
    await page.getByRole('checkbox', { name: 'Failed' }).check();
    await expect.poll(async () => page.locator('tbody tr').count(), SLOW).toBe(1);
    await row(failed.id).waitFor();
    // The filter is kept in the address: a reload shows the same.
    await page.reload();
    await row(failed.id).waitFor();
    expect(await page.getByLabel('Billing', { exact: true }).inputValue()).toBe('trouble');
    await finish();
  });

  for (const width of [1280, 375]) {
    it(`Bill now says when the contract last billed; within 24 hours its confirmation asks to bill again (${width} px)`, async () => {
      const shop = await s.t.shopWithKey('enterprise');
      const c = await insertContract(s.t, shop.shopId, { customerEmail: 'grace@example.com', nextBillingDate: new Date(s.t.clock.now().getTime() - 3 * DAY), lines: coffee });
      // Billed on schedule three days ago.
      const billedAt = new Date(s.t.clock.now().getTime() - 3 * DAY + 60_000);
      await bill(shop.shopId, c.id, billedAt, paid('R-7'));
      const t = await tab(width);
      const { page } = t;
      await open(t, shop.domain, `/admin/contracts/${c.id}`);
      const button = page.getByRole('group', { name: 'Contract actions' }).getByRole('button', { name: /^Bill now/ });
      await button.waitFor();
      expect((await button.innerText()).trim()).toBe(`Bill now · last billed ${short(billedAt)}`);
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);

      // More than 24 hours ago: the usual confirmation, naming the last billing.
      await button.click();
      let d = await dialog(page, `Bill contract #${c.id} now?`);
      expect(await d.innerText()).toContain('Last billed');
      expect(await d.innerText()).toContain('(order R-7)');
      await d.getByRole('button', { name: 'Bill now' }).click();
      await expect.poll(() => s.t.billing.scheduler.size, SLOW).toBeGreaterThan(0);
      await s.t.billing.scheduler.runAll();
      const first = s.t.clock.now();
      // The page sees the outcome by itself, and the button says so.
      await expect.poll(async () => (await button.innerText()).trim(), SLOW).toBe(`Bill now · last billed ${short(first)}`);

      // Within 24 hours: the confirmation asks again and names the order; confirmed, a second charge.
      s.t.clock.advance(60_000);
      await button.click();
      d = await dialog(page, `Bill contract #${c.id} again?`);
      expect(await d.innerText()).toMatch(/Already billed less than 24 hours ago: .* \(order #1001\)\./);
      expect(await d.innerText()).toContain('grace@example.com is charged €12.34 now for the current order, a second time.');
      await screenshot(page, `contract-bill-again-${width}`, false);
      await d.getByRole('button', { name: 'Bill again' }).click();
      await expect.poll(() => s.t.billing.scheduler.size, SLOW).toBeGreaterThan(0);
      await s.t.billing.scheduler.runAll();
      const charged = await sql<{ trigger: string; status: string; name: string }>(
        s.t,
        `SELECT trigger, status, "order" ->> 'name' AS name FROM billing_attempts WHERE contract_id = $1 ORDER BY created_at`,
        [c.id],
      );
      expect(charged.map((a) => [a.trigger, a.status, a.name])).toEqual([
        ['schedule', 'succeeded', 'R-7'],
        ['bill_now', 'succeeded', '#1001'],
        ['bill_now', 'succeeded', '#1002'],
      ]);
      await finish();
    });
  }
});
