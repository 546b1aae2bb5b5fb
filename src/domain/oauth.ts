import { createHash, randomBytes } from 'node:crypto';
import { LEVELS, RESOURCES, type Level, type Permissions, type Resource } from './permissions.js';

/**
 * OAuth for MCP clients (docs/mcp-assistants.md; the MCP authorization specification, 2025-11-25): what needs no I/O.
 * svc is both the authorization server and the protected resource (/mcp).
 */

/** Lifetimes: an access token an hour, a refresh token 30 days from its issue (each use rotates it), a code 10 minutes. */
export const ACCESS_TOKEN_TTL_S = 3600;
export const REFRESH_TOKEN_TTL_S = 30 * 24 * 3600;
export const CODE_TTL_S = 600;

/** A client's metadata document is read again once it is this old (the client may have changed its name, say). */
export const CLIENT_DOCUMENT_MAX_AGE_MS = 24 * 3600 * 1000;

/**
 * Prefixes: a token says what it is (a secret scanner, a log reader and the key gate tell them apart at a glance; an
 * access token is never mistaken for an API key, which it could not be used as anyway).
 */
export const ACCESS_TOKEN_PREFIX = 'svc_oat_';
export const REFRESH_TOKEN_PREFIX = 'svc_ort_';
const CODE_PREFIX = 'svc_oac_';

const secret = (prefix: string) => prefix + randomBytes(32).toString('base64url');
export const newAccessToken = () => secret(ACCESS_TOKEN_PREFIX);
export const newRefreshToken = () => secret(REFRESH_TOKEN_PREFIX);
export const newCode = () => secret(CODE_PREFIX);
export const newClientId = () => `svc_client_${randomBytes(16).toString('base64url')}`;

/** SHA-256 (hex) of a code or token: the only form of it svc stores. */
export const tokenDigest = (raw: string) => createHash('sha256').update(raw).digest('hex');

/** An access token's shape (no I/O): the prefix and 43 base64url characters. */
export const isAccessTokenShape = (raw: string) => /^svc_oat_[A-Za-z0-9_-]{43}$/.test(raw);

/** PKCE S256 (RFC 7636 §4.6): BASE64URL(SHA256(verifier)) equals the challenge. The verifier's form is checked too. */
export function pkceMatches(verifier: string, challenge: string): boolean {
  if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier)) return false;
  return createHash('sha256').update(verifier).digest('base64url') === challenge;
}

/** A code challenge of S256's shape: 43 base64url characters. */
export const isS256Challenge = (c: string) => /^[A-Za-z0-9_-]{43}$/.test(c);

/** Every scope svc knows: `<resource>:read` and `<resource>:write` per resource of domain/permissions.ts. */
export const SCOPES: readonly string[] = RESOURCES.flatMap((r) => [`${r}:read`, `${r}:write`]);

/**
 * A `scope` parameter as permissions: each resource at the highest level named (write includes read). Words svc does
 * not know (`openid`, `offline_access`, another server's scopes) are ignored, as RFC 6749 §3.3 lets a server do: a
 * client that sends them still connects. No known scope at all asks for everything svc offers; the merchant narrows.
 */
export function permissionsOfScope(scope: string | undefined | null): Permissions {
  const out = Object.fromEntries(RESOURCES.map((r) => [r, 'none'])) as Record<Resource, Level>;
  let known = false;
  for (const w of (scope ?? '').split(' ')) {
    const m = /^([a-z_]+):(read|write)$/.exec(w);
    if (!m || !(RESOURCES as readonly string[]).includes(m[1])) continue;
    known = true;
    const r = m[1] as Resource;
    if (LEVELS.indexOf(m[2] as Level) > LEVELS.indexOf(out[r])) out[r] = m[2] as Level;
  }
  return known ? out : (Object.fromEntries(RESOURCES.map((r) => [r, 'write'])) as Permissions);
}

/** Permissions as a `scope` value: `contracts:read contracts:write billing:read` (write is written with its read). */
export function scopeOf(p: Permissions): string {
  return RESOURCES.flatMap((r) => (p[r] === 'write' ? [`${r}:read`, `${r}:write`] : p[r] === 'read' ? [`${r}:read`] : [])).join(' ');
}

/** Each resource at the lower of the two levels: what the merchant approved can never exceed what was asked. */
export function narrowed(asked: Permissions, approved: Permissions): Permissions {
  const out = {} as Record<Resource, Level>;
  for (const r of RESOURCES) out[r] = LEVELS[Math.min(LEVELS.indexOf(asked[r]), LEVELS.indexOf(approved[r]))];
  return out;
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/** An http URL on a loopback host: a native app's redirect (RFC 8252 §7.3), whose port is chosen when it runs. */
export function isLoopbackRedirect(u: URL): boolean {
  return u.protocol === 'http:' && LOOPBACK_HOSTS.has(u.hostname);
}

/**
 * Whether a redirect URI sent with a request is one the client registered: the exact string, except that a loopback
 * redirect matches on any port (RFC 8252 §7.3; OAuth 2.1 §8.4.2).
 */
export function redirectUriMatches(registered: readonly string[], sent: string): boolean {
  if (registered.includes(sent)) return true;
  if (!URL.canParse(sent)) return false;
  const s = new URL(sent);
  if (!isLoopbackRedirect(s)) return false;
  return registered.some((r) => {
    if (!URL.canParse(r)) return false;
    const u = new URL(r);
    return isLoopbackRedirect(u) && u.hostname === s.hostname && u.pathname === s.pathname && u.search === s.search;
  });
}

/**
 * A redirect URI a client may register: https, or http on a loopback host, or a private-use scheme of a native app
 * (`com.example.app:/callback`, RFC 8252 §7.1); no fragment (RFC 6749 §3.1.2).
 */
export function isAcceptableRedirectUri(raw: string): boolean {
  if (raw.length > 2000 || !URL.canParse(raw)) return false;
  const u = new URL(raw);
  if (u.hash) return false;
  if (u.protocol === 'https:') return true;
  if (u.protocol === 'http:') return isLoopbackRedirect(u);
  // A private-use scheme: reverse domain name notation, with a dot (RFC 8252 §7.1); never javascript:, data: …
  return /^[a-z][a-z0-9+.-]*\.[a-z0-9+.-]+:$/.test(u.protocol);
}

/** The error an OAuth endpoint answers (RFC 6749 §5.2): the one shape outside the service's envelope. */
export class OAuthError extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
    readonly status = 400,
  ) {
    super(description);
    this.name = 'OAuthError';
  }
}
