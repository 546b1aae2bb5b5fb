import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { generateKey } from '../../src/services/generateKey.js';
import { setShopPlan } from '../../src/services/shops.js';
import { uniqueShop } from '../support/app.js';
import { recorded, written } from '../support/requestLog.js';
import { describeInBrowser, ensureAdminUiBuilt, launch, openTab, screenshot, serve, type Served, type Tab } from './browser.js';
import { expectNoClippedTables } from './clipping.js';

describeInBrowser('admin UI: Settings → API → a key → its requests, in a real browser', () => {
  let s: Served;
  let browser: Browser;
  const tabs: Tab[] = [];

  beforeAll(async () => {
    await ensureAdminUiBuilt();
    s = await serve();
    browser = await launch();
  });
  afterAll(async () => {
    await browser?.close();
    await s?.t.close();
  });

  const tab = async (opts?: Parameters<typeof openTab>[1]) => {
    const t = await openTab(browser, opts);
    tabs.push(t);
    return t;
  };
  const afterEach = () => {
    for (const t of tabs.splice(0)) {
      expect(t.external, 'the standalone page loads nothing from another origin').toEqual([]);
      expect(t.errors, 'no script errors').toEqual([]);
      void t.context.close().catch(() => {});
    }
  };

  /** A shop whose key "ERP sync" made four requests: a read, an action with an idempotency key, a miss, an MCP call. */
  const shopWithRequests = async () => {
    const domain = uniqueShop('log');
    const shop = await setShopPlan({ ctx: s.t.ctx, input: { domain, plan: 'enterprise' } });
    const { key, secret } = await generateKey({ ctx: s.t.ctx, input: { shopId: shop.id, name: 'ERP sync' } });
    const [c] = await s.t.seed(shop.id, 1);
    const auth = { authorization: `Bearer ${secret}` };
    const json = { ...auth, 'content-type': 'application/json', 'user-agent': 'erp-sync/4.2 (+https://erp.example)' };
    const start = recorded(s.t);
    expect((await fetch(`${s.base}/api/v1/subscription-contracts/${c.id}`, { headers: auth })).status).toBe(200);
    const action = await fetch(`${s.base}/api/v1/subscription-contracts/${c.id}/actions`, {
      method: 'POST',
      headers: { ...json, 'idempotency-key': 'erp-pause-000123' },
      body: JSON.stringify({ action: 'pause', resumeAt: new Date(Date.now() + 30 * 86_400_000).toISOString() }),
    });
    expect(action.status).toBe(200);
    expect((await fetch(`${s.base}/api/v1/subscription-contracts/99999999999/events?limit=5`, { headers: auth })).status).toBe(404);
    const mcp = await fetch(`${s.base}/mcp`, {
      method: 'POST',
      headers: { ...json, accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_subscription_contract', arguments: { contractId: c.id } } }),
    });
    expect(mcp.status).toBe(200);
    await written(s.t, start + 4);
    return { domain, keyId: key.id, contractId: c.id, actionRequestId: action.headers.get('x-request-id')! };
  };

  const openRequests = async (t: Tab, domain: string) => {
    await t.page.goto(`${s.base}/admin#token=${await s.t.sessionToken(domain)}`);
    await t.page.getByRole('link', { name: 'Requests of ERP sync' }).click();
    await t.page.getByRole('heading', { name: 'Requests: ERP sync' }).waitFor();
    await t.page.getByRole('region', { name: 'Requests of ERP sync' }).waitFor();
  };
  const rows = (t: Tab) => t.page.getByRole('region', { name: 'Requests of ERP sync' }).locator('tr[id^="request-"]:not([id$="-detail"]), li[id^="request-"]');

  it('from the keys table to a key\'s requests: filters by status, path and time, and a row opens to its details', async () => {
    const { domain, contractId, actionRequestId } = await shopWithRequests();
    const t = await tab({ width: 1280, height: 900 });
    const { page } = t;
    await openRequests(t, domain);
    await expect.poll(() => rows(t).count()).toBe(4);
    // Newest first: the MCP call, then the miss, the action, the read.
    await expect.poll(() => rows(t).first().textContent()).toContain('/mcp');
    expect(await rows(t).first().textContent()).toContain('get_subscription_contract');
    expect(await rows(t).last().textContent()).toContain(`/api/v1/subscription-contracts/${contractId}`);
    await screenshot(page, 'request-log-1280');

    // Status class: only the 404.
    await page.getByLabel('Status').selectOption('4xx');
    await expect.poll(() => rows(t).count()).toBe(1);
    expect(await rows(t).first().textContent()).toMatch(/404.*not_found/);
    await page.getByLabel('Status').selectOption('');
    await expect.poll(() => rows(t).count()).toBe(4);

    // Path: the action only.
    await page.getByLabel('Path contains').fill('/actions');
    await expect.poll(() => rows(t).count()).toBe(1);
    await page.getByRole('button', { name: /Show the details of POST/ }).click();
    const details = page.getByRole('region', { name: `Details of request ${actionRequestId}` });
    await details.waitFor();
    const text = (await details.textContent()) ?? '';
    for (const expected of ['erp-pause-000123', actionRequestId, 'erp-sync/4.2 (+https://erp.example)', '127.0.0.1', 'Idempotency key', 'Key fingerprint']) {
      expect(text).toContain(expected);
    }
    await expectNoClippedTables(page, { scrolling: false, where: 'the request log at 1280 px, a row opened' });
    await screenshot(page, 'request-log-1280-details');

    // Time: before a moment long ago, nothing; the page says so and offers to clear the filters.
    await page.getByLabel('Path contains').fill('');
    await page.getByLabel('Before').fill('2020-01-01T00:00');
    await page.getByText('No requests match these filters').waitFor();
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await expect.poll(() => rows(t).count()).toBe(4);
    afterEach();
  });

  it('a refused MCP tool call is not a green 200: it shows as a tool error with the status and code of its refusal', async () => {
    const domain = uniqueShop('log-mcp');
    const shop = await setShopPlan({ ctx: s.t.ctx, input: { domain, plan: 'enterprise' } });
    const { secret } = await generateKey({ ctx: s.t.ctx, input: { shopId: shop.id, name: 'ERP sync', access: 'read_only' } });
    const [c] = await s.t.seed(shop.id, 1);
    const start = recorded(s.t);
    const call = async (name: string) => {
      const res = await fetch(`${s.base}/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: { contractId: c.id } } }),
      });
      expect(res.status).toBe(200);
      return res.json();
    };
    expect((await call('pause_subscription_contract')).result.isError).toBe(true);
    s.t.clock.advance(1);
    expect((await call('get_subscription_contract')).result.isError).toBeUndefined();
    await written(s.t, start + 2);

    const t = await tab({ width: 1280, height: 900 });
    const { page } = t;
    page.setDefaultTimeout(20_000);
    await openRequests(t, domain);
    await expect.poll(() => rows(t).count()).toBe(2);
    const [read, refused] = [rows(t).first(), rows(t).last()];
    await refused.getByText('pause_subscription_contract').waitFor();
    const badge = refused.locator('.Polaris-Badge');
    // (A badge with a tone also says the tone to a screen reader, in text hidden from sight.)
    expect(await badge.innerText()).toMatch(/(^|\n)Tool error 403$/);
    expect(await badge.getAttribute('class')).not.toContain('toneSuccess');
    await refused.getByText('insufficient_scope').waitFor();
    expect(await read.locator('.Polaris-Badge').innerText()).toMatch(/(^|\n)200$/);
    expect(await read.locator('.Polaris-Badge').getAttribute('class')).toContain('toneSuccess');
    await page.getByRole('button', { name: /Show the details of POST/ }).last().click();
    await page.getByText('200 (the MCP answer); the tool call was refused with 403, as the API refuses insufficient_scope').waitFor();
    await screenshot(page, 'request-log-mcp-refused');

    // Looking for failures finds it; looking for successes does not.
    const shown = async () => (await rows(t).allTextContents()).map((r) => /(pause|get)_subscription_contract/.exec(r)?.[0]);
    await page.getByLabel('Status').selectOption('4xx');
    await expect.poll(shown).toEqual(['pause_subscription_contract']);
    await page.getByLabel('Status').selectOption('2xx');
    await expect.poll(shown).toEqual(['get_subscription_contract']);
    afterEach();
  });

  it('no column is cut off: every one in sight at 1280 px, on the screen at 375 px, details opened', async () => {
    const { domain } = await shopWithRequests();
    for (const [width, height] of [[1280, 800], [375, 812]]) {
      const t = await tab({ width, height });
      await openRequests(t, domain);
      await expect.poll(() => rows(t).count()).toBe(4);
      // Each opened row's button becomes "Hide …": open the first closed one until none is left.
      const closed = t.page.getByRole('button', { name: /Show the details of/ });
      for (let i = 0; i < 4; i++) await closed.first().click();
      await expect.poll(() => t.page.getByRole('region', { name: /^Details of request/ }).count()).toBe(4);
      await expectNoClippedTables(t.page, { scrolling: width < 1280, where: `the request log at ${width} px` });
      expect(await t.page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
      await screenshot(t.page, `request-log-${width}-all-details`);
    }
    afterEach();
  });
});
