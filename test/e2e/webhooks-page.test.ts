import type { Browser, Locator, Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { RETRY_DELAYS_MS, WEBHOOK_EVENT_TYPES, webhookEventTypeList } from '../../src/domain/webhooks.js';
import { adminPrincipal } from '../../src/services/principal.js';
import { sendTestWebhook } from '../../src/services/webhookDeliveries.js';
import { createWebhookEndpoint, getWebhookEndpoint, listWebhookEndpoints } from '../../src/services/webhookEndpoints.js';
import { setShopPlan } from '../../src/services/shops.js';
import { WebhookDispatcher } from '../../src/workers/webhookDispatcher.js';
import { uniqueShop } from '../support/app.js';
import { startReceiver, type Received } from '../support/receiver.js';
import { describeInBrowser, ensureAdminUiBuilt, launch, openTab, screenshot, serve, type Served, type Tab } from './browser.js';
import { expectNoClippedTables } from './clipping.js';

/**
 * Settings → Webhooks in a real browser against a real server and a local receiver. Deliveries go out when the test
 * runs the dispatcher's round (tick), and the server's clock is moved to walk a delivery through its retry schedule;
 * every step a merchant takes goes through the page.
 */
describeInBrowser('admin UI: Settings → Webhooks in a real browser', () => {
  let s: Served;
  let browser: Browser;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let dispatcher: WebhookDispatcher;
  const tabs: Tab[] = [];

  beforeAll(async () => {
    await ensureAdminUiBuilt();
    s = await serve();
    receiver = await startReceiver();
    dispatcher = new WebhookDispatcher(s.t.ctx, { random: () => 0.5 });
    browser = await launch();
  });
  afterAll(async () => {
    await browser?.close();
    await receiver?.close();
    await s?.t.close();
  });

  const shopOn = async () => {
    const domain = uniqueShop('hooks');
    const shop = await setShopPlan({ ctx: s.t.ctx, input: { domain, plan: 'enterprise' } });
    const principal = adminPrincipal(shop.id);
    return { domain, shopId: shop.id, principal };
  };
  const tab = async (opts?: Parameters<typeof openTab>[1]) => {
    const t = await openTab(browser, opts);
    tabs.push(t);
    return t;
  };
  // A token signed at the server's clock: after the clock moved days ahead, reopening the page gives it a valid one.
  const open = async (t: Tab, domain: string) => {
    // From a blank page: a new fragment on the same address would not load the app again.
    await t.page.goto('about:blank');
    await t.page.goto(`${s.base}/admin/settings/webhooks#token=${await s.t.sessionToken(domain)}`);
    await t.page.getByRole('heading', { name: 'Webhooks', exact: true }).waitFor();
  };
  const done = () => {
    for (const t of tabs.splice(0)) {
      expect(t.external, 'the page loads nothing from another origin').toEqual([]);
      expect(t.errors, 'no script errors').toEqual([]);
      expect(t.adminCalls.every((c) => c.authorization?.startsWith('Bearer ey')), 'every admin call carries the session token').toBe(true);
      void t.context.close().catch(() => {});
    }
    receiver.down = false;
    receiver.answers.length = 0;
  };
  const card = (page: Page, url: string) => page.getByRole('region', { name: url, exact: true });
  const deliveryRow = (c: Locator, text: string | RegExp) => c.getByRole('row', { name: text }).first();
  const gotAt = (path: string) => receiver.received.filter((r) => r.path === path);
  const sendTestFromPage = async (page: Page, c: Locator, type: string) => {
    await c.getByRole('button', { name: 'Send test event' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Event type').selectOption(type);
    await dialog.getByRole('button', { name: 'Send test event' }).click();
    await dialog.waitFor({ state: 'detached' });
  };
  const verified = (secret: string, r: Received) =>
    new Webhook(secret).verify(r.body, r.headers as Record<string, string>) as { type: string; data: { event: { data: Record<string, unknown> } } };
  /** Walks the deliveries due now through every retry (the server's clock moves about 3 days). */
  const exhaustRetries = async () => {
    await dispatcher.tick();
    for (const delay of RETRY_DELAYS_MS) {
      s.t.clock.advance(delay);
      await dispatcher.tick();
    }
  };

  it('adds an endpoint with an event filter (a refused URL is shown on its field), reveals its secret; deliveries are signed with it and logged', async () => {
    const { domain, shopId, key } = await s.t.shopWithKey('enterprise');
    const [contract] = await s.t.seed(shopId, 1);
    const t = await tab({ clipboard: true });
    const { page } = t;

    // Reached from Settings, in the app, without reloading.
    await page.goto(`${s.base}/admin/settings#token=${await s.t.sessionToken(domain)}`);
    await page.getByRole('main').getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('heading', { name: 'Webhooks', exact: true }).waitFor();
    expect(page.url()).toBe(`${s.base}/admin/settings/webhooks`);
    await page.getByText('No webhook endpoints yet').waitFor();
    await page.getByText('0 of 10 endpoints').waitFor();
    await page.getByRole('heading', { name: 'Verify signatures' }).waitFor();
    await screenshot(page, 'webhooks-empty');

    await page.getByRole('button', { name: 'Add endpoint' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText('Only the events I choose').click();
    // The choices are exactly the server's event types.
    expect(await dialog.getByRole('checkbox').count()).toBe(WEBHOOK_EVENT_TYPES.length);
    for (const type of WEBHOOK_EVENT_TYPES) expect(await dialog.getByRole('checkbox', { name: type, exact: true }).count()).toBe(1);
    // Each with what it means, as the server describes it (one list: GET /admin/api/webhook-event-types).
    expect(t.adminCalls.some((c) => c.url === '/admin/api/webhook-event-types')).toBe(true);
    for (const { type, description } of webhookEventTypeList()) {
      const box = dialog.getByRole('checkbox', { name: type, exact: true });
      const describedBy = (await box.getAttribute('aria-describedby')) ?? '';
      const help = await page.evaluate((ids) => ids.split(' ').map((id) => document.getElementById(id)?.textContent ?? '').join(' '), describedBy);
      expect(help, type).toContain(description);
    }

    // The server refuses plain http to a public host: its reason is on the URL field and in the banner.
    const urlField = dialog.getByLabel('Endpoint URL');
    await urlField.fill('http://example.com/hooks');
    await dialog.getByRole('checkbox', { name: 'contract.paused', exact: true }).check();
    await dialog.getByRole('button', { name: 'Add endpoint' }).click();
    await dialog.getByRole('alert').getByText('The endpoint was not added').waitFor();
    await dialog.getByRole('alert').getByText(/invalid_request/).waitFor();
    await expect.poll(() => urlField.getAttribute('aria-invalid')).toBe('true');
    const describedBy = (await urlField.getAttribute('aria-describedby')) ?? '';
    const fieldError = await page.evaluate((ids) => ids.split(' ').map((id) => document.getElementById(id)?.textContent ?? '').join(' '), describedBy);
    expect(fieldError).toMatch(/must be an https:\/\/ URL/);
    await screenshot(page, 'webhooks-add-refused');

    const url = `${receiver.url}/shop-a`;
    await urlField.fill(url);
    await dialog.getByLabel('Description (optional)').fill('ERP sync');
    await dialog.getByRole('checkbox', { name: 'contract.cancelled', exact: true }).check();
    await dialog.getByRole('button', { name: 'Add endpoint' }).click();
    await dialog.waitFor({ state: 'detached' });

    const c = card(page, url);
    await c.getByText('Enabled', { exact: true }).waitFor();
    await c.getByText('ERP sync').waitFor();
    await c.getByText('contract.paused', { exact: true }).waitFor();
    await c.getByText('contract.cancelled', { exact: true }).waitFor();
    await page.getByText('1 of 10 endpoints').waitFor();

    // The secret is on screen only on request, and copies.
    expect(await page.content()).not.toMatch(/whsec_/);
    await c.getByRole('button', { name: 'Reveal signing secret' }).click();
    const secret = await c.getByLabel('Signing secret').inputValue();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    await c.getByRole('button', { name: 'Copy secret' }).click();
    await c.getByText('Secret copied to the clipboard.').waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);
    await c.getByRole('button', { name: 'Hide secret' }).click();
    expect(await page.content()).not.toContain(secret);

    // A test event: queued, sent by the dispatcher, and the open log shows it succeeded without a click.
    await sendTestFromPage(page, c, 'contract.cancelled');
    const testRow = deliveryRow(c, /contract\.cancelled/);
    await testRow.getByText('Test', { exact: true }).waitFor();
    await dispatcher.tick();
    await receiver.waitFor(1);
    await testRow.getByText('Succeeded').waitFor();
    await testRow.getByText('HTTP 200').waitFor();
    const [testDelivery] = gotAt('/shop-a');
    const testEvent = verified(secret, testDelivery);
    expect(testEvent.type).toBe('contract.cancelled');
    expect(testEvent.data.event.data).toEqual({ test: true });

    // Real changes: a pause passes the filter, a resume does not.
    for (const action of [{ action: 'pause' }, { action: 'resume' }]) {
      const res = await fetch(`${s.base}/api/v1/subscription-contracts/${contract.id}/actions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(action),
      });
      expect(res.status).toBe(200);
      await dispatcher.tick();
    }
    const got = gotAt('/shop-a');
    expect(got.map((r) => verified(secret, r).type)).toEqual(['contract.cancelled', 'contract.paused']);
    await c.getByRole('button', { name: 'Refresh the delivery log' }).click();
    const pauseRow = deliveryRow(c, /contract\.paused/);
    await pauseRow.getByText(`Contract #${contract.id}`, { exact: false }).waitFor();
    await pauseRow.getByText('Succeeded').waitFor();
    expect(await c.getByRole('row', { name: /contract\.resumed/ }).count()).toBe(0);
    await expectNoClippedTables(page, { scrolling: false, where: 'the delivery log' });
    await screenshot(page, 'webhooks-endpoint-log');
    done();
  });

  it('a failing receiver: the failed delivery, its attempts, Resend from the log; rotation signs with both secrets', async () => {
    const { domain, principal } = await shopOn();
    const url = `${receiver.url}/shop-b`;
    await createWebhookEndpoint({ ctx: s.t.ctx, input: { principal, body: { url, events: ['*'] } } });
    const t = await tab();
    const { page } = t;
    await open(t, domain);
    let c = card(page, url);
    await c.getByText('All events').waitFor();

    receiver.down = true;
    await sendTestFromPage(page, c, 'contract.paused');
    await exhaustRetries();
    expect(gotAt('/shop-b')).toEqual([]);

    // Three days later (the server's clock): the page, opened again, shows the delivery failed after every attempt.
    await open(t, domain);
    c = card(page, url);
    await c.getByRole('button', { name: 'Show delivery log' }).click();
    const row = deliveryRow(c, /contract\.paused/);
    await row.getByText('Failed', { exact: true }).waitFor();
    await row.getByText(/connection failed/).waitFor();
    await row.getByRole('cell', { name: String(RETRY_DELAYS_MS.length + 1), exact: true }).waitFor();
    await row.getByRole('button', { name: /Show the attempts/ }).click();
    const attempts = c.getByRole('list', { name: /^Attempts of delivery/ });
    await expect.poll(() => attempts.getByRole('listitem').count()).toBe(RETRY_DELAYS_MS.length + 1);
    const webhookId = await c.getByText(/^msg_\d+$/).first().textContent();
    // The longest row: an error for its last answer, and its attempts open below it.
    await expectNoClippedTables(page, { scrolling: false, where: 'a failed delivery with its attempts' });
    await screenshot(page, 'webhooks-delivery-failed');

    // The receiver is back: Resend sends it again, with the same webhook-id.
    receiver.down = false;
    await row.getByRole('button', { name: /^Resend delivery/ }).click();
    await row.getByText('Pending', { exact: true }).waitFor();
    await page.getByText('Delivery queued to be sent again').waitFor();
    await dispatcher.tick();
    const [resent] = gotAt('/shop-b');
    expect(resent.headers['webhook-id']).toBe(webhookId);
    await c.getByRole('button', { name: 'Refresh the delivery log' }).click();
    await row.getByText('Succeeded').waitFor();

    // Rotation: the dialog explains the overlap; afterwards each delivery carries a signature for each secret.
    await c.getByRole('button', { name: 'Reveal signing secret' }).click();
    const oldSecret = await c.getByLabel('Signing secret').inputValue();
    await c.getByRole('button', { name: 'Rotate secret' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText(/keeps signing every delivery beside the new one for/).waitFor();
    await dialog.getByText('24 hours', { exact: true }).waitFor();
    await screenshot(page, 'webhooks-rotate-confirm');
    await dialog.getByRole('button', { name: 'Rotate secret' }).click();
    const newSecret = await dialog.getByLabel('New signing secret').inputValue();
    expect(newSecret).toMatch(/^whsec_/);
    expect(newSecret).not.toBe(oldSecret);
    await dialog.getByRole('button', { name: 'Done' }).click();
    await dialog.waitFor({ state: 'detached' });
    await c.getByRole('button', { name: 'Reveal signing secret' }).click();
    expect(await c.getByLabel('Signing secret').inputValue()).toBe(newSecret);
    await c.getByText(/The previous secret also signs every delivery until/).waitFor();

    const before = gotAt('/shop-b').length;
    await sendTestFromPage(page, c, 'contract.resumed');
    await dispatcher.tick();
    const signed = gotAt('/shop-b')[before];
    expect(String(signed.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verified(newSecret, signed).type).toBe('contract.resumed');
    expect(verified(oldSecret, signed).type).toBe('contract.resumed');
    done();
  });

  it('says why an endpoint was disabled (5 days failing, 410 Gone, by hand); enabling it offers to resend what failed; edit and delete', async () => {
    const { domain, principal } = await shopOn();
    const url = `${receiver.url}/shop-c`;
    const { endpoint } = await createWebhookEndpoint({ ctx: s.t.ctx, input: { principal, body: { url, description: 'Fulfilment', events: ['*'] } } });

    // The receiver is down for 5 days: the first delivery runs out of attempts (about 3 days), and the next failure
    // past 5 days disables the endpoint.
    receiver.down = true;
    const first = await sendTestWebhook({ ctx: s.t.ctx, input: { principal, endpointId: endpoint.id, body: { type: 'contract.paused' } } });
    await dispatcher.tick();

    // Failing but still enabled: the page says since when, and what happens after 5 days.
    const t = await tab();
    const { page } = t;
    await open(t, domain);
    const c = card(page, url);
    await c.getByText('Enabled', { exact: true }).waitFor();
    await c.getByText(/^Failing since /).waitFor();

    await exhaustRetries();
    await sendTestWebhook({ ctx: s.t.ctx, input: { principal, endpointId: endpoint.id, body: { type: 'contract.skipped' } } });
    await dispatcher.tick();
    s.t.clock.advance(2 * 24 * 3600 * 1000);
    await dispatcher.tick();
    expect(await getWebhookEndpoint({ ctx: s.t.ctx, input: { principal, id: endpoint.id } })).toMatchObject({ status: 'disabled', disabledReason: 'failing' });

    await open(t, domain);
    await c.getByText('Disabled', { exact: true }).waitFor();
    await c.getByText('Disabled: every delivery failed for 5 days').waitFor();
    await c.getByText(/^Disabled .*\d.*\.$/).waitFor();
    expect(await c.getByText(/^Failing since /).count()).toBe(0);
    await screenshot(page, 'webhooks-disabled-failing');

    // Enabled again, the page offers to resend the delivery that failed meanwhile.
    receiver.down = false;
    await c.getByRole('button', { name: 'Enable endpoint' }).click();
    await c.getByText('Enabled', { exact: true }).waitFor();
    await c.getByText('1 delivery failed while this endpoint was off').waitFor();
    await screenshot(page, 'webhooks-resend-offer');
    await c.getByRole('button', { name: 'Resend 1 failed delivery' }).click();
    await page.getByText('1 failed delivery queued again').waitFor();
    expect(await c.getByText('1 delivery failed while this endpoint was off').count()).toBe(0);
    await dispatcher.tick();
    await expect.poll(() => gotAt('/shop-c').map((r) => r.headers['webhook-id'])).toContain(first.webhookId);
    await c.getByRole('button', { name: 'Refresh the delivery log' }).click();
    await deliveryRow(c, /contract\.paused/).getByText('Succeeded').waitFor();

    // 410 Gone disables it at once, and the page says the receiver asked for that.
    receiver.answers.push({ status: 410, body: 'gone' });
    await sendTestFromPage(page, c, 'contract.cancelled');
    await dispatcher.tick();
    await c.getByRole('button', { name: 'Refresh the delivery log' }).click();
    await c.getByText('Disabled: the receiver answered 410 Gone').waitFor();
    const goneRow = deliveryRow(c, /contract\.cancelled/);
    await goneRow.getByText('Failed', { exact: true }).waitFor();
    await goneRow.getByText('HTTP 410').waitFor();
    await c.getByRole('button', { name: 'Enable endpoint' }).click();
    await c.getByText('1 delivery failed while this endpoint was off').waitFor();
    await c.getByRole('button', { name: 'Don’t resend' }).click();
    expect(await c.getByText('1 delivery failed while this endpoint was off').count()).toBe(0);

    // By hand: disabled, said so, enabled again with nothing to offer. (The server's clock stands still unless
    // moved: a second passes, so the disabling comes after the failure above, as it would in real time.)
    // A delivery not yet sent when it is disabled waits, and the log says so; it goes once the endpoint is enabled.
    s.t.clock.advance(1000);
    const held = await sendTestWebhook({ ctx: s.t.ctx, input: { principal, endpointId: endpoint.id, body: { type: 'contract.rescheduled' } } });
    await c.getByRole('button', { name: 'Disable', exact: true }).click();
    await c.getByText('Disabled by hand').waitFor();
    await dispatcher.tick();
    await c.getByRole('button', { name: 'Refresh the delivery log' }).click();
    await deliveryRow(c, /contract\.rescheduled/).getByText('Held while the endpoint is disabled').waitFor();
    await c.getByRole('button', { name: 'Enable', exact: true }).click();
    await c.getByText('Enabled', { exact: true }).waitFor();
    await page.getByText('Endpoint enabled').waitFor();
    expect(await c.getByText(/failed while this endpoint was off/).count()).toBe(0);
    await dispatcher.tick();
    await expect.poll(() => gotAt('/shop-c').map((r) => r.headers['webhook-id'])).toContain(held.webhookId);
    await c.getByRole('button', { name: 'Refresh the delivery log' }).click();
    await deliveryRow(c, /contract\.rescheduled/).getByText('Succeeded').waitFor();

    // Edit the filter: from all events to resumes only.
    await c.getByRole('button', { name: 'Edit', exact: true }).click();
    const dialog = page.getByRole('dialog');
    expect(await dialog.getByLabel('Endpoint URL').inputValue()).toBe(url);
    await dialog.getByText('Only the events I choose').click();
    await dialog.getByRole('checkbox', { name: 'contract.resumed', exact: true }).check();
    await dialog.getByRole('button', { name: 'Save' }).click();
    await dialog.waitFor({ state: 'detached' });
    await c.getByText('contract.resumed', { exact: true }).waitFor();
    expect(await c.getByText('All events').count()).toBe(0);
    expect((await getWebhookEndpoint({ ctx: s.t.ctx, input: { principal, id: endpoint.id } })).events).toEqual(['contract.resumed']);

    // Delete, after a confirmation naming the URL.
    await c.getByRole('button', { name: 'Delete', exact: true }).click();
    await dialog.getByRole('heading', { name: 'Delete this webhook endpoint?' }).waitFor();
    await dialog.getByText(url).waitFor();
    await screenshot(page, 'webhooks-delete-confirm');
    await dialog.getByRole('button', { name: 'Delete endpoint' }).click();
    await dialog.waitFor({ state: 'detached' });
    await page.getByText('No webhook endpoints yet').waitFor();
    expect((await listWebhookEndpoints({ ctx: s.t.ctx, input: { principal } })).endpoints).toEqual([]);
    done();
  });

  it('at 10 endpoints Add is disabled with the reason; readable at 375 px', async () => {
    const { domain, principal } = await shopOn();
    for (let i = 0; i < 10; i++) {
      await createWebhookEndpoint({ ctx: s.t.ctx, input: { principal, body: { url: `${receiver.url}/shop-d/${i}`, events: i % 2 ? ['contract.paused'] : ['*'] } } });
    }
    const { id } = (await listWebhookEndpoints({ ctx: s.t.ctx, input: { principal } })).endpoints.find((e) => e.url.endsWith('/shop-d/0'))!;
    await sendTestWebhook({ ctx: s.t.ctx, input: { principal, endpointId: id, body: { type: 'contract.rescheduled' } } });
    await dispatcher.tick();

    const t = await tab({ width: 375, height: 812 });
    const { page } = t;
    await open(t, domain);
    await page.getByText('10 of 10 endpoints').waitFor();
    const add = page.getByRole('button', { name: 'Add endpoint' });
    expect(await add.isDisabled()).toBe(true);
    expect(await add.getAttribute('aria-describedby')).toBe('add-endpoint-disabled-reason');
    await page.getByText('This store has 10 webhook endpoints, the most it can have. Delete one to add another.').waitFor();

    const c = card(page, `${receiver.url}/shop-d/0`);
    await c.getByRole('button', { name: 'Show delivery log' }).click();
    // Narrow, the log is a list of stacked entries rather than a table.
    const log = c.getByRole('region', { name: /^Deliveries to/ });
    await log.getByText('contract.rescheduled').waitFor();
    await log.getByText('Succeeded').waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await expectNoClippedTables(page, { where: 'the delivery log on a phone' });
    await page.evaluate(() => window.scrollTo(0, 0));
    await screenshot(page, 'webhooks-mobile-375-top', false);
    await log.scrollIntoViewIfNeeded();
    await screenshot(page, 'webhooks-mobile-375-log', false);
    done();
  });
});
