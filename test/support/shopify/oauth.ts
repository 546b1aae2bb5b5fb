import { createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Clock } from './store.js';

const b64url = (v: Buffer | string) => Buffer.from(v).toString('base64url');

/**
 * Signs a session token as the platform (App Bridge) hands one to an embedded app: HS256 with the app secret,
 * `aud` = the app's client id, `dest` = `https://{shop}`, `iss` = `https://{shop}/admin`, valid for a minute.
 */
export function signSessionToken(input: {
  appKey: string;
  appSecret: string;
  shop: string;
  now: Date;
  ttlSeconds?: number;
  claims?: Record<string, unknown>;
}): string {
  const iat = Math.floor(input.now.getTime() / 1000);
  const payload = {
    iss: `https://${input.shop}/admin`,
    dest: `https://${input.shop}`,
    aud: input.appKey,
    sub: '1',
    exp: iat + (input.ttlSeconds ?? 60),
    nbf: iat,
    iat,
    jti: randomUUID(),
    sid: randomUUID(),
    ...input.claims,
  };
  const head = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
  const body = b64url(JSON.stringify(payload));
  const sig = createHmac('sha256', input.appSecret).update(`${head}.${body}`).digest('base64url');
  return `${head}.${body}.${sig}`;
}

/** Checks a session token for `shop`: signature, algorithm, audience, destination, and time window. */
export function verifySessionToken(
  token: string,
  expect: { appKey: string; appSecret: string; shop: string; now: Date },
): { ok: true; claims: Record<string, unknown> } | { ok: false; reason: string } {
  const parts = token.split('.');
  if (parts.length !== 3) return { ok: false, reason: 'not a JWT' };
  const [head, body, sig] = parts;
  let header: { alg?: string };
  let claims: Record<string, unknown>;
  try {
    header = JSON.parse(Buffer.from(head, 'base64url').toString('utf8'));
    claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    return { ok: false, reason: 'malformed JWT' };
  }
  if (header.alg !== 'HS256') return { ok: false, reason: 'algorithm must be HS256' };
  const want = createHmac('sha256', expect.appSecret).update(`${head}.${body}`).digest();
  const got = Buffer.from(sig, 'base64url');
  if (got.length !== want.length || !timingSafeEqual(got, want)) return { ok: false, reason: 'signature does not match' };
  const now = Math.floor(expect.now.getTime() / 1000);
  if (claims.aud !== expect.appKey) return { ok: false, reason: 'aud is not this app' };
  if (claims.dest !== `https://${expect.shop}`) return { ok: false, reason: 'dest is not this shop' };
  if (typeof claims.exp !== 'number' || claims.exp <= now) return { ok: false, reason: 'token expired' };
  if (typeof claims.nbf === 'number' && claims.nbf > now) return { ok: false, reason: 'token not yet valid' };
  return { ok: true, claims };
}

type AccessToken = { shop: string; scope: string; expiresAt: Date | null };
type RefreshToken = { shop: string; scope: string; expiresAt: Date };

export type TokenOptions = {
  appKey: string;
  appSecret: string;
  clock: Clock;
  scopes: string;
  accessTokenTtlSeconds: number;
  refreshTokenTtlSeconds: number;
};

export type OAuthAnswer = { status: number; body: Record<string, unknown> };

const oauthError = (status: number, error: string, description: string): OAuthAnswer => ({
  status,
  body: { error, error_description: description },
});

/**
 * The token endpoint (`POST /{shop}/admin/oauth/access_token`): token exchange of a session token for an offline
 * access token (expiring with a refresh token when `expiring=1`), and refresh, which rotates the refresh token (the
 * old one stops working; the old access token lives until its own expiry). Errors are OAuth's `{ error,
 * error_description }`: 401 invalid_client, 400 invalid_subject_token / invalid_grant / invalid_request /
 * unsupported_grant_type.
 */
export class TokenIssuer {
  private readonly access = new Map<string, AccessToken>();
  private readonly refresh = new Map<string, RefreshToken>();

