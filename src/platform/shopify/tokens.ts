import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import type { RunSql } from '../../db/client.js';
import { platformInstallations, shops } from '../../db/schema.js';
import { ServiceError } from '../../domain/errors.js';
import type { Clock, ServiceContext } from '../../services/context.js';
import type { ShopifySettings, ShopRef } from './admin.js';
import { notInstalled, parseAnswer, platformUnavailable } from './adminFailures.js';
import { sleep } from './costBucket.js';
import type { PlatformAnswer, postToPlatform } from './platformHttp.js';
import { TokenCipher } from './tokenCipher.js';

/**
 * A shop's offline access token (docs/product.md, "Platform mode"): the token exchange at install, the refresh before
 * expiry and on a 401, kept encrypted in the shop's installation row and in memory for this process's calls.
 */

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';

/** Token endpoint answers as the platform documents them (access_token, expires_in, refresh_token, …). */
type TokenAnswer = { access_token: string; scope?: string; expires_in?: number; refresh_token?: string; refresh_token_expires_in?: number };

type CachedToken = { token: string; expiresAt: number | null };

/**
 * A refresh's tokens stored: a new access token always, a new refresh token when the platform rotated it; the
 * refresher's lease given back (a lease another refresher holds by now is left to it).
 */
const STORE_REFRESHED = `UPDATE platform_installations SET access_token = $2, access_token_expires_at = $3, refresh_token = COALESCE($4, refresh_token),
        refresh_token_expires_at = COALESCE($5, refresh_token_expires_at), updated_at = $6,
        refresh_lease_until = CASE WHEN refresh_lease = $7 THEN NULL ELSE refresh_lease_until END,
        refresh_lease = CASE WHEN refresh_lease = $7 THEN NULL ELSE refresh_lease END
  WHERE shop_id = $1`;
const storeRefreshedParams = (
  shopId: string,
  v: { accessToken: string; accessTokenExpiresAt: Date | null; refreshToken: string | null; refreshTokenExpiresAt: Date | null },
  at: Date,
  lease: string,
) => [shopId, v.accessToken, v.accessTokenExpiresAt, v.refreshToken, v.refreshTokenExpiresAt, at, lease];

/** How often a refresher waiting for another's lease looks again. */
const LEASE_POLL_MS = 50;
/** How much longer than a lease a refresher waits for it before answering 503. */
const LEASE_WAIT_EXTRA_MS = 5_000;

export class ShopTokens {
  readonly cipher: TokenCipher;
  private readonly refreshMarginMs: number;
  private readonly tokens = new Map<string, CachedToken>();
  private readonly refreshing = new Map<string, Promise<string>>();
  /**
   * How long a refresher holds the shop's refresh: well past its one call's time limit, so a live holder never loses
   * it, and a dead one's lapses.
   */
  private readonly leaseMs: number;

  constructor(
    private readonly ctx: Pick<ServiceContext, 'db' | 'clock'>,
    private readonly settings: ShopifySettings,
    private readonly shopUrl: (domain: string) => string,
    private readonly post: typeof postToPlatform,
    private readonly timeoutMs: number,
  ) {
    this.cipher = new TokenCipher(settings.tokenKey);
    this.refreshMarginMs = settings.refreshMarginMs ?? 5 * 60_000;
    this.leaseMs = 2 * timeoutMs + 10_000;
  }

  private get clock(): Clock {
    return this.ctx.clock;
  }

  /**
   * Install (docs/product.md, "Platform mode"): exchanges a valid session token for an expiring offline access token
   * and stores it encrypted, with its refresh token. The shop is marked installed again if it had uninstalled.
   */
  async exchangeSessionToken(shop: ShopRef, sessionToken: string): Promise<{ firstInstall: boolean }> {
    const answer = await this.tokenRequest(shop.domain, {
      client_id: this.settings.apiKey,
      client_secret: this.settings.apiSecret,
      grant_type: TOKEN_EXCHANGE,
      subject_token: sessionToken,
      subject_token_type: 'urn:ietf:params:oauth:token-type:id_token',
      requested_token_type: 'urn:shopify:params:oauth:token-type:offline-access-token',
      expiring: '1',
    });
    const now = this.clock.now();
    // A new token: whatever the platform refused before is history (the shop installed again).
    const values = { ...this.tokenColumns(shop.id, answer, now), accessRefusedAt: null };
    const existing = await this.ctx.db.orm.select({ shopId: platformInstallations.shopId }).from(platformInstallations).where(eq(platformInstallations.shopId, shop.id));
    await this.ctx.db.orm
      .insert(platformInstallations)
      .values({ shopId: shop.id, installedAt: now, updatedAt: now, ...values })
      .onConflictDoUpdate({ target: platformInstallations.shopId, set: { ...values, updatedAt: now } });
    await this.ctx.db.orm.update(shops).set({ uninstalledAt: null, updatedAt: now }).where(eq(shops.id, shop.id));
    this.tokens.set(shop.id, { token: answer.access_token, expiresAt: values.accessTokenExpiresAt?.getTime() ?? null });
    return { firstInstall: existing.length === 0 };
  }

