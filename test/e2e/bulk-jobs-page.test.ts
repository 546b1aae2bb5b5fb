import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { BulkJobWorker } from '../../src/workers/bulkJobs.js';
import type { TestApp } from '../support/app.js';
import { contractRow, eventRows, sql } from '../support/fixtures.js';
import { insertManyContracts, MANY_STATUSES } from '../support/manyContracts.js';
import { describeInBrowser, ensureAdminUiBuilt, launch, openTab, screenshot, serve, type Served, type Tab } from './browser.js';
import { expectNoClippedTables } from './clipping.js';

/**
 * The admin's bulk change in a real browser (docs/bulk-jobs.md): the Contracts page's filters → "Change N
 * contracts…" → a change → its preview (counts, totals, problems) → Start → a progress bar that moves → the results
 * and their CSV; the Bulk jobs page lists the job and opens it.
 */

const DAY = 86_400_000;
/** A day as a date field takes it. */
const dayField = (d: Date) => d.toISOString().slice(0, 10);
const SLOW = { timeout: 20_000 };
const eur = (n: number) => new Intl.NumberFormat('en-US', { style: 'currency', currency: 'EUR' }).format(n);

/**
 * The bulk-job worker, driven by the test: on its own it runs one batch of `batchSize` items per round, a round every
 * `pauseMs`; once `byHand()` is called it runs a round only when `step()` asks for one, so the test sees the page
 * follow each batch. (The service's own worker runs batches back to back.)
 */
function drivenWorker(t: TestApp, opts: { batchSize: number; pauseMs: number }) {
  let allowance = 0;
  const worker = new BulkJobWorker(t.ctx, { intervalMs: 60_000, batchSize: opts.batchSize, busy: () => allowance-- <= 0 });
  let stopped = false;
  let auto = true;
  let asked = null as (() => void) | null;
  const loop = (async () => {
    while (!stopped) {
      if (auto || asked) {
        allowance = 1;
        await worker.tick().catch(() => {});
        const done = asked;
        asked = null;
        done?.();
      }
      await new Promise((r) => setTimeout(r, auto ? opts.pauseMs : 20));
    }
  })();
  return {
    byHand() {
      auto = false;
    },
    /** One round (one batch), awaited. */
    step: () => new Promise<void>((resolve) => (asked = resolve)),
    async stop() {
      stopped = true;
      asked?.();
      await loop;
    },
  };
}

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
  // Evaluated by the browser's debugger, which the page's Content-Security-Policy (script-src 'self') does not govern.
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const res = await (window as unknown as { axe: { run(ctx: Document, o: object): Promise<{ violations: { id: string; impact: string; help: string; nodes: { target: string[] }[] }[] }> } }).axe.run(document, {
      resultTypes: ['violations'],
    });
    return res.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
  });
  expect(violations, `axe: ${where}`).toEqual([]);
}