  constructor(private readonly opts: TokenOptions) {}

  handle(shop: string, installed: boolean, p: Record<string, unknown>): OAuthAnswer {
    if (p.client_id !== this.opts.appKey || p.client_secret !== this.opts.appSecret) {
      return oauthError(401, 'invalid_client', 'Client authentication failed: unknown client_id or wrong client_secret.');
    }
    if (p.grant_type === 'urn:ietf:params:oauth:grant-type:token-exchange') return this.exchange(shop, installed, p);
    if (p.grant_type === 'refresh_token') return this.rotate(shop, installed, p);
    return oauthError(400, 'unsupported_grant_type', `grant_type ${String(p.grant_type)} is not supported.`);
  }

  private exchange(shop: string, installed: boolean, p: Record<string, unknown>): OAuthAnswer {
    if (p.subject_token_type !== 'urn:ietf:params:oauth:token-type:id_token') {
      return oauthError(400, 'invalid_request', 'subject_token_type must be urn:ietf:params:oauth:token-type:id_token.');
    }
    if (p.requested_token_type !== 'urn:shopify:params:oauth:token-type:offline-access-token') {
      return oauthError(400, 'invalid_request', 'The stand-in issues offline access tokens only.');
    }
    const check = verifySessionToken(String(p.subject_token ?? ''), { ...this.opts, shop, now: this.opts.clock.now() });
    if (!check.ok) return oauthError(400, 'invalid_subject_token', `The session token is invalid: ${check.reason}.`);
    if (!installed) return oauthError(400, 'invalid_subject_token', 'The app is not installed on this shop.');
    return { status: 200, body: this.issue(shop, this.opts.scopes, String(p.expiring ?? '0') === '1') };
  }

  private rotate(shop: string, installed: boolean, p: Record<string, unknown>): OAuthAnswer {
    const token = String(p.refresh_token ?? '');
    const record = this.refresh.get(token);
    if (!record || record.shop !== shop || record.expiresAt <= this.opts.clock.now() || !installed) {
      return oauthError(400, 'invalid_grant', 'The refresh token is invalid, expired or already used.');
    }
    this.refresh.delete(token);
    return { status: 200, body: this.issue(shop, record.scope, true) };
  }

  private issue(shop: string, scope: string, expiring: boolean): Record<string, unknown> {
    const now = this.opts.clock.now().getTime();
    const accessToken = `shpat_${randomBytes(16).toString('hex')}`;
    if (!expiring) {
      this.access.set(accessToken, { shop, scope, expiresAt: null });
      return { access_token: accessToken, scope };
    }
    const refreshToken = `shprt_${randomBytes(16).toString('hex')}`;
    this.access.set(accessToken, { shop, scope, expiresAt: new Date(now + this.opts.accessTokenTtlSeconds * 1000) });
    this.refresh.set(refreshToken, { shop, scope, expiresAt: new Date(now + this.opts.refreshTokenTtlSeconds * 1000) });
    return {
      access_token: accessToken,
      scope,
      expires_in: this.opts.accessTokenTtlSeconds,
      refresh_token: refreshToken,
      refresh_token_expires_in: this.opts.refreshTokenTtlSeconds,
    };
  }

  /** True when `token` is a live access token of `shop`. */
  authenticate(shop: string, token: string | undefined): boolean {
    const record = token ? this.access.get(token) : undefined;
    return !!record && record.shop === shop && (record.expiresAt === null || record.expiresAt > this.opts.clock.now());
  }

  /** Forgets every token of a shop (uninstall). */
  revokeShop(shop: string): void {
    for (const [t, r] of this.access) if (r.shop === shop) this.access.delete(t);
    for (const [t, r] of this.refresh) if (r.shop === shop) this.refresh.delete(t);
  }

  /** The live access tokens of a shop, for assertions. */
  liveAccessTokens(shop: string): string[] {
    return [...this.access.keys()].filter((t) => this.authenticate(shop, t));
  }
}
