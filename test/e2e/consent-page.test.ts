import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { setShopPlan } from '../../src/services/shops.js';
import { buildApp } from '../../src/app.js';
import { createLogger } from '../../src/http/logging.js';
import { TEST_CREDENTIALS, uniqueShop } from '../support/app.js';
import { pkce, register, token } from '../support/oauth.js';
import { written } from '../support/requestLog.js';
import { describeInBrowser, ensureAdminUiBuilt, launch, openTab, screenshot, serve, type Served, type Tab } from './browser.js';

// axe-core, when installed: the pages' serious and critical accessibility violations.
const axeSource = (() => {
  try {
    return readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  } catch {
    return null;
  }
})();
async function expectAccessible(page: Page, where: string): Promise<void> {
  if (!axeSource) return;
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const res = await (window as unknown as { axe: { run(ctx: Document, o: object): Promise<{ violations: { id: string; impact: string; help: string; nodes: { target: string[] }[] }[] }> } }).axe.run(document, {
      resultTypes: ['violations'],
    });
    return res.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
  });
  expect(violations, `axe: ${where}`).toEqual([]);
}

/**
 * An AI assistant's consent in a real browser (docs/mcp-assistants.md): the merchant opened the admin link in one
 * tab; the assistant opens its authorize URL in another tab of that browser, which finds the admin session there.
 * The merchant narrows a permission, approves, and the browser lands on the app's redirect URI with a code.
 */
describeInBrowser('admin UI: connecting an AI assistant in a real browser', () => {
  let s: Served;
  let browser: Browser;
  let receiver: Server;
  let redirect: string;
  const landed: string[] = [];
  const tabs: Tab[] = [];

  beforeAll(async () => {
    await ensureAdminUiBuilt();
    s = await serve();
    browser = await launch();
    // The assistant's loopback redirect: what a desktop app listens on while the merchant decides.
    receiver = createServer((req, res) => {
      landed.push(req.url!);
      res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><html lang="en"><title>Connected</title><h1>You can close this tab</h1></html>');
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    redirect = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/callback`;
  });
  afterAll(async () => {
    await browser?.close();
    await s?.t.close();
    await new Promise<void>((r) => receiver?.close(() => r()));
  });

  for (const width of [1280, 375]) {
    it(`at ${width} px: a new tab finds the admin session, the merchant narrows billing to read and approves`, async () => {
      const domain = uniqueShop('consent');
      await setShopPlan({ ctx: s.t.ctx, input: { domain, plan: 'enterprise' } });
      const tab = await openTab(browser, { width, height: 900 });
      tabs.push(tab);
      // Tab 1: the admin link.
      await tab.page.goto(`${s.base}/admin#token=${await s.t.sessionToken(domain)}`);
      await tab.page.getByRole('heading', { name: 'API', exact: true }).waitFor();
      await tab.page.getByRole('heading', { name: 'Connected apps' }).waitFor();
      await tab.page.getByText('No apps connected').waitFor();

      // Tab 2: the assistant's authorize URL.
      const clientId = await register(s.base, [redirect], 'Browser Assistant');
      const { verifier, challenge } = pkce();
      const q = new URLSearchParams({
        response_type: 'code',
        client_id: clientId,
        redirect_uri: redirect,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        state: `state-${width}`,
        scope: 'contracts:read contracts:write billing:read billing:write',
        resource: `${s.base}/mcp`,
      });
      const consent = await tab.context.newPage();
      consent.setDefaultTimeout(8_000);
      consent.on('pageerror', (e) => tab.errors.push(e.message));
      await consent.goto(`${s.base}/oauth/authorize?${q}`);
      await consent.getByRole('heading', { name: `Browser Assistant wants to use ${domain}` }).waitFor();
      expect(new URL(consent.url()).pathname).toBe('/admin/oauth/consent');
      expect(await consent.title()).toBe('Connect an app · svc');
      await consent.getByText(`127.0.0.1:${new URL(redirect).port}`).waitFor();
      // Asked: contracts and billing at write; webhooks and bulk jobs not at all.
      expect(await consent.getByRole('radio', { name: 'Billing: Write' }).isChecked()).toBe(true);
      expect(await consent.getByRole('radio', { name: 'Webhooks: Read' }).count()).toBe(0);
      await expectAccessible(consent, `consent page at ${width} px`);
      await screenshot(consent, `consent-${width}`);

      await consent.getByRole('radio', { name: 'Billing: Read' }).check({ force: true });
      await consent.getByRole('button', { name: 'Approve' }).click();
      await consent.waitForURL((u) => u.href.startsWith(redirect));
      const back = new URL(consent.url());
      expect(back.searchParams.get('state')).toBe(`state-${width}`);
      const code = back.searchParams.get('code')!;
      expect(code).toBeTruthy();
      const tokens = await token(s.base, { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: clientId, redirect_uri: redirect });
      expect(tokens.body.scope).toBe('contracts:read contracts:write billing:read');

      // Tab 1, reloaded: the connection, and Disconnect.
      await tab.page.reload();
      await tab.page.getByRole('heading', { name: 'Connected apps' }).waitFor();
      await tab.page.getByText('Browser Assistant', { exact: true }).first().waitFor();
      await tab.page.getByText('Contracts: Write · Billing: Read').first().waitFor();
      await expectAccessible(tab.page, `Settings → API with a connected app at ${width} px`);
      await screenshot(tab.page, `connected-apps-${width}`);
      // Its requests, under its name.
      const before = s.t.app.requestLog!.stats.recorded;
      const listed = await fetch(`${s.base}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${tokens.body.access_token}` },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
      });
      expect(listed.status).toBe(200);
      await written(s.t, before + 1);
      await tab.page.getByRole('link', { name: 'Requests of Browser Assistant' }).click();
      await tab.page.getByRole('heading', { name: 'Requests: Browser Assistant' }).waitFor();
      const region = tab.page.getByRole('region', { name: 'Requests of Browser Assistant' });
      await region.getByText('/mcp').first().waitFor();
      expect(await tab.page.title()).toBe('Requests of a connected app · Settings → API · svc');
      await expectAccessible(tab.page, `a connected app's requests at ${width} px`);
      await tab.page.goBack();
      await tab.page.getByRole('heading', { name: 'Connected apps' }).waitFor();
      await tab.page.getByRole('button', { name: 'Disconnect Browser Assistant' }).click();
      const dialog = tab.page.getByRole('dialog');
      await dialog.getByRole('button', { name: 'Disconnect' }).click();
      await dialog.waitFor({ state: 'detached' });
      await tab.page.getByText('No apps connected').waitFor();
      const refused = await fetch(`${s.base}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${tokens.body.access_token}` },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
      });
      expect(refused.status).toBe(401);

      expect(tab.external, 'the standalone pages load nothing from another origin').toEqual([]);
      expect(tab.errors, 'no script errors').toEqual([]);
      await tab.context.close();
    });
  }

  it('a browser without an admin session is told to open the admin link there first', async () => {
    const tab = await openTab(browser);
    tabs.push(tab);
    const clientId = await register(s.base, [redirect], 'Browser Assistant');
    const q = new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: redirect, code_challenge: pkce().challenge, code_challenge_method: 'S256' });
    await tab.page.goto(`${s.base}/oauth/authorize?${q}`);
    await tab.page.getByRole('heading', { name: 'Connect an app' }).waitFor();
    await tab.page.getByText('This browser has no admin session').waitFor();
    await expectAccessible(tab.page, 'consent page without a session');
    expect(tab.adminCalls).toEqual([]);
    await tab.context.close();
  });
});