describeInBrowser('admin UI: bulk jobs in a real browser', () => {
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
  const open = async (t: Tab, domain: string, path: string) => t.page.goto(`${s.base}${path}#token=${await s.t.sessionToken(domain)}`, SLOW);
  /** The dialog's content, found by its title (on a phone the dialog is a bottom sheet whose role=dialog box has no height). */
  const dialog = async (page: Page, title: string) => {
    await page.getByRole('heading', { name: title }).waitFor(SLOW);
    return page.getByRole('dialog');
  };
  /**
   * After Start: one batch at a time, each time waiting for the progress bar to show more, until the job's badge says
   * `end`. Answers every value the bar showed, in order.
   */
  const followProgress = async (page: Page, worker: ReturnType<typeof drivenWorker>, end: string) => {
    const seen: number[] = [];
    const bar = page.getByRole('progressbar');
    const finished = page.getByRole('dialog').getByText(end, { exact: true }).or(page.locator('main').getByText(end, { exact: true })).first();
    const read = async () => Number(await bar.first().getAttribute('value', { timeout: 1000 }).catch(() => NaN));
    for (let round = 0; round < 50 && !(await finished.isVisible()); round++) {
      await worker.step();
      const before = seen[seen.length - 1] ?? -1;
      await expect.poll(async () => (await finished.isVisible()) || (await read()) > before, SLOW).toBe(true);
      const value = await read();
      if (!Number.isNaN(value) && value !== before) seen.push(value);
    }
    return seen;
  };
  /** Statistic boxes: the number under a label. */
  const stat = (page: Page, label: string) => page.getByRole('dialog').getByText(label, { exact: true }).locator('xpath=following-sibling::*[1]');

  /** Contract i (1-based) of insertManyContracts: its status and its next order total. */
  const statusOf = (i: number) => MANY_STATUSES[i % 5];
  const totalOf = (i: number) => 24 * (1 + (i % 3));

  it('at 1280 px: filter, Change N contracts, pause, preview with its problems, Start, progress, results and CSV; listed on Bulk jobs', async () => {
    const shop = await s.t.shopWithKey('enterprise');
    const ids = await insertManyContracts(s.t, shop.shopId, 300);
    const worker = drivenWorker(s.t, { batchSize: 30, pauseMs: 200 });
    try {
      const t = await tab({ width: 1280, height: 900 });
      const { page } = t;
      await open(t, shop.domain, '/admin/contracts');
      await page.getByRole('heading', { name: 'Contracts', exact: true }).waitFor();
      await page.getByText('300 contracts match the filters.').waitFor(SLOW);

      // Active and cancelled ones billed within ten days: the cancelled cannot be paused, the preview says so.
      const within = 10 * 24; // contract i bills i hours from now
      const pick = ids.map((id, k) => ({ id, i: k + 1 })).filter(({ i }) => i <= within);
      const active = pick.filter(({ i }) => statusOf(i) === 'ACTIVE');
      const cancelled = pick.filter(({ i }) => statusOf(i) === 'CANCELLED');
      await page.getByRole('checkbox', { name: 'Active' }).check();
      await page.getByRole('checkbox', { name: 'Cancelled' }).check();
      const now = s.t.clock.now();
      await page.getByLabel('Next billing to').fill(dayField(new Date(now.getTime() + 10 * DAY - DAY)));
      // The day before ten days from now, to its end (UTC, the browser's zone): hours up to the end of that day.
      const end = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 9, 23, 59, 59, 999);
      const matched = ids.map((id, k) => ({ id, i: k + 1 })).filter(({ i }) => statusOf(i) !== 'PAUSED' && now.getTime() + i * 3_600_000 <= end);
      const willChange = matched.filter(({ i }) => statusOf(i) === 'ACTIVE');
      const problems = matched.filter(({ i }) => statusOf(i) === 'CANCELLED');
      expect(willChange.length).toBeGreaterThan(100);
      expect(active.length + cancelled.length).toBeGreaterThanOrEqual(matched.length);
      const button = page.getByRole('button', { name: `Change ${matched.length} contracts…` });
      await button.waitFor(SLOW);
      await page.getByText(`${matched.length} contracts match the filters.`).waitFor();
      // The list shows what the filter matches: no paused contract.
      expect(await page.locator('tbody').getByText('Paused', { exact: true }).count()).toBe(0);
      expect(t.adminCalls.some((c) => c.url.startsWith('/admin/api/contracts?') && c.url.includes('status=ACTIVE&status=CANCELLED') && c.url.includes('nextBillingDateTo='))).toBe(true);
      await expectAccessible(page, 'the Contracts page with filters');
      await screenshot(page, 'bulk-contracts-filtered', false);

      // The change: a pause until a day ahead.
      await button.click();
      const d = await dialog(page, `Change ${matched.length} contracts`);
      await d.getByText('Status: Active or Cancelled').waitFor();
      expect(await d.getByLabel('Change').inputValue()).toBe('pause');
      const resumeOn = new Date(now.getTime() + 30 * DAY);
      await d.getByLabel('Resume date (optional)').fill(dayField(resumeOn));
      await expectAccessible(page, 'the bulk change dialog');
      await d.getByRole('button', { name: 'Preview changes' }).click();

      // The preview: counts, totals before and after, and the problems contract by contract.
      await page.getByRole('heading', { name: 'Preview of the change' }).waitFor(SLOW);
      await d.getByText('Previewed', { exact: true }).waitFor(SLOW);
      expect(await stat(page, 'Matched').textContent()).toBe(String(matched.length));
      expect(await stat(page, 'Will change').textContent()).toBe(String(willChange.length));
      expect(await stat(page, 'Unchanged').textContent()).toBe('0');
      expect(await stat(page, 'Problems').textContent()).toBe(String(problems.length));
      const total = willChange.reduce((sum, { i }) => sum + totalOf(i), 0);
      await d.getByText(`${eur(total)} → ${eur(total)}`).waitFor();
      // The problems first, a page at a time, each with why.
      const rows = d.locator('tbody tr');
      await expect.poll(() => rows.count(), SLOW).toBe(Math.min(20, problems.length));
      const firstProblem = d.getByRole('row', { name: new RegExp(`#${problems[0].id}\\b`) });
      await firstProblem.getByText(/Cannot pause a contract that is CANCELLED/).waitFor();
      if (problems.length > 20) {
        await d.getByRole('button', { name: 'Next' }).click();
        await d.getByRole('row', { name: new RegExp(`#${problems[20].id}\\b`) }).waitFor(SLOW);
        await d.getByRole('button', { name: 'Previous' }).click();
        await firstProblem.waitFor(SLOW);
      }
      // Nothing changed yet.
      expect((await contractRow(s.t, willChange[0].id)).status).toBe('ACTIVE');
      await expectAccessible(page, 'the preview');
      await screenshot(page, 'bulk-preview', false);

      // Start: the progress bar moves while the job runs.
      worker.byHand();
      await d.getByRole('button', { name: `Start: change ${willChange.length} contracts` }).click();
      const values = await followProgress(page, worker, 'Completed');
      expect(values.length, `progress seen: ${values.join(', ')}`).toBeGreaterThanOrEqual(2);
      expect(new Set(values.filter((v) => v < 100)).size, `progress seen: ${values.join(', ')}`).toBeGreaterThanOrEqual(2);
      expect([...values].sort((a, b) => a - b)).toEqual(values);

      // The results: what changed, what failed, as a CSV too.
      await d.getByText('Completed', { exact: true }).waitFor(SLOW);
      expect(await stat(page, 'Changed').textContent()).toBe(String(willChange.length));
      expect(await stat(page, 'Failed').textContent()).toBe(String(problems.length));
      const download = page.waitForEvent('download');
      await d.getByRole('button', { name: 'Download results (CSV)' }).click();
      const file = await download;
      expect(file.suggestedFilename()).toMatch(/^bulk-job-[0-9a-f-]{36}\.csv$/);
      const csv = readFileSync((await file.path())!, 'utf8').trim().split('\r\n');
      expect(csv[0]).toBe('contractId,status,code,message,totalBefore,totalAfter,currencyCode');
      const byContract = new Map(csv.slice(1).map((l) => [l.split(',')[0], l]));
      expect(byContract.size).toBe(matched.length);
      for (const { id, i } of willChange) expect(byContract.get(id)).toBe(`${id},succeeded,,,${totalOf(i)}.00,${totalOf(i)}.00,EUR`);
      for (const { id } of problems) expect(byContract.get(id)).toMatch(new RegExp(`^${id},failed,invalid_state,`));
      await screenshot(page, 'bulk-results', false);

      // The contracts are paused until that day, each by the job.
      const jobId = file.suggestedFilename().slice('bulk-job-'.length, -'.csv'.length);
      for (const { id } of [willChange[0], willChange[willChange.length - 1]]) {
        const row = await contractRow(s.t, id);
        expect(row.status).toBe('PAUSED');
        expect(dayField(row.resumeAt!)).toBe(dayField(resumeOn));
        expect(await eventRows(s.t, id)).toMatchObject([{ type: 'contract.paused', actorType: 'bulk_job', actorId: jobId }]);
      }
      const [{ n }] = await sql<{ n: number }>(s.t, `SELECT count(*)::int AS n FROM subscription_contracts WHERE shop_id = $1 AND status = 'PAUSED'`, [shop.shopId]);
      expect(n).toBe(ids.filter((_, k) => statusOf(k + 1) === 'PAUSED').length + willChange.length);

      // Closed, the list behind shows what the filter matches now: the cancelled ones.
      await d.getByRole('button', { name: 'Close' }).last().click();
      await page.getByText(`${problems.length} contracts match the filters.`).waitFor(SLOW);

      // The Bulk jobs page lists the job; it opens with the same view.
      await page.getByRole('link', { name: 'Bulk jobs' }).first().click();
      await page.getByRole('heading', { name: 'Bulk jobs', exact: true }).waitFor();
      expect(await page.title()).toBe('Bulk jobs · svc');
      const listed = page.getByRole('row', { name: /Pause until/ });
      await listed.waitFor(SLOW);
      await listed.getByText('Completed', { exact: true }).waitFor();
      await listed.getByText(String(matched.length), { exact: true }).waitFor();
      await listed.getByText('Admin', { exact: true }).waitFor();
      await listed.getByText(/^100% · /).waitFor();
      await expectNoClippedTables(page, { scrolling: false, where: 'the bulk jobs list' });
      await expectAccessible(page, 'the Bulk jobs page');
      await screenshot(page, 'bulk-jobs-list', false);
      await listed.getByRole('link').click();
      await page.getByRole('heading', { name: 'Bulk job', exact: true }).waitFor();
      expect(await page.title()).toBe('Bulk job · svc');
      expect(page.url()).toContain(`/admin/bulk-jobs/${jobId}`);
      await page.locator('main').getByText('Completed', { exact: true }).waitFor();
      await page.getByRole('button', { name: 'Download results (CSV)' }).waitFor();
      await expectAccessible(page, 'a bulk job\'s page');
      await finish();
    } finally {
      await worker.stop();
    }
  }, 240_000);

  it('at 375 px: a price rise by variant, previewed with its totals, started from the Bulk jobs page, followed to its results', async () => {
    const shop = await s.t.shopWithKey('enterprise');
    const ids = await insertManyContracts(s.t, shop.shopId, 150);
    const worker = drivenWorker(s.t, { batchSize: 15, pauseMs: 200 });
    try {
      const t = await tab({ width: 375, height: 812 });
      const { page } = t;
      await open(t, shop.domain, '/admin/contracts');
      await page.getByText('150 contracts match the filters.').waitFor(SLOW);
      await page.getByRole('checkbox', { name: 'Active' }).check();
      await page.getByLabel('Variant ID').fill('51');
      const active = ids.map((id, k) => ({ id, i: k + 1 })).filter(({ i }) => statusOf(i) === 'ACTIVE');
      await page.getByRole('button', { name: `Change ${active.length} contracts…` }).click();
      const d = await dialog(page, `Change ${active.length} contracts`);
      await d.getByLabel('Change').selectOption('set_price');
      // The variant filter names the variant to change.
      expect(await d.getByLabel('Variant ID').inputValue()).toBe('51');
      await d.getByLabel('New unit price').fill('26.50');
      await d.getByRole('button', { name: 'Preview changes' }).click();
      await d.getByText('Previewed', { exact: true }).waitFor(SLOW);
      // Each contract's one line of variant 51 at the new price: before and after, per currency.
      const before = active.reduce((sum, { i }) => sum + totalOf(i), 0);
      const after = active.reduce((sum, { i }) => sum + 26.5 * (1 + (i % 3)), 0);
      await d.getByText(`${eur(before)} → ${eur(after)}`).waitFor();
      await d.getByText(`(+${eur(after - before)})`).waitFor();
      expect(await stat(page, 'Will change').textContent()).toBe(String(active.length));
      expect(await stat(page, 'Problems').textContent()).toBe('0');
      await d.getByText('No problems: every contract can be changed as asked.').waitFor();
      await screenshot(page, 'bulk-preview-phone');
      // Closed: the preview waits on the Bulk jobs page, and is started there.
      await d.getByRole('button', { name: 'Close' }).last().click();
      await open(t, shop.domain, '/admin/bulk-jobs');
      // On a phone the table is a list: a row is an item.
      const listed = page.locator('li, tr').filter({ has: page.getByRole('link', { name: /Set the price of variant 51 to 26\.50/ }) });
      await listed.getByText('Previewed', { exact: true }).waitFor(SLOW);
      await expectNoClippedTables(page, { where: 'the bulk jobs list on a phone' });
      await listed.getByRole('link').click();
      await page.getByRole('heading', { name: 'Bulk job', exact: true }).waitFor();
      worker.byHand();
      await page.getByRole('button', { name: `Start: change ${active.length} contracts` }).click();
      const values = await followProgress(page, worker, 'Completed');
      expect(new Set(values.filter((v) => v < 100)).size, `progress seen: ${values.join(', ')}`).toBeGreaterThanOrEqual(2);
      expect([...values].sort((a, b) => a - b)).toEqual(values);
      await page.locator('main').getByText('Completed', { exact: true }).waitFor(SLOW);
      const download = page.waitForEvent('download');
      await page.getByRole('button', { name: 'Download results (CSV)' }).click();
      const csv = readFileSync((await (await download).path())!, 'utf8').trim().split('\r\n');
      expect(csv).toHaveLength(active.length + 1);
      const { id, i } = active[0];
      expect(csv).toContain(`${id},succeeded,,,${totalOf(i)}.00,${(26.5 * (1 + (i % 3))).toFixed(2)},EUR`);
      expect((await contractRow(s.t, id)).lines[0].price.amount).toBe('26.50');
      await expectNoClippedTables(page, { where: 'a bulk job on a phone' });
      await expectAccessible(page, 'a bulk job on a phone');
      await screenshot(page, 'bulk-job-phone');
      await finish();
    } finally {
      await worker.stop();
    }
  }, 240_000);
});
