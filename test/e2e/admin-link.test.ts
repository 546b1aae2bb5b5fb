import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import type { Browser, Response } from 'playwright-core';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { runCli } from '../../src/cli/main.js';
import { createLogger } from '../../src/http/logging.js';
import { TEST_CREDENTIALS, uniqueShop } from '../support/app.js';
import { describeInBrowser, ensureAdminUiBuilt, launch, openTab, screenshot, serve, type Served, type Tab } from './browser.js';

/**
 * The operator's admin link on a server set up for the shop admin (SHOPIFY_API_KEY set): `svc admin-link` prints
 * it, and it must open Settings → API in a plain browser tab, where App Bridge cannot work. Without a link, the same
 * page in a plain tab says how to get one. Every page also has its icon (no 404 in the browser's console).
 */
describeInBrowser('admin UI: the admin link in a plain tab with SHOPIFY_API_KEY set', () => {
  let s: Served;
  let browser: Browser;
  let embeddedBase: string;
  let closeEmbedded: () => Promise<void>;
  const cliDir = mkdtempSync(path.join(os.tmpdir(), 'svc-admin-link-'));

  beforeAll(async () => {
    await ensureAdminUiBuilt();
    s = await serve();
    const app = await buildApp({
      ctx: s.t.ctx,
      credentials: TEST_CREDENTIALS,
      logger: createLogger({ level: 'silent' }),
      adminUi: { shopifyApiKey: TEST_CREDENTIALS.apiKey },
    });
    embeddedBase = (await app.listen({ port: 0, host: '127.0.0.1' })).replace('[::1]', '127.0.0.1');
    closeEmbedded = () => app.close();
    browser = await launch();
  });
  afterAll(async () => {
    await browser?.close();
    await closeEmbedded?.();
    await s?.t.close();
    rmSync(cliDir, { recursive: true, force: true });
  });

  /** `svc admin-link <shop>` as the operator runs it, configured like the server (the same app key and secret). */
  async function adminLink(shop: string): Promise<string> {
    const env: NodeJS.ProcessEnv = {
      SHOPIFY_API_KEY: TEST_CREDENTIALS.apiKey,
      SHOPIFY_API_SECRET: TEST_CREDENTIALS.secret,
      PUBLIC_URL: embeddedBase,
      LOG_LEVEL: 'silent',
    };
    if (s.t.database.url) env.DATABASE_URL = s.t.database.url;
    else {
      // The CLI's own embedded database (the server's is in this process): a copy of the migrated template.
      const dataDir = path.join(cliDir, 'data');
      const pg = await PGlite.create({ dataDir, loadDataDir: new Blob([readFileSync(inject('pgliteTemplate'))]) });
      await pg.close();
      env.DATA_DIR = dataDir;
    }
    const out: string[] = [];
    const code = await runCli(['admin-link', shop], { out: (l) => out.push(l), err: () => {} }, env);
    expect(code).toBe(0);
    // The CLI signed at the real time; the server reads its test clock, which must not be behind the token's iat.
    s.t.clock.set(new Date());
    return out[0];
  }

  /** Every response of 400 or more the tab received (the favicon's 404 used to be one on every page load). */
  const failures = (tab: Tab) => {
    const seen: string[] = [];
    tab.page.on('response', (r: Response) => {
      if (r.status() >= 400) seen.push(`${r.status()} ${new URL(r.url()).pathname}`);
    });
    return seen;
  };

  it('opens Settings → API standalone: no App Bridge, nothing from another origin, works after a reload', async () => {
    const shop = uniqueShop('link');
    const link = await adminLink(shop);
    expect(link.startsWith(`${embeddedBase}/admin#token=`)).toBe(true);
    const token = new URLSearchParams(new URL(link).hash.slice(1)).get('token');

    const tab = await openTab(browser);
    const failed = failures(tab);
    await tab.page.goto(link);
    await expect.poll(() => tab.page.url()).toBe(`${embeddedBase}/admin/settings/api`);
    await tab.page.getByRole('heading', { name: 'API', exact: true }).waitFor();
    await tab.page.getByText('0 of 5 active').waitFor();
    await screenshot(tab.page, 'admin-link-embedded-config');
    expect(await tab.page.evaluate(() => typeof (window as { shopify?: unknown }).shopify)).toBe('undefined');

    await tab.page.reload();
    await tab.page.getByText('0 of 5 active').waitFor();

    expect(tab.external, 'App Bridge or anything else from another origin').toEqual([]);
    expect(tab.adminCalls.length).toBeGreaterThan(0);
    expect(tab.adminCalls.every((c) => c.authorization === `Bearer ${token}`)).toBe(true);
    expect(tab.errors).toEqual([]);
    expect(failed).toEqual([]);
    await tab.context.close();
  });

  it('without a link, the page in a plain tab names the command instead of "could not start"', async () => {
    const tab = await openTab(browser);
    await tab.page.goto(`${embeddedBase}/admin?shop=demo.myshopify.com`);
    await tab.page.getByRole('heading', { name: 'Open this page from the shop admin, or with an admin link' }).waitFor();
    await tab.page.getByText('npm run svc -- admin-link demo.myshopify.com').waitFor();
    // It did try App Bridge (the page cannot know it is not in the admin before that), and made no admin call.
    expect(tab.external).toEqual(['https://cdn.shopify.com/shopifycloud/app-bridge.js']);
    expect(tab.adminCalls).toEqual([]);
    await tab.context.close();
  });

  it('the standalone server\'s pages load their icon: no failed request at all', async () => {
    const shop = uniqueShop('icon');
    const tab = await openTab(browser);
    const failed = failures(tab);
    await tab.page.goto(`${s.base}/admin#token=${await s.t.sessionToken(shop)}`);
    await tab.page.getByText('0 of 5 active').waitFor();
    const icon = await tab.page.evaluate(() => document.querySelector<HTMLLinkElement>('link[rel="icon"]')?.href);
    expect(icon).toBe(`${s.base}/admin/favicon.svg`);
    const res = await tab.page.request.get(icon!);
    expect(res.status()).toBe(200);
    expect((await tab.page.request.get(`${s.base}/favicon.ico`)).headers()['content-type']).toBe('image/x-icon');
    expect(failed).toEqual([]);
    expect(tab.external).toEqual([]);
    await tab.context.close();
  });
});
