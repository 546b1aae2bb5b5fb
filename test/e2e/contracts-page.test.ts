import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createDiscountCode, seedProducts } from '../../src/services/catalog.js';
import { resumeDueContracts } from '../../src/services/resumeDueContracts.js';
import { contractRow, eventRows, insertContract } from '../support/fixtures.js';
import { insertManyContracts } from '../support/manyContracts.js';
import { describeInBrowser, ensureAdminUiBuilt, launch, openTab, screenshot, serve, type Served, type Tab } from './browser.js';
import { expectNoClippedTables } from './clipping.js';

// As the page writes a moment (the browser runs in en-US, UTC): to the minute, so a resume date is never confused with
// a next billing date that falls on the same day.
const when = (d: Date) =>
  new Intl.DateTimeFormat('en-US', { year: 'numeric', month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit', timeZoneName: 'short', timeZone: 'UTC' }).format(d);
/** A day as a date field takes it. */
const dayField = (d: Date) => d.toISOString().slice(0, 10);
const DAY = 86_400_000;
/** A search waits for typing to pause, then for the server: a generous deadline on a busy machine. */
const SLOW = { timeout: 15_000 };

describeInBrowser('admin UI: Contracts in a real browser', () => {
  let s: Served;
  let browser: Browser;
  const tabs: Tab[] = [];

  // Building the admin UI (when its sources changed) takes a minute on a busy machine.
  beforeAll(async () => {
    await ensureAdminUiBuilt();
    s = await serve();
    browser = await launch();
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await s?.t.close();
  });

  const tab = async (opts?: Parameters<typeof openTab>[1]) => {
    const t = await openTab(browser, opts);
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
  const act = async (key: string, id: string, body: object) => {
    const res = await fetch(`${s.base}/api/v1/subscription-contracts/${id}/actions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
  };
  /** Ada's contract, billed in ten days at 10:30 UTC, to act on. */
  const adaOf = (shop: { shopId: string }) => {
    const now = s.t.clock.now();
    return insertContract(s.t, shop.shopId, {
      customerEmail: 'ada.lovelace@example.com',
      nextBillingDate: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 10, 10, 30)),
      lines: [
        { title: 'Coffee 1kg', variantId: '51', quantity: 2, price: { amount: '24.00', currencyCode: 'EUR' } },
        { title: 'Espresso beans 500g', variantId: '52', quantity: 1, price: { amount: '14.50', currencyCode: 'EUR' } },
      ],
    });
  };
  const smallShop = async () => {
    const shop = await s.t.shopWithKey('enterprise');
    return { ...shop, ada: await adaOf(shop) };
  };
  /** Thousands of contracts (one insert), then Ada's, the newest. */
  const bigShop = async () => {
    const shop = await s.t.shopWithKey('enterprise');
    const many = await insertManyContracts(s.t, shop.shopId, 2_050);
    return { ...shop, many, ada: await adaOf(shop) };
  };
  const open = async (t: Tab, domain: string, path: string) => t.page.goto(`${s.base}${path}#token=${await s.t.sessionToken(domain)}`);
  const rowIds = (page: Page) => page.locator('a[aria-label^="Contract #"]').evaluateAll((as) => as.map((a) => a.getAttribute('aria-label')!.slice('Contract #'.length)));
  const history = (page: Page, id: string) => page.getByRole('list', { name: `History of contract ${id}` });
  const newestEvent = (page: Page, id: string) => history(page, id).getByRole('listitem').first();
  /** Waits for the dialog's title: on a phone the dialog is a bottom sheet whose role=dialog box has no height. */
  const dialog = async (page: Page, title: string) => {
    await page.getByRole('heading', { name: title }).waitFor();
    return page.getByRole('dialog');
  };

  it('finds a contract among thousands: pages, status, the start of an email, a contract number; opens it and comes back', async () => {
    const shop = await bigShop();
    const t = await tab({ width: 1280, height: 900 });
    const { page } = t;
    await open(t, shop.domain, '/admin/contracts');
    await page.getByRole('heading', { name: 'Contracts', exact: true }).waitFor();
    await page.getByRole('link', { name: `Contract #${shop.ada.id}` }).waitFor();
    // The tab's title follows the page.
    expect(await page.title()).toBe('Contracts · svc');
    const newest = [shop.ada.id, ...[...shop.many].reverse()];
    expect(await rowIds(page)).toEqual(newest.slice(0, 25));
    // Every column in sight as the page opens, at a laptop's width.
    await expectNoClippedTables(page, { scrolling: false, where: 'the contracts list' });
    await screenshot(page, 'contracts-list', false);

    // Next and previous pages, the page in the address.
    await page.getByRole('button', { name: 'Next' }).click();
    await expect.poll(() => rowIds(page), SLOW).toEqual(newest.slice(25, 50));
    await page.getByText('Page 2').waitFor();
    expect(page.url()).toMatch(/[?&]cursor=[^&]+&page=2$/);
    await page.getByRole('button', { name: 'Next' }).click();
    await expect.poll(() => rowIds(page), SLOW).toEqual(newest.slice(50, 75));
    await page.getByRole('button', { name: 'Previous' }).click();
    await expect.poll(() => rowIds(page), SLOW).toEqual(newest.slice(25, 50));
    await page.getByRole('button', { name: 'Previous' }).click();
    await expect.poll(() => rowIds(page), SLOW).toEqual(newest.slice(0, 25));
    expect(await page.getByRole('button', { name: 'Previous' }).isDisabled()).toBe(true);

    // By status: the server filters (a fifth of them are paused).
    await page.getByRole('checkbox', { name: 'Paused' }).check();
    const newestPaused = shop.many.filter((_, i) => (i + 1) % 5 === 3).reverse();
    await expect.poll(() => rowIds(page), SLOW).toEqual(newestPaused.slice(0, 25));
    expect(await page.locator('tbody').getByText('Paused', { exact: true }).count()).toBe(25);
    expect(t.adminCalls.some((c) => c.url.includes('status=PAUSED'))).toBe(true);
    await page.getByRole('checkbox', { name: 'Paused' }).uncheck();

    // By the start of an email, in any case; by a contract number.
    const search = page.getByLabel('Search');
    await search.fill('CUSTOMER0004');
    await expect.poll(() => rowIds(page), SLOW).toEqual(Array.from({ length: 10 }, (_, i) => shop.many[48 - i]));
    expect(t.adminCalls.some((c) => c.url.includes('query=CUSTOMER0004'))).toBe(true);
    await search.fill(shop.many[99]);
    await expect.poll(() => rowIds(page), SLOW).toEqual([shop.many[99]]);
    await search.fill('nobody@');
    await page.getByText('No contracts match “nobody@”').waitFor();
    await search.fill('ada.');
    await expect.poll(() => rowIds(page), SLOW).toEqual([shop.ada.id]);
    const row = page.getByRole('row', { name: /ada\.lovelace@example\.com/ });
    await row.getByText('Active', { exact: true }).waitFor();
    await row.getByText('2 × Coffee 1kg, 1 × Espresso beans 500g').waitFor();
    await expectNoClippedTables(page, { scrolling: false, where: 'a search' });
    await screenshot(page, 'contracts-search', false);

    // The row opens the contract's page; its back arrow returns to the list as it was left.
    await row.getByText('ada.lovelace@example.com').click();
    await page.getByRole('heading', { name: `Contract #${shop.ada.id}` }).waitFor();
    expect(page.url()).toBe(`${s.base}/admin/contracts/${shop.ada.id}`);
    await page.getByTestId('contract-status').getByText('Active').waitFor();
    await page.locator('main').getByRole('link', { name: 'Contracts' }).click();
    await page.getByRole('heading', { name: 'Contracts', exact: true }).waitFor();
    expect(await page.getByLabel('Search').inputValue()).toBe('ada.');
    await expect.poll(() => rowIds(page), SLOW).toEqual([shop.ada.id]);
    await finish();
  });

  it('acts on a contract: pause with a resume date, resume, skip, reschedule, cancel with its confirmation; each recorded as admin', async () => {
    const shop = await smallShop();
    const t = await tab({ width: 1280, height: 900 });
    const { page } = t;
    const id = shop.ada.id;
    await open(t, shop.domain, `/admin/contracts/${id}`);
    await page.getByRole('heading', { name: `Contract #${id}` }).waitFor();
    expect(await page.title()).toBe(`Contract #${id} · svc`);
    const status = page.getByTestId('contract-status');
    await status.getByText('Active').waitFor();
    await page.getByText(when(shop.ada.nextBillingDate), { exact: true }).waitFor();
    // Billing and delivery both: every month.
    expect(await page.getByText('Every month', { exact: true }).count()).toBe(2);
    const products = page.getByRole('list', { name: 'Products' });
    await products.getByText('2 × €24.00').waitFor();
    await products.getByText('€48.00').waitFor();
    await products.getByText('1 × €14.50').waitFor();
    await products.getByText('Variant 52').waitFor();
    await page.getByText('Nothing has happened to this contract yet.').waitFor();
    const actions = async () => (await page.getByRole('group', { name: 'Contract actions' }).getByRole('button').allTextContents()).map((x) => x.trim());
    expect(await actions()).toEqual(['Pause', 'Skip next order', 'Bill now', 'Reschedule', 'Cancel contract']);
    await screenshot(page, 'contract-page');

    // Pause with a resume date.
    const resumeOn = new Date(Date.now() + 30 * DAY);
    await page.getByRole('button', { name: 'Pause', exact: true }).click();
    let d = await dialog(page, `Pause contract #${id}`);
    await d.getByLabel('Resume date (optional)').fill(dayField(resumeOn));
    await screenshot(page, 'contract-pause-dialog', false);
    await d.getByRole('button', { name: 'Pause contract' }).click();
    await status.getByText('Paused').waitFor();
    const resumeAt = new Date(`${dayField(resumeOn)}T00:00:00.000Z`);
    await page.getByText(when(resumeAt), { exact: true }).waitFor();
    await newestEvent(page, id).getByText('Paused', { exact: true }).waitFor();
    await newestEvent(page, id).getByText('By Admin').waitFor();
    await newestEvent(page, id).getByText(new RegExp(`Resumes ${when(resumeAt)}`)).waitFor();
    expect(await actions()).toEqual(['Change pause', 'Resume', 'Reschedule', 'Cancel contract']);
    expect((await contractRow(s.t, id)).resumeAt).toEqual(resumeAt);

    // Resume (the confirmation says when it is next billed), then skip the next order.
    await page.getByRole('button', { name: 'Resume', exact: true }).click();
    d = await dialog(page, `Resume contract #${id}?`);
    await d.getByText(`next billed on ${when(shop.ada.nextBillingDate)}`, { exact: false }).waitFor();
    await d.getByRole('button', { name: 'Resume contract' }).click();
    await status.getByText('Active').waitFor();
    await newestEvent(page, id).getByText('Resumed', { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Skip next order' }).click();
    await newestEvent(page, id).getByText('Next order skipped', { exact: true }).waitFor();
    const skippedTo = (await contractRow(s.t, id)).nextBillingDate;
    expect(skippedTo.getUTCMonth()).toBe((shop.ada.nextBillingDate.getUTCMonth() + 1) % 12);
    await page.getByText(when(skippedTo), { exact: true }).first().waitFor();

    // Reschedule: a new day, at the same time of day.
    const billOn = new Date(Date.now() + 45 * DAY);
    await page.getByRole('button', { name: 'Reschedule', exact: true }).click();
    d = await dialog(page, `Reschedule contract #${id}`);
    expect(await d.getByLabel('New next billing date').inputValue()).toBe(dayField(skippedTo));
    await d.getByLabel('New next billing date').fill(dayField(billOn));
    await d.getByRole('button', { name: 'Change date' }).click();
    await newestEvent(page, id).getByText('Next billing date changed', { exact: true }).waitFor();
    const rescheduledTo = new Date(`${dayField(billOn)}T10:30:00.000Z`);
    expect((await contractRow(s.t, id)).nextBillingDate).toEqual(rescheduledTo);
    await page.getByText(when(rescheduledTo), { exact: true }).first().waitFor();

    // Cancel: a confirmation that says it is final, with a reason; "Keep contract" changes nothing.
    await page.getByRole('button', { name: 'Cancel contract' }).click();
    d = await dialog(page, `Cancel contract #${id}?`);
    await d.getByText('Cancelling is final: a cancelled contract cannot be resumed.', { exact: false }).waitFor();
    await d.getByRole('button', { name: 'Keep contract' }).click();
    await page.getByRole('heading', { name: `Cancel contract #${id}?` }).waitFor({ state: 'detached' });
    expect((await contractRow(s.t, id)).status).toBe('ACTIVE');
    await page.getByRole('button', { name: 'Cancel contract' }).click();
    d = await dialog(page, `Cancel contract #${id}?`);
    await d.getByLabel('Reason (optional)').fill('Moved abroad');
    await screenshot(page, 'contract-cancel-dialog', false);
    await d.getByRole('button', { name: 'Cancel contract' }).click();
    await status.getByText('Cancelled').waitFor();
    await page.locator('#AppFrameMain').getByText('Moved abroad', { exact: true }).waitFor();
    await newestEvent(page, id).getByText('Reason: Moved abroad', { exact: false }).waitFor();
    await page.getByText('A cancelled contract cannot be changed.').waitFor();
    expect(await actions()).toEqual([]);
    await screenshot(page, 'contract-cancelled');

    // Every change is the merchant's, in the admin.
    const events = await eventRows(s.t, id);
    expect(events.map((e) => [e.type, e.actorType])).toEqual([
      ['contract.paused', 'admin'],
      ['contract.resumed', 'admin'],
      ['contract.skipped', 'admin'],
      ['contract.rescheduled', 'admin'],
      ['contract.cancelled', 'admin'],
    ]);
    expect(await history(page, id).getByText('By Admin').count()).toBe(5);
    await finish();
  });

  it('edits a contract: the preview shows the totals before and after, Save applies it, the history says what changed', async () => {
    const shop = await smallShop();
    await seedProducts(s.t.ctx, shop.shopId);
    await createDiscountCode(s.t.ctx, { shopId: shop.shopId, code: 'WELCOME10', percentage: 10 });
    const t = await tab({ width: 1280, height: 900 });
    const { page } = t;
    // Many steps, each a round trip: room for a busy machine.
    page.setDefaultTimeout(20_000);
    const id = shop.ada.id;
    const before = await contractRow(s.t, id);
    await open(t, shop.domain, `/admin/contracts/${id}`);
    await page.getByRole('heading', { name: `Contract #${id}` }).waitFor();
    await page.getByRole('button', { name: 'Edit contract' }).click();
    const d = await dialog(page, `Edit contract #${id}`);

    // Nothing changed yet: nothing to preview.
    expect(await d.getByRole('button', { name: 'Preview changes' }).isDisabled()).toBe(true);
    await d.getByLabel('Quantity of Coffee 1kg').fill('3');
    // The shop's catalog offers the products, with their prices.
    await d.getByLabel('Product of Espresso beans 500g').selectOption({ label: 'Green tea 250g · €11.90' });
    await d.getByLabel('Apply a discount code').fill('welcome10');
    await d.getByRole('button', { name: 'Preview changes' }).click();
    const preview = d.getByRole('region', { name: 'Preview of the edit' });
    await preview.waitFor();
    const totals = async (name: string) => (await preview.getByLabel(name).innerText()).replace(/\s+/g, ' ');
    expect(await totals('Totals now')).toBe('Subtotal €62.50 Discounts €0.00 Shipping €0.00 Total €62.50');
    expect(await totals('Totals after the edit')).toBe('Subtotal €83.90 Discounts −€8.39 Shipping €0.00 Total €75.51');
    await preview.getByText('3 × Coffee 1kg · €72.00').waitFor();
    await preview.getByText('1 × Green tea 250g · €11.90').waitFor();
    await screenshot(page, 'contract-edit-preview', false);
    // The preview changed nothing.
    expect(await contractRow(s.t, id)).toEqual(before);
    expect(await eventRows(s.t, id)).toEqual([]);
    expect(t.adminCalls.filter((c) => c.url.endsWith('/edits'))).toHaveLength(1);

    // Changing the form again needs a new preview before it can be saved.
    await d.getByLabel('Quantity of Coffee 1kg').fill('4');
    await d.getByRole('button', { name: 'Preview changes' }).waitFor();
    expect(await d.getByRole('button', { name: 'Save changes' }).count()).toBe(0);
    await d.getByLabel('Quantity of Coffee 1kg').fill('3');
    await d.getByRole('button', { name: 'Preview changes' }).click();
    await d.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('heading', { name: `Edit contract #${id}` }).waitFor({ state: 'detached' });

    const row = await contractRow(s.t, id);
    expect(row.lines.map((l) => [l.title, l.quantity])).toEqual([['Coffee 1kg', 3], ['Green tea 250g', 1]]);
    expect(row.discounts.map((x) => x.code)).toEqual(['WELCOME10']);
    const products = page.getByRole('list', { name: 'Products' });
    await products.getByText('3 × €24.00').waitFor();
    const newest = newestEvent(page, id);
    await newest.getByText('Edited', { exact: true }).waitFor();
    await newest.getByText('By Admin').waitFor();
    expect(await newest.getByRole('list', { name: 'What changed' }).getByRole('listitem').allInnerTexts()).toEqual([
      'Quantity of “Coffee 1kg”: 2 → 3',
      'Swapped “Espresso beans 500g” for “Green tea 250g” at €11.90',
      'Discount applied: WELCOME10 (10% off)',
    ]);
    await screenshot(page, 'contract-edited');

    // An edit through the API says what changed too, and which key made it.
    const lineId = row.lines[0].id;
    const res = await fetch(`${s.base}/api/v1/subscription-contracts/${id}/edits`, {
      method: 'POST',
      headers: { authorization: `Bearer ${shop.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ operations: [{ op: 'set_frequency', interval: 'WEEK', intervalCount: 2 }, { op: 'remove_line', lineId }] }),
    });
    expect(res.status).toBe(200);
    await page.reload();
    await newestEvent(page, id).getByText(`By API key ${shop.fingerprint}`).waitFor();
    expect(await newestEvent(page, id).getByRole('list', { name: 'What changed' }).getByRole('listitem').allInnerTexts()).toEqual([
      'Frequency: every month → every 2 weeks',
      'Removed 3 × “Coffee 1kg”',
    ]);

    // An edit that cannot apply says which part and why, and changes nothing.
    await page.getByRole('button', { name: 'Edit contract' }).click();
    const again = await dialog(page, `Edit contract #${id}`);
    await again.getByLabel('Remove Green tea 250g').check();
    await again.getByRole('button', { name: 'Preview changes' }).click();
    const alert = again.getByRole('alert');
    await alert.getByText('The edit cannot be made').waitFor();
    await alert.getByText(/Removing “Green tea 250g”: .*last line/).waitFor();
    expect((await contractRow(s.t, id)).lines).toHaveLength(1);
    await finish();
  }, 240_000);

  it('shows what the API and the scheduler did, and a refused action in plain words', async () => {
    const { shopId, domain, key, fingerprint } = await s.t.shopWithKey('enterprise');
    const [paused, resumed, refused] = await s.t.seed(shopId, 3);
    const now = s.t.clock.now();
    const resumeAt = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 30));
    await act(key, paused.id, { action: 'pause', resumeAt: resumeAt.toISOString() });
    await act(key, resumed.id, { action: 'pause', resumeAt: new Date(now.getTime() + 60_000).toISOString() });
    s.t.clock.advance(120_000);
    await resumeDueContracts({ ctx: s.t.ctx, input: {} });

    const t = await tab();
    const { page } = t;
    await open(t, domain, `/admin/contracts/${paused.id}`);
    await page.getByTestId('contract-status').getByText('Paused').waitFor();
    await page.getByText(when(resumeAt), { exact: true }).waitFor();
    await newestEvent(page, paused.id).getByText(`By API key ${fingerprint}`).waitFor();

    await open(t, domain, `/admin/contracts/${resumed.id}`);
    await page.getByTestId('contract-status').getByText('Active').waitFor();
    await newestEvent(page, resumed.id).getByText('By Scheduler (automatic resume)').waitFor();
    await history(page, resumed.id).getByText(`By API key ${fingerprint}`).waitFor();

    // The page is stale: the API cancelled the contract meanwhile. Skip is refused (409) and said so; the page
    // then shows the contract as it is.
    await open(t, domain, `/admin/contracts/${refused.id}`);
    await page.getByRole('button', { name: 'Skip next order' }).waitFor();
    await act(key, refused.id, { action: 'cancel' });
    await page.getByRole('button', { name: 'Skip next order' }).click();
    const alert = page.getByRole('alert');
    await alert.getByText('The next order was not skipped').waitFor();
    await alert.getByText('Cannot skip a contract that is CANCELLED; skip is allowed only from ACTIVE.').waitFor();
    await page.getByTestId('contract-status').getByText('Cancelled').waitFor();
    await screenshot(page, 'contract-refused');

    // An unknown contract says so.
    await open(t, domain, '/admin/contracts/1');
    await page.getByText('This contract does not exist').waitFor();

    // In-app navigation to Settings → API, without reloading the page.
    await page.evaluate(() => ((window as unknown as { marker: number }).marker = 1));
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('link', { name: 'API', exact: true }).first().click();
    await page.getByRole('heading', { name: 'API', exact: true }).waitFor();
    expect(page.url()).toBe(`${s.base}/admin/settings/api`);
    expect(await page.evaluate(() => (window as unknown as { marker?: number }).marker)).toBe(1);
    await finish();
  });

  it('at 375 px: the list fits, searches and pages; the contract page pauses, resumes and cancels with its confirmation', async () => {
    const shop = await bigShop();
    const t = await tab({ width: 375, height: 812 });
    const { page } = t;
    await open(t, shop.domain, '/admin/contracts');
    await page.getByRole('link', { name: `Contract #${shop.ada.id}` }).waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await expectNoClippedTables(page, { where: 'the contracts list on a phone' });
    await screenshot(page, 'contracts-mobile-375', false);
    await page.getByRole('button', { name: 'Next' }).click();
    await expect.poll(() => rowIds(page), SLOW).toEqual([...shop.many].reverse().slice(24, 49));

    await page.getByLabel('Search').fill(`#${shop.ada.id}`);
    await expect.poll(() => rowIds(page), SLOW).toEqual([shop.ada.id]);
    await page.getByRole('link', { name: `Contract #${shop.ada.id}` }).click();
    const id = shop.ada.id;
    const status = page.getByTestId('contract-status');
    await status.getByText('Active').waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await screenshot(page, 'contract-page-mobile-375');

    const resumeOn = new Date(Date.now() + 20 * DAY);
    await page.getByRole('button', { name: 'Pause', exact: true }).click();
    let d = await dialog(page, `Pause contract #${id}`);
    await d.getByLabel('Resume date (optional)').fill(dayField(resumeOn));
    await d.getByRole('button', { name: 'Pause contract' }).click();
    await status.getByText('Paused').waitFor();
    await page.getByText(when(new Date(`${dayField(resumeOn)}T00:00:00.000Z`)), { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Resume', exact: true }).click();
    d = await dialog(page, `Resume contract #${id}?`);
    await d.getByRole('button', { name: 'Resume contract' }).click();
    await status.getByText('Active').waitFor();

    await page.getByRole('button', { name: 'Cancel contract' }).click();
    d = await dialog(page, `Cancel contract #${id}?`);
    await d.getByRole('button', { name: 'Cancel contract' }).click();
    await status.getByText('Cancelled').waitFor();
    await newestEvent(page, id).getByText('By Admin').waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    expect((await eventRows(s.t, id)).map((e) => e.actorType)).toEqual(['admin', 'admin', 'admin']);

    await page.getByRole('button', { name: 'Toggle menu' }).click();
    await page.getByRole('dialog', { name: 'Navigation' }).getByRole('link', { name: 'Contracts' }).waitFor();
    await finish();
  });
});