describeInBrowser('admin UI: an assistant\'s consent on a server set up for the shop admin', () => {
  it('opened in a tab of its own, the page asks for the store and links to the same page inside its admin', async () => {
    await ensureAdminUiBuilt();
    const s = await serve();
    const app = await buildApp({ ctx: s.t.ctx, credentials: TEST_CREDENTIALS, logger: createLogger({ level: 'silent' }), adminUi: { shopifyApiKey: TEST_CREDENTIALS.apiKey } });
    const browser = await launch();
    try {
      const base = await app.listen({ port: 0, host: '127.0.0.1' });
      const clientId = await register(base, ['http://127.0.0.1:9/callback'], 'Browser Assistant');
      const q = new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: 'http://127.0.0.1:9/callback', code_challenge: pkce().challenge, code_challenge_method: 'S256', state: 's1' });
      const tab = await openTab(browser);
      // App Bridge, as the platform serves it (no internet here): outside the admin it can give no session.
      await tab.context.route('https://cdn.shopify.com/**', (route) =>
        route.fulfill({ contentType: 'text/javascript', body: 'window.shopify = { idToken: async () => { throw new Error("not in the admin"); }, config: {} };' }),
      );
      await tab.page.goto(`${base}/oauth/authorize?${q}`);
      await tab.page.getByRole('heading', { name: 'Connect an app' }).waitFor();
      await tab.page.getByLabel('Store domain').fill('my-store.myshopify.com');
      const link = tab.page.getByRole('link', { name: 'Open in the shop admin' });
      const href = new URL((await link.getAttribute('href'))!);
      expect(`${href.origin}${href.pathname}`).toBe(`https://my-store.myshopify.com/admin/apps/${TEST_CREDENTIALS.apiKey}/oauth/consent`);
      expect(href.searchParams.get('client_id')).toBe(clientId);
      expect(href.searchParams.get('state')).toBe('s1');
      await expectAccessible(tab.page, 'consent page outside the shop admin');
      expect(tab.adminCalls).toEqual([]);
      await tab.context.close();
    } finally {
      await browser.close();
      await app.close();
      await s.t.close();
    }
  });
});
