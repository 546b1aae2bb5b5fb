import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { createLogger } from '../../src/http/logging.js';
import { startTestApp, TEST_CREDENTIALS, type TestApp } from '../support/app.js';
import { ensureAdminUiBuilt } from './browser.js';

/** How the service serves the built admin UI at /admin, next to the admin JSON API at /admin/api (no browser needed). */
describe('admin UI: served at /admin', () => {
  let t: TestApp;
  const extra: FastifyInstance[] = [];
  const appWith = async (adminUi: { shopifyApiKey?: string; distDir?: string }) => {
    const logs: string[] = [];
    const app = await buildApp({
      ctx: t.ctx,
      credentials: TEST_CREDENTIALS,
      logger: createLogger({ level: 'info', sink: { write: (l) => logs.push(l) } }),
      adminUi,
    });
    extra.push(app);
    return { app, logs };
  };

  beforeAll(async () => {
    await ensureAdminUiBuilt();
    t = await startTestApp();
  });
  afterAll(async () => {
    for (const app of extra) await app.close();
    await t.close();
  });

  it('answers every page path with the single page, which loads nothing from another origin', async () => {
    for (const url of ['/admin', '/admin/', '/admin/settings/api', '/admin/contracts', '/admin/no/such/page?x=1']) {
      const res = await t.inject({ url, headers: { accept: 'text/html' } });
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers['content-security-policy']).toContain("default-src 'self'");
      expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
      expect(res.body).toContain('<div id="root"></div>');
      expect(res.body).not.toMatch(/https?:\/\//);
      expect(res.body).not.toContain('shopify-api-key');
    }
  });

  it('serves the hashed assets for a year, and a missing asset is a 404 envelope, not the page', async () => {
    const assets = readdirSync(path.join(process.cwd(), 'web', 'dist', 'assets'));
    const js = assets.find((f) => f.endsWith('.js'))!;
    const css = assets.find((f) => f.endsWith('.css'))!;
    const jsRes = await t.inject({ url: `/admin/assets/${js}` });
    expect(jsRes.statusCode).toBe(200);
    expect(jsRes.headers['content-type']).toMatch(/javascript/);
    expect(jsRes.headers['cache-control']).toContain('immutable');
    expect((await t.inject({ url: `/admin/assets/${css}` })).headers['content-type']).toMatch(/text\/css/);
    // Polaris' stylesheet is bundled, not fetched from a CDN.
    expect((await t.inject({ url: `/admin/assets/${css}` })).body).toContain('.Polaris-Page');

    const missing = await t.inject({ url: '/admin/assets/nope.js' });
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error).toMatchObject({ code: 'not_found' });
  });

  it('leaves /admin/api to the JSON API: unknown paths are 404 envelopes, wrong methods 405', async () => {
    for (const [method, url] of [['GET', '/admin/api/nope'], ['POST', '/admin/api/nope'], ['GET', '/admin/api'], ['POST', '/admin/contracts']] as const) {
      const res = await t.inject({ method, url, headers: { accept: 'text/html' } });
      expect(res.statusCode, `${method} ${url}`).toBe(404);
      expect(res.json().error).toMatchObject({ code: 'not_found' });
    }
    const wrong = await t.inject({ method: 'GET', url: '/admin/api/keys/1/revoke' });
    expect(wrong.statusCode).toBe(405);
    expect(wrong.headers.allow).toBe('POST');
    const noToken = await t.inject({ url: '/admin/api/keys', headers: { accept: 'text/html' } });
    expect(noToken.statusCode).toBe(401);
    expect(noToken.json().error.code).toBe('unauthorized');
  });

  it('embedded (SHOPIFY_API_KEY set): adds the api-key meta tag and App Bridge first in <head>, framable by the admin', async () => {
    const { app } = await appWith({ shopifyApiKey: 'key-with-"quote<' });
    const res = await app.inject({ url: '/admin/settings/api' });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('<meta name="shopify-api-key" content="key-with-&quot;quote&lt;" />');
    const head = res.body.slice(0, res.body.indexOf('</head>'));
    // App Bridge is written in synchronously, unless the page was opened with an admin link (test/e2e/admin-link.test.ts).
    const firstScript = head.slice(head.indexOf('<script'));
    expect(firstScript).toMatch(/^<script>\(function\(\)\{.*document\.write\('<script src="https:\/\/cdn\.shopify\.com\/shopifycloud\/app-bridge\.js"><\\\/script>'\)/);
    expect(head.indexOf('app-bridge.js')).toBeLessThan(head.indexOf('type="module"'));
    expect(res.headers['content-security-policy']).toContain('frame-ancestors https://admin.shopify.com https://*.myshopify.com');
  });

  it('serves the site icon: /favicon.ico (a 32×32 PNG in an ICO) and the SVG the admin page names', async () => {
    const ico = await t.inject({ url: '/favicon.ico' });
    expect(ico.statusCode).toBe(200);
    expect(ico.headers['content-type']).toBe('image/x-icon');
    const bytes = ico.rawPayload;
    // ICONDIR: reserved 0, type 1 (icon), one image of 32×32 whose data is a PNG at the offset the entry names.
    expect([bytes.readUInt16LE(0), bytes.readUInt16LE(2), bytes.readUInt16LE(4), bytes[6], bytes[7]]).toEqual([0, 1, 1, 32, 32]);
    const png = bytes.subarray(bytes.readUInt32LE(18));
    expect(png.length).toBe(bytes.readUInt32LE(14));
    expect(png.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
    expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([32, 32]);

    const page = await t.inject({ url: '/admin', headers: { accept: 'text/html' } });
    const href = /<link rel="icon" type="image\/svg\+xml" href="([^"]+)"/.exec(page.body)?.[1];
    expect(href).toBe('/admin/favicon.svg');
    const svg = await t.inject({ url: href! });
    expect(svg.statusCode).toBe(200);
    expect(svg.headers['content-type']).toBe('image/svg+xml');
    expect(svg.body).toMatch(/^<svg [^>]*viewBox="0 0 32 32"/);
  });

  it('without a build, /admin says to run npm run build:web (HTML for browsers, the envelope otherwise) and the rest works', async () => {
    const empty = mkdtempSync(path.join(os.tmpdir(), 'svc-no-ui-'));
    try {
      const { app, logs } = await appWith({ distDir: empty });
      expect(logs.join('\n')).toContain('npm run build:web');
      const page = await app.inject({ url: '/admin', headers: { accept: 'text/html,application/xhtml+xml' } });
      expect(page.statusCode).toBe(503);
      expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(page.body).toContain('npm run build:web');
      const json = await app.inject({ url: '/admin/settings/api' });
      expect(json.statusCode).toBe(503);
      expect(json.json().error).toMatchObject({ code: 'unavailable' });
      expect(json.json().error.message).toContain('npm run build:web');
      expect((await app.inject({ url: '/healthz' })).statusCode).toBe(200);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
