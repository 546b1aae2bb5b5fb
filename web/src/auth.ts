/**
 * Where the admin session token comes from (docs/product.md §6).
 * Embedded: the server put <meta name="shopify-api-key"> and App Bridge's script into the page; App Bridge hands out
 * fresh tokens with shopify.idToken(). Standalone: `svc admin-link <shop>` prints /admin#token=…; the fragment never
 * reaches a server or a Referer header. The token is kept in localStorage until it expires, so a reload keeps working
 * and so does any other tab of that browser (an assistant's consent page opens in a new tab: docs/mcp-assistants.md),
 * and removed from the visible URL. Only a top-level page uses a stored token: inside the shop admin's frame the page
 * is embedded, whatever another tab of the browser did.
 */

export type Session =
  | { mode: 'embedded'; shop: string | null; getToken: () => Promise<string> }
  | { mode: 'standalone'; shop: string | null; expiresAt: Date | null; getToken: () => Promise<string> };

export type SessionProblem =
  | { kind: 'missing' }
  | { kind: 'expired'; shop: string | null }
  | { kind: 'app_bridge_missing' };

export type SessionResult = { session: Session } | { problem: SessionProblem };

const STORAGE_KEY = 'svc.admin.sessionToken';

declare global {
  interface Window {
    shopify?: { idToken: () => Promise<string>; config?: { shop?: string } };
  }
}

type Claims = { exp?: number; dest?: string };

/** Reads a JWT's claims without verifying it: only to say "expired" or name the shop; the server verifies. */
export function decodeClaims(token: string): Claims | null {
  const part = token.split('.')[1];
  if (!part) return null;
  try {
    const b64 = part.replace(/-/g, '+').replace(/_/g, '/').padEnd(Math.ceil(part.length / 4) * 4, '=');
    const json = decodeURIComponent(
      Array.from(atob(b64), (c) => '%' + c.charCodeAt(0).toString(16).padStart(2, '0')).join(''),
    );
    const claims = JSON.parse(json) as unknown;
    return claims && typeof claims === 'object' ? (claims as Claims) : null;
  } catch {
    return null;
  }
}

export function shopOf(claims: Claims | null): string | null {
  const m = /^https:\/\/([a-z0-9][a-z0-9-]*\.myshopify\.com)$/.exec(claims?.dest ?? '');
  return m ? m[1] : null;
}

function storage(): Storage | null {
  try {
    return window.localStorage;
  } catch {
    return null;
  }
}

/** True for a page in a frame (the shop admin's): it never takes a standalone token another tab stored. */
function framed(): boolean {
  try {
    return window.top !== window.self;
  } catch {
    return true;
  }
}

/** Moves `#token=…` out of the address bar into the browser's storage (every tab of this origin finds it there). */
function takeFragmentToken(): string | null {
  const params = new URLSearchParams(window.location.hash.replace(/^#/, ''));
  const fromFragment = params.get('token');
  if (fromFragment) {
    storage()?.setItem(STORAGE_KEY, fromFragment);
    params.delete('token');
    const rest = params.toString();
    window.history.replaceState(window.history.state, '', window.location.pathname + window.location.search + (rest ? `#${rest}` : ''));
    return fromFragment;
  }
  return framed() ? null : (storage()?.getItem(STORAGE_KEY) ?? null);
}

export function forgetStandaloneToken(): void {
  storage()?.removeItem(STORAGE_KEY);
}

/**
 * An admin link's token (in the fragment, or taken from it earlier in this tab) comes first: it opens the page
 * standalone in a plain tab even on a server set up for the shop admin (SHOPIFY_API_KEY), where App Bridge cannot
 * work; the server's page then does not load App Bridge either (src/http/admin/static.ts). Otherwise, with the
 * app's key in the page, App Bridge supplies the tokens.
 */
export function startSession(now: () => number = Date.now): SessionResult {
  const token = takeFragmentToken();
  if (token) return standaloneSession(token, now);
  const embeddedKey = document.querySelector<HTMLMetaElement>('meta[name="shopify-api-key"]')?.content;
  if (embeddedKey) {
    const bridge = window.shopify;
    if (!bridge || typeof bridge.idToken !== 'function') return { problem: { kind: 'app_bridge_missing' } };
    const shop = bridge.config?.shop ?? new URLSearchParams(window.location.search).get('shop');
    return { session: { mode: 'embedded', shop, getToken: () => bridge.idToken() } };
  }
  return { problem: { kind: 'missing' } };
}

function standaloneSession(token: string, now: () => number): SessionResult {
  const claims = decodeClaims(token);
  const shop = shopOf(claims);
  const expiresAt = typeof claims?.exp === 'number' ? new Date(claims.exp * 1000) : null;
  if (expiresAt && expiresAt.getTime() <= now()) {
    // Expired: no tab may keep using it.
    forgetStandaloneToken();
    return { problem: { kind: 'expired', shop } };
  }
  return { session: { mode: 'standalone', shop, expiresAt, getToken: async () => token } };
}

/** The command that prints a fresh standalone link, with the shop filled in when it is known. */
export function adminLinkCommand(shop: string | null): string {
  return `npm run svc -- admin-link ${shop ?? '<shop>.myshopify.com'}`;
}