  /** Drops the process's copy of a shop's token (its row is gone: shop/redact). */
  forgetCachedToken(shopId: string): void {
    this.tokens.delete(shopId);
  }

  /**
   * Forgets the shop's tokens (app/uninstalled), and that its webhooks are registered: the platform deletes an app's
   * webhook subscriptions when it is uninstalled, so a reinstall subscribes again.
   */
  async forgetTokens(shopId: string, run?: RunSql): Promise<void> {
    this.tokens.delete(shopId);
    const sql = `UPDATE platform_installations SET access_token = NULL, refresh_token = NULL, access_token_expires_at = NULL,
                 refresh_token_expires_at = NULL, webhooks_registered_at = NULL, updated_at = $2 WHERE shop_id = $1`;
    if (run) await run(sql, [shopId, this.clock.now()]);
    else await this.ctx.db.withSession((r) => r(sql, [shopId, this.clock.now()]));
  }

  /** The token in memory, when it is there and not about to expire: for a call that may not read the database. */
  held(shopId: string): string | null {
    const cached = this.tokens.get(shopId);
    return cached && !this.expiring(cached.expiresAt) ? cached.token : null;
  }

  private tokenColumns(shopId: string, a: TokenAnswer, now: Date) {
    const at = (s: number | undefined) => (s ? new Date(now.getTime() + s * 1000) : null);
    return {
      accessToken: this.cipher.seal(a.access_token, shopId),
      accessTokenExpiresAt: at(a.expires_in),
      refreshToken: a.refresh_token ? this.cipher.seal(a.refresh_token, shopId) : null,
      refreshTokenExpiresAt: at(a.refresh_token_expires_in),
      scopes: a.scope ?? null,
    };
  }

  private async tokenRequest(domain: string, params: Record<string, string>): Promise<TokenAnswer> {
    let res: PlatformAnswer;
    try {
      res = await this.post(`${this.shopUrl(domain)}/admin/oauth/access_token`, {
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify(params),
        timeoutMs: this.timeoutMs,
      });
    } catch {
      throw platformUnavailable('token endpoint unreachable');
    }
    const body = parseAnswer(res.body) as (TokenAnswer & { error?: string }) | null;
    if (res.status >= 500 || res.status === 429) throw platformUnavailable(`token endpoint answered ${res.status}`);
    if (res.status !== 200 || !body?.access_token) {
      // invalid_subject_token, invalid_grant (a dead refresh token), invalid_client: the platform will not give
      // svc a token for this shop until the merchant opens the app again.
      const code = typeof body?.error === 'string' ? body.error.slice(0, 60) : `HTTP ${res.status}`;
      throw new ServiceError('app_not_installed', `The platform refused svc's access for this shop (${code}). Open the app from the shop admin to reconnect it.`);
    }
    return body;
  }

  /** The shop's access token, refreshed first when it is about to expire. */
  async accessToken(shopId: string, opts: { stale?: string } = {}): Promise<string> {
    const cached = this.tokens.get(shopId);
    if (cached && cached.token !== opts.stale && !this.expiring(cached.expiresAt)) return cached.token;
    const inFlight = this.refreshing.get(shopId);
    if (inFlight) return inFlight;
    const p = this.loadOrRefresh(shopId, opts.stale).finally(() => this.refreshing.delete(shopId));
    this.refreshing.set(shopId, p);
    return p;
  }

  private expiring(expiresAt: number | null): boolean {
    return expiresAt !== null && expiresAt - this.refreshMarginMs <= this.clock.now().getTime();
  }

  /**
   * Reads the stored token; refreshes it when it expires soon or was refused (`stale`). A refresh spends the shop's
   * refresh token (the platform kills one when it is used), so only one refresher of any instance calls the platform:
   * the one that takes the shop's refresh lease, in a statement of its own. It calls the platform with no transaction
   * open and writes the new tokens in another statement, giving the lease back. Any other refresher waits for the
   * lease to be given back (or to lapse, its holder dead) and reads the new tokens.
   */
  private async loadOrRefresh(shopId: string, stale?: string): Promise<string> {
    const deadline = Date.now() + this.leaseMs + LEASE_WAIT_EXTRA_MS;
    for (;;) {
      const row = await this.storedTokens(shopId);
      if (!row?.access_token) throw notInstalled();
      const token = this.cipher.open(row.access_token, shopId);
      if (token === null) throw platformUnavailable('the stored access token does not decrypt under TOKEN_ENCRYPTION_KEY');
      const expiresAt = row.access_token_expires_at ? new Date(row.access_token_expires_at).getTime() : null;
      if (token !== stale && !this.expiring(expiresAt)) {
        this.tokens.set(shopId, { token, expiresAt });
        return token;
      }
      if (!row.refresh_token) {
        if (token !== stale) throw notInstalled();
        // The platform refused the access token and there is no refresh token to try: that refusal is kept.
        await this.ctx.db.withSession((run) => run(`UPDATE platform_installations SET access_refused_at = $2, updated_at = $2 WHERE shop_id = $1`, [shopId, this.clock.now()]));
        throw notInstalled();
      }
      const lease = randomUUID();
      const refresh = await this.takeLease(shopId, lease, row.access_token);
      if (refresh !== null) return this.refreshUnderLease(shopId, row.domain, lease, refresh, stale !== undefined && token === stale);
      // Another refresher holds the lease, or the tokens changed since they were read: look again in a moment.
      if (Date.now() > deadline) throw platformUnavailable('the shop’s access token is being refreshed');
      await sleep(LEASE_POLL_MS);
    }
  }

