import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ServiceError } from '../../domain/errors.js';
import { sendError } from '../errors.js';

export const DEFAULT_ADMIN_UI_DIR = fileURLToPath(new URL('../../../web/dist', import.meta.url));
const APP_BRIDGE_SCRIPT = 'https://cdn.shopify.com/shopifycloud/app-bridge.js';
const NOT_BUILT =
  'The admin UI has not been built. Run `npm run build:web` (npm install and npm ci run it too), then reload this page.';

export type AdminUiOptions = {
  /** The built UI (vite's output); defaults to web/dist. */
  distDir?: string;
  /** SHOPIFY_API_KEY when configured: the page then runs embedded, with App Bridge supplying session tokens. */
  shopifyApiKey?: string;
  /** The application's own not-found handler (404 / 405 envelope), for everything under /admin that is not a page. */
  notFound: (req: FastifyRequest, reply: FastifyReply) => unknown;
};

const escapeAttr = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/**
 * Standalone pages may load nothing but their own bundle. Embedded pages run inside the shop admin, load App Bridge
 * from the platform's CDN (that is how the platform works) and may only be framed by the admin.
 */
function securityHeaders(embedded: boolean): Record<string, string> {
  const csp = embedded
    ? "frame-ancestors https://admin.shopify.com https://*.myshopify.com; object-src 'none'; base-uri 'self'"
    : "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; " +
      "connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'";
  return {
    'content-security-policy': csp,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    // The page is tiny and its asset names change with every build; never serve a stale one.
    'cache-control': 'no-store',
  };
}

/** index.html, re-read when a rebuild replaces it, so `npm run build:web` needs no server restart. */
function indexLoader(distDir: string) {
  const file = path.join(distDir, 'index.html');
  let cached: { mtimeMs: number; html: string } | null = null;
  return (): string | null => {
    try {
      const { mtimeMs } = statSync(file);
      if (!cached || cached.mtimeMs !== mtimeMs) cached = { mtimeMs, html: readFileSync(file, 'utf8') };
      return cached.html;
    } catch {
      cached = null;
      return null;
    }
  };
}

/**
 * The key the page keeps a standalone session token under (web/src/auth.ts, STORAGE_KEY, in localStorage): every
 * top-level tab of a browser that opened an admin link works standalone until the token expires.
 */
const STANDALONE_TOKEN_KEY = 'svc.admin.sessionToken';

/**
 * Embedded mode: App Bridge wants its key in a meta tag and its script first in <head>, loaded synchronously. It
 * works only inside the shop admin, so it is written into the page only when the page is not opened standalone: an
 * operator's admin link (`#token=…`, which never reaches the server, or the token a tab of this browser already took
 * from one, in a top-level page: inside the shop admin's frame the page is embedded) opens the screen in a plain
 * browser tab even when SHOPIFY_API_KEY is set. `document.write` keeps the script
 * parser-inserted and synchronous, as App Bridge requires, ahead of the app's own module.
 */
export function renderIndex(html: string, shopifyApiKey?: string): string {
  if (!shopifyApiKey) return html;
  const loader =
    `(function(){var s=new URLSearchParams(location.hash.slice(1)).has('token');` +
    `try{s=s||(top===self&&!!localStorage.getItem('${STANDALONE_TOKEN_KEY}'))}catch(e){}` +
    `if(!s)document.write('<script src="${APP_BRIDGE_SCRIPT}"><\\/script>')})()`;
  const tags = `<meta name="shopify-api-key" content="${escapeAttr(shopifyApiKey)}" />\n    <script>${loader}</script>`;
  return html.replace(/<head>/i, (m) => `${m}\n    ${tags}`);
}

const notBuiltPage = () =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
  `<title>Admin UI not built</title></head><body style="font-family:system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;line-height:1.5">` +
  `<h1>The admin UI has not been built</h1><p>Run <code>npm run build:web</code> where the service is installed ` +
  `(<code>npm install</code> and <code>npm ci</code> run it too), then reload this page.</p></body></html>`;

/**
 * The admin UI at /admin (docs/product.md §6): hashed assets under /admin/assets/, and every other GET under /admin that is
 * not the admin JSON API answered with the single page, whose router draws the right screen.
 */
export async function adminUiRoutes(app: FastifyInstance, opts: AdminUiOptions) {
  const distDir = opts.distDir ?? DEFAULT_ADMIN_UI_DIR;
  const embedded = Boolean(opts.shopifyApiKey);
  const loadIndex = indexLoader(distDir);
  let favicon: Buffer | null = null;
  const loadFavicon = () => {
    try {
      favicon ??= readFileSync(path.join(distDir, 'favicon.svg'));
    } catch {
      // not built yet: 404 until it is
    }
    return favicon;
  };
  if (!loadIndex()) app.log.warn({ distDir }, NOT_BUILT);

  await app.register(fastifyStatic, {
    root: path.join(distDir, 'assets'),
    prefix: '/assets/',
    decorateReply: false,
    index: false,
    // Asset names carry a content hash: a name never points at different bytes.
    immutable: true,
    maxAge: '365d',
  });

  // The page's icon (web/public/favicon.svg, copied into the build by Vite); /favicon.ico is served at the root.
  app.get('/favicon.svg', { schema: { hide: true } }, async (req, reply) => {
    const svg = loadFavicon();
    if (!svg) return opts.notFound(req, reply);
    return reply.type('image/svg+xml').header('cache-control', 'public, max-age=86400').send(svg);
  });

  app.setNotFoundHandler((req, reply) => {
    const pathname = req.url.split('?')[0];
    const isPage =
      (req.method === 'GET' || req.method === 'HEAD') && !/^\/admin\/(api|assets)(\/|$)/.test(pathname);
    if (!isPage) return opts.notFound(req, reply);
    const html = loadIndex();
    if (!html) {
      if (!String(req.headers.accept ?? '').includes('text/html')) return sendError(reply, new ServiceError('unavailable', NOT_BUILT));
      return reply.code(503).type('text/html; charset=utf-8').headers(securityHeaders(false)).send(notBuiltPage());
    }
    return reply.code(200).type('text/html; charset=utf-8').headers(securityHeaders(embedded)).send(renderIndex(html, opts.shopifyApiKey));
  });
}
