import { createHash } from 'node:crypto';
import { copyFileSync, statSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { requestAction } from '../../src/services/contractRequests.js';
import { generateKey } from '../../src/services/generateKey.js';
import { adminPrincipal, resolvedCaller } from '../../src/services/principal.js';
import { reportLeakedKeys } from '../../src/services/reportLeakedKeys.js';
import { revokeKey } from '../../src/services/revokeKey.js';
import { setShopPlan } from '../../src/services/shops.js';
import { uniqueShop } from '../support/app.js';
import { describeInBrowser, ensureAdminUiBuilt, launch, openTab, screenshot, serve, type Served, type Tab } from './browser.js';
import { expectNoClippedTables } from './clipping.js';

const SECRET = /svc_live_[0-9A-Za-z]{49}/;

describeInBrowser('admin UI: Settings → API in a real browser', () => {
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

  const shopOn = async (plan: string) => {
    const domain = uniqueShop('ui');
    const shop = await setShopPlan({ ctx: s.t.ctx, input: { domain, plan } });
    return { domain, shopId: shop.id };
  };
  const tab = async (opts?: Parameters<typeof openTab>[1]) => {
    const t = await openTab(browser, opts);
    tabs.push(t);
    return t;
  };
  const open = async (t: Tab, domain: string, path = '/admin') => {
    await t.page.goto(`${s.base}${path}#token=${await s.t.sessionToken(domain)}`);
  };
  const cancelContract = async (contractId: string, shopId: string) => {
    const { contract } = await requestAction(s.t.ctx, resolvedCaller(adminPrincipal(shopId)), contractId, { action: 'cancel' });
    return contract;
  };
  const callApi = (key: string) =>
    fetch(`${s.base}/api/v1/subscription-contracts?limit=1`, { headers: { authorization: `Bearer ${key}` } });
  const afterEach = () => {
    for (const t of tabs.splice(0)) {
      expect(t.external, 'the standalone page loads nothing from another origin').toEqual([]);
      expect(t.errors, 'no script errors').toEqual([]);
      void t.context.close().catch(() => {});
    }
  };

  it('generates a read-only key: the table says so, the key reads contracts and every change is 403 insufficient_scope', async () => {
    const { domain, shopId } = await shopOn('enterprise');
    const [contract] = await s.t.seed(shopId, 1);
    const t = await tab();
    const { page } = t;
    await open(t, domain);
    await page.getByRole('button', { name: 'Generate key' }).click();
    const dialog = page.getByRole('dialog');
    await page.getByLabel('Key name (optional)').fill('Reporting');
    await dialog.getByText('Read only', { exact: true }).click();
    expect(await dialog.getByLabel('Read only').isChecked()).toBe(true);
    await screenshot(page, 'api-generate-read-only');
    await dialog.getByRole('button', { name: 'Generate key' }).click();
    await dialog.getByText('This key will not be shown again').waitFor();
    const secret = await dialog.getByRole('textbox').inputValue();
    await dialog.getByRole('button', { name: 'Done' }).click();
    await dialog.waitFor({ state: 'detached' });
    const row = page.getByRole('row', { name: /Reporting/ });
    await row.getByText('Read only').waitFor();
    await screenshot(page, 'api-read-only-listed');

    expect((await callApi(secret)).status).toBe(200);
    const change = await fetch(`${s.base}/api/v1/subscription-contracts/${contract.id}/actions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ action: 'pause' }),
    });
    expect(change.status).toBe(403);
    expect((await change.json()).error.code).toBe('insufficient_scope');
    afterEach();
  });

  it('generates a key shown once, copies it, revokes it; the key works until then and gets 401 after', async () => {
    const { domain } = await shopOn('enterprise');
    const t = await tab({ clipboard: true });
    const { page } = t;
    await open(t, domain);

    // The token left the address bar; the page is Settings → API.
    await expect.poll(() => page.url()).toBe(`${s.base}/admin/settings/api`);
    await page.getByRole('heading', { name: 'API', exact: true }).waitFor();
    await page.getByText('Enterprise plan', { exact: true }).waitFor();
    await page.getByText('0 of 5 active').waitFor();
    await page.getByText('No API keys yet').waitFor();
    await screenshot(page, 'api-empty');

    await page.getByRole('button', { name: 'Generate key' }).click();
    const dialog = page.getByRole('dialog');
    await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('id') ?? '')).not.toBe('');
    expect(await page.getByLabel('Key name (optional)').evaluate((el) => el === document.activeElement)).toBe(true);
    await page.getByLabel('Key name (optional)').fill('ERP sync');
    await page.keyboard.press('Enter');

    await dialog.getByText('This key will not be shown again').waitFor();
    const secret = await dialog.getByRole('textbox').inputValue();
    expect(secret).toMatch(new RegExp(`^${SECRET.source}$`));
    expect(await dialog.getByRole('button', { name: 'Copy key' }).evaluate((el) => el === document.activeElement)).toBe(true);
    await screenshot(page, 'api-key-shown-once');

    await dialog.getByRole('button', { name: 'Copy key' }).click();
    await dialog.getByText('Key copied to the clipboard.').waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);

    await dialog.getByRole('button', { name: 'Done' }).click();
    await dialog.waitFor({ state: 'detached' });
    await expect.poll(() => page.evaluate(() => document.activeElement?.textContent)).toBe('Generate key');
    const fingerprint = createHash('sha256').update(secret).digest('hex').slice(0, 12);
    const row = page.getByRole('row', { name: /ERP sync/ });
    await row.getByText(fingerprint).waitFor();
    await row.getByText('Active').waitFor();
    await page.getByText('1 of 5 active').waitFor();
    const noSecretLeft = async () => {
      expect(await page.content()).not.toMatch(SECRET);
      const stored = await page.evaluate(() => JSON.stringify({ ...sessionStorage }) + JSON.stringify({ ...localStorage }));
      expect(stored).not.toMatch(SECRET);
    };
    await noSecretLeft();

    // The copied key works against the API; after a reload the page still has its session and no secret.
    expect((await callApi(secret)).status).toBe(200);
    await page.reload();
    await row.getByText(fingerprint).waitFor();
    expect(await row.getByText('Never').count()).toBe(0); // last used is now set
    await noSecretLeft();

    await row.getByRole('button', { name: 'Revoke ERP sync' }).click();
    const confirm = page.getByRole('dialog');
    await confirm.getByRole('heading', { name: 'Revoke ERP sync?' }).waitFor();
    await confirm.getByText(fingerprint).waitFor();
    await screenshot(page, 'api-revoke-confirm');
    await confirm.getByRole('button', { name: 'Revoke key' }).click();
    await confirm.waitFor({ state: 'detached' });
    await row.getByText('Revoked', { exact: true }).waitFor();
    await page.getByText('0 of 5 active').waitFor();
    expect(await row.getByRole('button', { name: /Revoke/ }).count()).toBe(0);
    await screenshot(page, 'api-revoked');

    const after = await callApi(secret);
    expect(after.status).toBe(401);
    expect((await after.json()).error.code).toBe('unauthorized');
    // Every admin call carried the session token.
    expect(t.adminCalls.length).toBeGreaterThan(0);
    expect(t.adminCalls.every((c) => c.authorization?.startsWith('Bearer ey'))).toBe(true);
    afterEach();
  });

  it('a new key stays where it appeared, at the top, after a reload: newest first on the page and from the server', async () => {
    const { domain, shopId } = await shopOn('enterprise');
    await generateKey({ ctx: s.t.ctx, input: { shopId, name: 'Oldest' } });
    s.t.clock.advance(1000);
    await generateKey({ ctx: s.t.ctx, input: { shopId, name: 'Older' } });
    s.t.clock.advance(1000);
    const t = await tab();
    const { page } = t;
    page.setDefaultTimeout(20_000);
    await open(t, domain);
    await page.getByText('2 of 5 active').waitFor();
    const names = () => page.locator('[id^="key-name-"]').allInnerTexts();
    expect(await names()).toEqual(['Older', 'Oldest']);
    await page.getByRole('button', { name: 'Generate key' }).click();
    const dialog = page.getByRole('dialog');
    await page.getByLabel('Key name (optional)').fill('Newest');
    await dialog.getByRole('button', { name: 'Generate key' }).click();
    await dialog.getByText('This key will not be shown again').waitFor();
    await dialog.getByRole('button', { name: 'Done' }).click();
    await dialog.waitFor({ state: 'detached' });
    await page.getByText('3 of 5 active').waitFor();
    expect(await names()).toEqual(['Newest', 'Older', 'Oldest']);
    await page.reload();
    await page.getByText('3 of 5 active').waitFor();
    expect(await names()).toEqual(['Newest', 'Older', 'Oldest']);
    afterEach();
  });

  it('"Using a key": the samples name a contract of this store, and run as they are they answer 200', async () => {
    const { domain, shopId } = await shopOn('enterprise');
    const [first, second] = await s.t.seed(shopId, 2);
    // The newest contract is cancelled: the sample takes an active one, which the pause sample can pause.
    expect((await cancelContract(second.id, shopId)).status).toBe('CANCELLED');
    const { secret } = await generateKey({ ctx: s.t.ctx, input: { shopId, name: 'Backend' } });
    const t = await tab();
    const { page } = t;
    page.setDefaultTimeout(20_000);
    await open(t, domain);
    const read = page.getByTestId('usage-read');
    await read.waitFor();
    await page.getByText(`Read contract #${first.id} of this store:`).waitFor();
    /** Runs a sample as a shell would, with $SVC_API_KEY set: curl's flags taken as fetch's. */
    const run = async (sample: string) => {
      const text = sample.replace(/\\\n\s*/g, ' ').replaceAll('$SVC_API_KEY', secret);
      const url = /curl (?:-X (\w+) )?(\S+)/.exec(text)!;
      const headers = Object.fromEntries([...text.matchAll(/-H "([^:]+): ([^"]+)"/g)].map((m) => [m[1], m[2]]));
      const body = /-d '([^']+)'/.exec(text)?.[1];
      return fetch(url[2], { method: url[1] ?? 'GET', headers, body });
    };
    const got = await run(await read.innerText());
    expect(got.status).toBe(200);
    expect((await got.json()).contract.id).toBe(first.id);
    const paused = await run(await page.getByTestId('usage-pause').innerText());
    expect(paused.status).toBe(200);
    expect((await paused.json()).contract).toMatchObject({ id: first.id, status: 'PAUSED' });
    expect(await page.getByTestId('usage-read').innerText()).not.toContain('4242');

    // A store without contracts: a placeholder, said to be one.
    const empty = await shopOn('enterprise');
    await open(t, empty.domain);
    await page.getByText('Read a contract (put one of your contracts\' ids in place of <CONTRACT_ID>):').waitFor();
    expect(await page.getByTestId('usage-read').innerText()).toContain('/api/v1/subscription-contracts/<CONTRACT_ID>');
    afterEach();
  });

  it('states "3 of 5 active" before the limit, disables Generate at 5 and says why; a stale page shows the 409', async () => {
    const { domain, shopId } = await shopOn('enterprise');
    for (const name of ['one', 'two', 'three']) await generateKey({ ctx: s.t.ctx, input: { shopId, name } });
    const t = await tab();
    const { page } = t;
    await open(t, domain);
    await page.getByText('3 of 5 active').waitFor();
    const generate = page.getByRole('button', { name: 'Generate key' });
    expect(await generate.isEnabled()).toBe(true);

    // Another tab takes the 4th and 5th slots; this page still believes it has room.
    await generateKey({ ctx: s.t.ctx, input: { shopId, name: 'four' } });
    await generateKey({ ctx: s.t.ctx, input: { shopId, name: 'five' } });
    await generate.click();
    await page.getByRole('dialog').getByRole('button', { name: 'Generate key' }).click();
    const alert = page.getByRole('dialog').getByRole('alert');
    await alert.getByText('The key was not generated').waitFor();
    await alert.getByText(/key_limit_reached/).waitFor();
    await screenshot(page, 'api-limit-error');
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'detached' });

    await page.getByText('5 of 5 active').waitFor();
    expect(await generate.isDisabled()).toBe(true);
    // Focus came back out of the dialog to the reason, not to the button that can no longer be used.
    await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe('generate-disabled-reason');
    await page.getByText('This store has 5 active keys, the most it can have. Revoke a key to generate a new one.').waitFor();
    expect(await generate.getAttribute('aria-describedby')).toBe('generate-disabled-reason');
    await screenshot(page, 'api-limit-reached');
    afterEach();
  });

  it('plan required: explains the Enterprise requirement, keeps the keys, Generate disabled with the reason', async () => {
    const { domain, shopId } = await shopOn('enterprise');
    await generateKey({ ctx: s.t.ctx, input: { shopId, name: 'kept' } });
    await setShopPlan({ ctx: s.t.ctx, input: { domain, plan: 'basic' } });
    const t = await tab();
    const { page } = t;
    await open(t, domain);
    await page.getByText('Plan required: API access needs the Enterprise plan').waitFor();
    await page.getByText(/Your store is on the\s+basic\s+plan/).waitFor();
    await page.getByRole('row', { name: /kept/ }).getByText('Active').waitFor();
    expect(await page.getByRole('button', { name: 'Generate key' }).isDisabled()).toBe(true);
    await page.getByText('Generating keys needs API access, which requires the Enterprise plan.').waitFor();
    await screenshot(page, 'api-plan-required');
    afterEach();
  });

  it('free period: every plan may generate keys, and the banner gives the end date', async () => {
    const freeUntil = new Date(Date.UTC(new Date().getUTCFullYear() + 1, 0, 15));
    const free = await serve({ database: s.t.database, freeUntil });
    try {
      const domain = uniqueShop('free');
      await setShopPlan({ ctx: free.t.ctx, input: { domain, plan: 'basic' } });
      const t = await tab();
      const { page } = t;
      await page.goto(`${free.base}/admin#token=${await free.t.sessionToken(domain)}`);
      await page.getByText(`API access is included for every store until January 15, ${freeUntil.getUTCFullYear()}`).waitFor();
      expect(await page.getByRole('button', { name: 'Generate key' }).isEnabled()).toBe(true);
      await screenshot(page, 'api-free-period');
      afterEach();
    } finally {
      await free.t.close();
    }
  });

  it('a custom key: chosen in the table, listed with what it holds, edited from its row; the API follows at once (1280 and 375 px)', async () => {
    for (const [width, height] of [[1280, 800], [375, 812]]) {
      const { domain, shopId } = await shopOn('enterprise');
      const [contract] = await s.t.seed(shopId, 1);
      const t = await tab({ width, height });
      const { page } = t;
      await open(t, domain);
      await page.getByText('0 of 5 active').waitFor();
      await page.getByRole('button', { name: 'Generate key' }).click();
      const dialog = page.getByRole('dialog');
      await dialog.getByRole('heading', { name: 'Generate API key' }).waitFor();
      await dialog.getByLabel('Key name (optional)').fill('Dunning');
      // No table until Custom is chosen; then it starts from the preset that was chosen (every resource at Write).
      expect(await dialog.getByRole('table').count()).toBe(0);
      await dialog.getByText('Custom', { exact: true }).click();
      const table = dialog.getByRole('table', { name: 'Permissions per resource' });
      await table.waitFor();
      for (const r of ['Contracts', 'Billing', 'Webhooks', 'Bulk jobs']) expect(await table.getByRole('radio', { name: `${r}: Write` }).isChecked()).toBe(true);
      await table.getByRole('radio', { name: 'Contracts: Read' }).check({ force: true });
      await table.getByRole('radio', { name: 'Bulk jobs: None' }).check({ force: true });
      // Each row is a radio group: the arrow keys move within it (Webhooks: Write → Read → None), and only there.
      await table.getByRole('radio', { name: 'Webhooks: Write' }).focus();
      await page.keyboard.press('ArrowLeft');
      await page.keyboard.press('ArrowLeft');
      expect(await table.getByRole('radio', { name: 'Webhooks: None' }).isChecked()).toBe(true);
      expect(await table.getByRole('radio', { name: 'Billing: Write' }).isChecked()).toBe(true);
      expect(await table.getByRole('radio', { name: 'Contracts: Read' }).isChecked()).toBe(true);
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
      await screenshot(page, `api-generate-custom-${width}`);
      await dialog.getByRole('button', { name: 'Generate key' }).click();
      await dialog.getByText('This key will not be shown again').waitFor();
      const secret = await dialog.getByRole('textbox').inputValue();
      await dialog.getByRole('button', { name: 'Done' }).click();
      await page.getByRole('dialog').waitFor({ state: 'detached' });

      // Listed as Custom with what it holds; the API judges it by exactly that.
      const keys = page.locator('.Polaris-IndexTable');
      await keys.getByText('Custom', { exact: true }).waitFor();
      await keys.getByText(width < 1280 ? 'Contracts: Read · Billing: Write' : 'Billing: Write', { exact: true }).waitFor();
      await screenshot(page, `api-custom-listed-${width}`);
      const me = await fetch(`${s.base}/api/v1/key`, { headers: { authorization: `Bearer ${secret}` } });
      expect((await me.json()).key).toMatchObject({ name: 'Dunning', access: 'custom', permissions: { contracts: 'read', billing: 'write', webhooks: 'none', bulk_jobs: 'none' } });
      const pause = () =>
        fetch(`${s.base}/api/v1/subscription-contracts/${contract.id}/actions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
          body: JSON.stringify({ action: 'pause' }),
        });
      const refused = await pause();
      expect(refused.status).toBe(403);
      expect((await refused.json()).error).toMatchObject({ code: 'insufficient_scope', message: expect.stringContaining('contracts: write') });

      // Edit permissions: the same choices, starting from the key's own; back to the preset Read and write.
      const edit = page.getByRole('button', { name: 'Edit permissions of Dunning' });
      await edit.click();
      const editor = page.getByRole('dialog');
      await editor.getByRole('heading', { name: 'Permissions of Dunning' }).waitFor();
      expect(await editor.getByLabel('Custom').isChecked()).toBe(true);
      expect(await editor.getByRole('radio', { name: 'Billing: Write' }).isChecked()).toBe(true);
      expect(await editor.getByRole('button', { name: 'Save permissions' }).isDisabled()).toBe(true);
      await editor.getByText('Read and write', { exact: true }).click();
      await screenshot(page, `api-edit-permissions-${width}`);
      await editor.getByRole('button', { name: 'Save permissions' }).click();
      await page.getByRole('dialog').waitFor({ state: 'detached' });
      await page.getByText('Permissions of Dunning changed').waitFor();
      await keys.getByText('Read and write', { exact: true }).waitFor();
      expect(await keys.getByText('Custom', { exact: true }).count()).toBe(0);
      await expect.poll(() => edit.evaluate((el) => el === document.activeElement)).toBe(true);
      // The very next request is judged by the new permissions.
      expect((await pause()).status).toBe(200);
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
      afterEach();
    }
  });

  // The README's picture of the page: an artifact every run; copied to docs/ with UPDATE_DOCS_SCREENSHOT=1.
  it('renders the README screenshot of a shop with active and revoked keys', async () => {
    const domain = 'my-shop.myshopify.com';
    const shop = await setShopPlan({ ctx: s.t.ctx, input: { domain, plan: 'enterprise' } });
    const old = await generateKey({ ctx: s.t.ctx, input: { shopId: shop.id, name: 'Old staging server' } });
    await revokeKey({ ctx: s.t.ctx, input: { shopId: shop.id, keyId: old.key.id } });
    await generateKey({ ctx: s.t.ctx, input: { shopId: shop.id, name: 'Claude Code' } });
    const erp = await generateKey({ ctx: s.t.ctx, input: { shopId: shop.id, name: 'ERP sync' } });
    expect((await callApi(erp.secret)).status).toBe(200);
    const t = await tab({ width: 1280, height: 800 });
    await open(t, domain);
    await t.page.getByText('2 of 5 active').waitFor();
    const file = await screenshot(t.page, 'api-page', false);
    expect(statSync(file).size).toBeLessThan(150_000);
    if (process.env.UPDATE_DOCS_SCREENSHOT === '1') copyFileSync(file, new URL('../../docs/api-page.png', import.meta.url));
    afterEach();
  });

  it('no column of the keys table is cut off: every one in sight at 1280 px, on the screen at 375 px', async () => {
    // The widest rows: a long name, a key used (a date for last used), a revoked one (a date for revoked).
    const { domain, shopId } = await shopOn('enterprise');
    const old = await generateKey({ ctx: s.t.ctx, input: { shopId, name: 'Old staging server (eu-west)' } });
    await revokeKey({ ctx: s.t.ctx, input: { shopId, keyId: old.key.id } });
    await generateKey({ ctx: s.t.ctx, input: { shopId, name: 'Claude Code', access: 'read_only' } });
    // A custom key: its permissions listed a resource a line, the tallest cell.
    await generateKey({ ctx: s.t.ctx, input: { shopId, name: 'Dunning', permissions: { contracts: 'read', billing: 'write', webhooks: 'read', bulk_jobs: 'read' } } });
    const erp = await generateKey({ ctx: s.t.ctx, input: { shopId, name: 'ERP sync' } });
    expect((await callApi(erp.secret)).status).toBe(200);
    for (const [width, height] of [[1280, 800], [375, 812]]) {
      const t = await tab({ width, height });
      await open(t, domain);
      await t.page.getByText('3 of 5 active').waitFor();
      await t.page.getByRole('button', { name: 'Edit permissions of Dunning' }).waitFor();
      await t.page.getByRole('button', { name: 'Revoke ERP sync' }).waitFor();
      // At a laptop's width even Revoke, the last column, is in sight without scrolling the table.
      await expectNoClippedTables(t.page, { scrolling: width < 1280, where: `the keys table at ${width} px` });
      expect(await t.page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
      await screenshot(t.page, `api-keys-${width}`);
    }
    afterEach();
  });

  it('a key reported leaked: a banner says which, where and what to do; the table says Leaked and where; nothing cut off at 1280 or 375 px', async () => {
    const { domain, shopId } = await shopOn('enterprise');
    const old = await generateKey({ ctx: s.t.ctx, input: { shopId, name: 'Old staging server (eu-west)' } });
    await revokeKey({ ctx: s.t.ctx, input: { shopId, keyId: old.key.id } });
    const leaked = await generateKey({ ctx: s.t.ctx, input: { shopId, name: 'ERP sync' } });
    await generateKey({ ctx: s.t.ctx, input: { shopId, name: 'Claude Code', access: 'read_only' } });
    expect((await callApi(leaked.secret)).status).toBe(200);
    // The report as POST /secret-scanning/github acts on it, once its signature is verified (secretScanning.security.test.ts).
    const where = 'https://github.com/acme-corp/storefront-integration/blob/3f9a2c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39/config/production.env';
    const outcome = await reportLeakedKeys({ ctx: s.t.ctx, input: { matches: [{ token: leaked.secret, type: 'svc_api_key', url: where, source: 'commit' }] } });
    expect(outcome.revoked).toBe(1);
    expect((await callApi(leaked.secret)).status).toBe(401);

    for (const [width, height] of [[1280, 800], [375, 812]]) {
      const t = await tab({ width, height });
      const { page } = t;
      await open(t, domain);
      await page.getByText('1 of 5 active').waitFor();
      const banner = page.getByText('An API key was found in public and revoked');
      await banner.waitFor();
      const item = page.getByTestId(`leaked-${leaked.key.id}`);
      await item.getByText('ERP sync').waitFor();
      await item.getByText(leaked.key.fingerprint).waitFor();
      expect(await item.getByRole('link').getAttribute('href')).toBe(where);
      await page.getByText('Generate a new key, put it in your integration', { exact: false }).waitFor();
      // The table (rows at a laptop's width, a list on a phone): Leaked, with where, for that key; Revoked for the
      // one revoked by hand.
      const table = page.locator('.Polaris-IndexTable');
      const badge = (text: string) => table.locator('.Polaris-Badge', { hasText: text });
      await badge('Leaked').waitFor();
      await badge('Revoked').waitFor();
      expect(await table.getByRole('link', { name: /^github\.com\/acme-corp\/storefront/ }).getAttribute('href')).toBe(where);
      await expectNoClippedTables(page, { scrolling: width < 1280, where: `the keys table with a leaked key at ${width} px` });
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
      await screenshot(page, `api-leaked-${width}`);
      if (width === 375) {
        // Dismissed, it stays dismissed in this browser; the table still says what happened.
        await page.getByRole('button', { name: 'Dismiss notification' }).click();
        await banner.waitFor({ state: 'detached' });
        await page.reload();
        await page.getByText('1 of 5 active').waitFor();
        await badge('Leaked').waitFor();
        expect(await page.getByText('An API key was found in public and revoked').count()).toBe(0);
      }
    }
    afterEach();
  });

  it('at 375 px the page fits the screen; the dialog is keyboard-operable and gives focus back', async () => {
    const { domain } = await shopOn('enterprise');
    const t = await tab({ width: 375, height: 812 });
    const { page } = t;
    await open(t, domain);
    await page.getByText('0 of 5 active').waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await screenshot(page, 'api-mobile-375');

    const generate = page.getByRole('button', { name: 'Generate key' });
    await generate.focus();
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog');
    // On a phone the dialog is a bottom sheet whose role=dialog box has no height: wait for its title instead.
    await dialog.getByRole('heading', { name: 'Generate API key' }).waitFor();
    await expect.poll(() => page.evaluate(() => Boolean(document.activeElement?.closest('[role="dialog"]')))).toBe(true);
    // Tab stays inside the dialog.
    for (let i = 0; i < 6; i++) {
      await page.keyboard.press('Tab');
      expect(await page.evaluate(() => Boolean(document.activeElement?.closest('[role="dialog"]')))).toBe(true);
    }
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    await expect.poll(() => generate.evaluate((el) => el === document.activeElement)).toBe(true);

    // The key shown once still fits: generate one and look at it on the narrow screen.
    await page.keyboard.press('Enter');
    await dialog.getByLabel('Key name (optional)').fill('Phone');
    await dialog.getByRole('button', { name: 'Generate key' }).click();
    await dialog.getByText('This key will not be shown again').waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await screenshot(page, 'api-mobile-375-key-shown', false);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    expect(await page.content()).not.toMatch(SECRET);
    await page.getByRole('button', { name: 'Revoke Phone' }).waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await screenshot(page, 'api-mobile-375-keys');
    afterEach();
  });
});