  private async storedTokens(shopId: string) {
    const [row] = await this.ctx.db.withSession((run) =>
      run<{ domain: string; access_token: string | null; access_token_expires_at: Date | null; refresh_token: string | null }>(
        `SELECT s.domain, i.access_token, i.access_token_expires_at, i.refresh_token
           FROM platform_installations i JOIN shops s ON s.id = i.shop_id
          WHERE i.shop_id = $1 AND s.uninstalled_at IS NULL`,
        [shopId],
      ),
    );
    return row;
  }

  /**
   * Takes the shop's refresh lease when no one holds it (or its holder's lapsed) and the access token is still the one
   * read (`seen`, as stored): the refresh token to spend, opened; null when not taken.
   */
  private async takeLease(shopId: string, lease: string, seen: string): Promise<string | null> {
    const now = this.clock.now();
    const [taken] = await this.ctx.db.withSession((run) =>
      run<{ refresh_token: string | null }>(
        `UPDATE platform_installations SET refresh_lease = $2, refresh_lease_until = $3
          WHERE shop_id = $1 AND access_token = $4 AND (refresh_lease_until IS NULL OR refresh_lease_until <= $5)
          RETURNING refresh_token`,
        [shopId, lease, new Date(now.getTime() + this.leaseMs), seen, now],
      ),
    );
    if (!taken) return null;
    const refresh = taken.refresh_token ? this.cipher.open(taken.refresh_token, shopId) : null;
    if (refresh === null) {
      await this.releaseLease(shopId, lease);
      throw notInstalled();
    }
    return refresh;
  }

  /** Gives the lease back (a refresh that failed before the platform answered); never fails the caller for it. */
  private async releaseLease(shopId: string, lease: string): Promise<void> {
    await this.ctx.db
      .withSession((run) => run(`UPDATE platform_installations SET refresh_lease = NULL, refresh_lease_until = NULL WHERE shop_id = $1 AND refresh_lease = $2`, [shopId, lease]))
      .catch(() => undefined);
  }

  /** The refresh itself, under the lease: the platform's answer, then the new tokens written (the lease given back). */
  private async refreshUnderLease(shopId: string, domain: string, lease: string, refresh: string, refused: boolean): Promise<string> {
    let answer: TokenAnswer;
    try {
      answer = await this.tokenRequest(domain, {
        client_id: this.settings.apiKey,
        client_secret: this.settings.apiSecret,
        grant_type: 'refresh_token',
        refresh_token: refresh,
      });
    } catch (err) {
      if (!(err instanceof ServiceError && err.code === 'app_not_installed')) {
        await this.releaseLease(shopId, lease);
        throw err;
      }
      // The platform will not refresh this token again (its answer to an earlier refresh was lost, say, which spent
      // the refresh token): forget both, so the merchant's next visit to the app exchanges a new one. Asked because
      // the platform had just refused the access token (a 401), this is the platform refusing svc the shop
      // altogether, as after an uninstall: kept (access_refused_at), for the uninstall's confirmation.
      await this.ctx.db.withSession((run) =>
        run(
          `UPDATE platform_installations SET access_token = NULL, refresh_token = NULL, updated_at = $2, refresh_lease = NULL, refresh_lease_until = NULL,
                  access_refused_at = CASE WHEN $3::boolean THEN $2 ELSE access_refused_at END WHERE shop_id = $1 AND refresh_lease = $4`,
          [shopId, this.clock.now(), refused, lease],
        ),
      );
      this.tokens.delete(shopId);
      throw err;
    }
    // From here the old refresh token is spent and these are the shop's only working tokens: they are written even
    // if the statement must be tried twice (lost, the shop would be disconnected at the next refresh on any instance).
    const at = this.clock.now();
    const columns = this.tokenColumns(shopId, answer, at);
    const store = () => this.ctx.db.withSession((run) => run(STORE_REFRESHED, storeRefreshedParams(shopId, columns, at, lease)));
    await store().catch((err: unknown) =>
      store().catch(() => {
        throw err;
      }),
    );
    // The new token is used here only once it is stored: never a token the other instances cannot see.
    this.tokens.set(shopId, { token: answer.access_token, expiresAt: columns.accessTokenExpiresAt?.getTime() ?? null });
    return answer.access_token;
  }
}
