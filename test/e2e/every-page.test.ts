import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createDiscountCode } from '../../src/services/catalog.js';
import { createWebhookEndpoint } from '../../src/services/webhookEndpoints.js';
import { adminPrincipal } from '../../src/services/principal.js';
import { contractRow } from '../support/fixtures.js';
import { keyIdOf, recorded, written } from '../support/requestLog.js';
import { describeInBrowser, ensureAdminUiBuilt, launch, openTab, screenshot, serve, type Served, type Tab } from './browser.js';

/**
 * Every page of the admin, in a real browser: the tab's title names the page (never "Page not found" for a page that
 * exists), and axe-core finds nothing serious or critical on it, in the state a merchant sees it (data on it, a
 * dialog open, details expanded).
 */

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

type Finding = { id: string; impact: string | null; help: string; nodes: { target: unknown[]; failureSummary?: string }[] };

/** axe-core's findings on the page as it is now, serious and critical only. */
async function seriousFindings(page: Page): Promise<string[]> {
  // Evaluated through the browser's debugging protocol, so the page's Content-Security-Policy (script-src 'self')
  // does not stop it, and the page itself is not changed to let it in.
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE_SOURCE);
  const violations = (await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(ctx: Document, opts: object): Promise<{ violations: unknown[] }> } }).axe;
    return (await axe.run(document, { resultTypes: ['violations'] })).violations;
  })) as Finding[];
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id}: ${v.help}\n${v.nodes.map((n) => `  at ${JSON.stringify(n.target)}${n.failureSummary ? `: ${n.failureSummary.replace(/\s+/g, ' ')}` : ''}`).join('\n')}`);
}

describeInBrowser('admin UI: every page has its title and passes axe-core (nothing serious or critical)', () => {
  let s: Served;
  let browser: Browser;
  let shop: { domain: string; shopId: string; key: string; keyId: string; contractId: string };
  const tabs: Tab[] = [];

  beforeAll(async () => {
    await ensureAdminUiBuilt();
    s = await serve();
    browser = await launch();
    // A shop with something on every page: contracts (one edited, one paused), a key that made requests (one refused),
    // a webhook endpoint.
    const { domain, shopId, key } = await s.t.shopWithKey('enterprise');
    const [c, other] = await s.t.seed(shopId, 3);
    await createDiscountCode(s.t.ctx, { shopId, code: 'WELCOME10', percentage: 10 });
    const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const start = recorded(s.t);
    const lineId = (await contractRow(s.t, c.id)).lines[0].id;
    const edited = await fetch(`${s.base}/api/v1/subscription-contracts/${c.id}/edits`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ operations: [{ op: 'set_quantity', lineId, quantity: 4 }, { op: 'apply_discount_code', code: 'WELCOME10' }] }),
    });
    expect(edited.status).toBe(200);
    const paused = await fetch(`${s.base}/api/v1/subscription-contracts/${other.id}/actions`, { method: 'POST', headers: auth, body: JSON.stringify({ action: 'pause' }) });
    expect(paused.status).toBe(200);
    expect((await fetch(`${s.base}/api/v1/subscription-contracts/99999999999`, { headers: auth })).status).toBe(404);
    await written(s.t, start + 3);
    await createWebhookEndpoint({ ctx: s.t.ctx, input: { principal: adminPrincipal(shopId), body: { url: 'http://127.0.0.1:9/hooks/svc', description: 'ERP sync', events: ['*'] } } });
    shop = { domain, shopId, key, keyId: await keyIdOf(s.t, shopId), contractId: c.id };
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await s?.t.close();
  });

  const open = async (path: string) => {
    const t = await openTab(browser, { width: 1280, height: 900 });
    tabs.push(t);
    // Every page of the admin, one after the other, on a machine that may be busy: more room than one test's steps.
    t.page.setDefaultTimeout(20_000);
    await t.page.goto(`${s.base}${path}#token=${await s.t.sessionToken(shop.domain)}`);
    return t;
  };
  const finish = async () => {
    for (const t of tabs.splice(0)) {
      expect(t.errors, 'no script errors').toEqual([]);
      await t.context.close().catch(() => {});
    }
  };

  /** Each page: its path, the title its tab must have, and what shows once it has loaded. */
  const pages = (): { name: string; path: string; title: string; ready: (p: Page) => Promise<unknown> }[] => [
    { name: 'contracts', path: '/admin/contracts', title: 'Contracts · svc', ready: (p) => p.getByRole('link', { name: `Contract #${shop.contractId}` }).waitFor() },
    { name: 'a contract', path: `/admin/contracts/${shop.contractId}`, title: `Contract #${shop.contractId} · svc`, ready: (p) => p.getByRole('list', { name: 'What changed' }).waitFor() },
    { name: 'renewals', path: '/admin/renewals', title: 'Renewals · svc', ready: (p) => p.getByRole('heading', { name: 'Renewals', exact: true }).waitFor() },
    { name: 'settings', path: '/admin/settings', title: 'Settings · svc', ready: (p) => p.getByRole('main').getByRole('link', { name: 'Webhooks' }).waitFor() },
    { name: 'settings API', path: '/admin/settings/api', title: 'Settings → API · svc', ready: (p) => p.getByTestId('usage-read').waitFor() },
    { name: 'settings billing', path: '/admin/settings/billing', title: 'Settings → Billing · svc', ready: (p) => p.getByRole('button', { name: /Save/ }).first().waitFor() },
    { name: 'webhooks', path: '/admin/settings/webhooks', title: 'Settings → Webhooks · svc', ready: (p) => p.getByText('http://127.0.0.1:9/hooks/svc').first().waitFor() },
    {
      name: 'a key\'s requests',
      path: `/admin/settings/api/keys/${shop.keyId}/requests`,
      title: 'Requests of a key · Settings → API · svc',
      ready: (p) => p.getByText('not_found').first().waitFor(),
    },
    { name: 'not found', path: '/admin/no-such-page', title: 'Page not found · svc', ready: (p) => p.getByText(/not found/i).first().waitFor() },
  ];

  it('every page: the tab\'s title names it', async () => {
    for (const p of pages()) {
      const { page } = await open(p.path);
      await p.ready(page);
      await expect.poll(() => page.title(), { message: p.path }).toBe(p.title);
      await finish();
    }
    // Moving in the app (no reload) retitles the tab too.
    const { page } = await open('/admin/settings/api');
    await page.getByTestId('usage-read').waitFor();
    await page.getByRole('link', { name: 'Renewals' }).click();
    await expect.poll(() => page.title()).toBe('Renewals · svc');
    await page.getByRole('link', { name: 'Settings', exact: true }).click();
    await expect.poll(() => page.title()).toBe('Settings · svc');
    await page.getByRole('main').getByRole('link', { name: 'Billing' }).click();
    await expect.poll(() => page.title()).toBe('Settings → Billing · svc');
    await finish();
  }, 300_000);

  it.each(['contracts', 'a contract', 'renewals', 'settings', 'settings API', 'settings billing', 'webhooks', 'a key\'s requests', 'not found'])('%s: no serious or critical axe finding', async (name) => {
    const p = pages().find((x) => x.name === name)!;
    const { page } = await open(p.path);
    await p.ready(page);
    expect(await seriousFindings(page), `${p.path}`).toEqual([]);
    await finish();
  });

  it('what opens on the pages: the contract\'s edit form and its preview, a request\'s details, the add-endpoint dialog', async () => {
    const contract = await open(`/admin/contracts/${shop.contractId}`);
    await contract.page.getByRole('button', { name: 'Edit contract' }).click();
    const dialog = contract.page.getByRole('dialog');
    await dialog.getByRole('heading', { name: `Edit contract #${shop.contractId}` }).waitFor();
    await dialog.getByLabel(/^Quantity of /).first().fill('2');
    await dialog.getByRole('button', { name: 'Preview changes' }).click();
    await dialog.getByRole('region', { name: 'Preview of the edit' }).waitFor();
    expect(await seriousFindings(contract.page), 'the edit form with its preview').toEqual([]);
    await screenshot(contract.page, 'every-page-edit-preview');

    const requests = await open(`/admin/settings/api/keys/${shop.keyId}/requests`);
    await requests.page.getByRole('button', { name: /^Show the details of GET/ }).first().click();
    await requests.page.getByRole('region', { name: /^Details of request/ }).waitFor();
    expect(await seriousFindings(requests.page), 'a request\'s details').toEqual([]);

    const webhooks = await open('/admin/settings/webhooks');
    await webhooks.page.getByRole('button', { name: 'Add endpoint' }).click();
    await webhooks.page.getByRole('dialog').getByText('Only the events I choose').click();
    await webhooks.page.getByRole('dialog').getByRole('checkbox', { name: 'bulk_job.finished', exact: true }).waitFor();
    expect(await seriousFindings(webhooks.page), 'the add-endpoint dialog').toEqual([]);
    await finish();
  }, 180_000);
});
