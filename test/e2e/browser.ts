/// <reference lib="dom" />
// (the tests hand functions to page.evaluate that run in the browser, so they are typed against the DOM)
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, openSync, closeSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { describe } from 'vitest';
import { startTestApp, TestClock, type TestApp } from '../support/app.js';

/**
 * Browser tests run Debian's Chromium through playwright-core against a real listening server. Without Chromium
 * they are skipped with one line, except in CI, where a missing browser is a failure.
 */
export const CHROMIUM = '/usr/bin/chromium';
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const SCREENSHOT_DIR = path.join(ROOT, 'artifacts', 'screenshots');

const haveChromium = existsSync(CHROMIUM);

/** describe() when Chromium is there; otherwise describe.skip, announced once per test run (not once per file). */
export function describeInBrowser(name: string, fn: () => void): void {
  // BROWSER_TESTS=off: skipped on purpose (CI's runs on the other Node lines: the pages do not depend on the server's
  // Node version, and the admin's routes are tested there without a browser).
  if (process.env.BROWSER_TESTS === 'off') {
    describe.skip(name, fn);
    return;
  }
  // A browser test does many steps, each awaited for real: more room than the suite's 30 s default.
  if (haveChromium) {
    describe(name, { timeout: 90_000 }, fn);
    return;
  }
  if (process.env.CI === 'true') {
    describe(name, () => {
      throw new Error(`Chromium is missing at ${CHROMIUM}; CI must install it (apt-get install -y chromium).`);
    });
    return;
  }
  // Every test file runs in its own worker, all children of the one vitest process: the first to get here says it.
  const marker = path.join(os.tmpdir(), `svc-e2e-skip-notice-${process.ppid}`);
  try {
    closeSync(openSync(marker, 'wx'));
    console.log(`[svc tests] browser tests skipped: no Chromium at ${CHROMIUM} (install it: apt-get install -y chromium)`);
  } catch {
    // already announced in this run
  }
  describe.skip(name, fn);
}

function newestMtime(p: string): number {
  const s = statSync(p);
  if (!s.isDirectory()) return s.mtimeMs;
  return Math.max(s.mtimeMs, ...readdirSync(p).map((f) => newestMtime(path.join(p, f))));
}

/**
 * The tests serve the real built UI. Build it when it is missing or older than its sources (npm install builds it
 * too); a lock keeps two test files from building at once.
 */
export async function ensureAdminUiBuilt(): Promise<void> {
  const index = path.join(ROOT, 'web', 'dist', 'index.html');
  const sources = [path.join(ROOT, 'web', 'src'), path.join(ROOT, 'web', 'index.html'), path.join(ROOT, 'vite.config.ts')];
  const stale = () => !existsSync(index) || statSync(index).mtimeMs < Math.max(...sources.map(newestMtime));
  if (!stale()) return;
  const lock = path.join(os.tmpdir(), 'svc-web-build.lock');
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      if (Date.now() > deadline) throw new Error(`could not take ${lock}; remove it if no build is running`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  try {
    if (!stale()) return;
    const vite = path.join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js');
    // Vitest sets NODE_ENV=test, which would make vite bundle React's development build.
    const env = { ...process.env, NODE_ENV: 'production' };
    const res = spawnSync(process.execPath, [vite, 'build', '--logLevel', 'warn'], { cwd: ROOT, encoding: 'utf8', env });
    if (res.status !== 0) throw new Error(`npm run build:web failed:\n${res.stdout}\n${res.stderr}`);
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

export type Served = { t: TestApp; base: string };

/** A test app on a fresh database, listening on 127.0.0.1, with a clock at real time (the browser's clock). */
export async function serve(opts: Parameters<typeof startTestApp>[0] = {}): Promise<Served> {
  const t = await startTestApp({ clock: new TestClock(new Date()), ...opts });
  const base = (await t.app.listen({ port: 0, host: '127.0.0.1' })).replace('[::1]', '127.0.0.1');
  return { t, base };
}

export function launch(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

export type Tab = { context: BrowserContext; page: Page; external: string[]; errors: string[]; adminCalls: { url: string; authorization?: string }[] };

/**
 * A fresh browser context (own storage) in UTC/en-US, that records any request leaving 127.0.0.1 (and aborts it),
 * page errors, and every admin API call with its Authorization header.
 */
export async function openTab(browser: Browser, opts: { width?: number; height?: number; clipboard?: boolean } = {}): Promise<Tab> {
  const context = await browser.newContext({
    viewport: { width: opts.width ?? 1280, height: opts.height ?? 800 },
    locale: 'en-US',
    timezoneId: 'UTC',
    permissions: opts.clipboard ? ['clipboard-read', 'clipboard-write'] : [],
  });
  const tab: Tab = { context, page: await context.newPage(), external: [], errors: [], adminCalls: [] };
  await context.route('**/*', (route) => {
    const url = new URL(route.request().url());
    if (url.hostname !== '127.0.0.1') {
      tab.external.push(url.href);
      return route.abort().catch(() => {}); // the context may close first
    }
    if (url.pathname.startsWith('/admin/api/')) {
      tab.adminCalls.push({ url: url.pathname + url.search, authorization: route.request().headers().authorization });
    }
    return route.continue().catch(() => {});
  });
  // Fail with Playwright's message (what it waited for) well before the test's own timeout.
  tab.page.setDefaultTimeout(8_000);
  tab.page.on('pageerror', (e) => tab.errors.push(e.message));
  tab.page.on('console', (m) => {
    // The browser logs every 4xx as "Failed to load resource"; the tests check how the page shows those.
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) tab.errors.push(m.text());
  });
  return tab;
}

/** Saves a screenshot artifact (not committed) and prints where it is. */
export async function screenshot(page: Page, name: string, fullPage = true): Promise<string> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const file = path.join(SCREENSHOT_DIR, `${name}.png`);
  // Playwright's fullPage capture scrolls, which misplaces the admin's fixed top bar: grow the viewport instead.
  const size = page.viewportSize();
  const height = fullPage && size ? await page.evaluate(() => document.documentElement.scrollHeight) : 0;
  if (size && height > size.height) await page.setViewportSize({ width: size.width, height: Math.min(height, 4000) });
  await page.screenshot({ path: file, animations: 'disabled' });
  if (size && height > size.height) await page.setViewportSize(size);
  console.log(`[svc tests] screenshot: ${path.relative(ROOT, file)}`);
  return file;
}
