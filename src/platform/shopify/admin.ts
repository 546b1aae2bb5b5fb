import { eq } from 'drizzle-orm';
import type { RunSql } from '../../db/client.js';
import { platformInstallations, shops } from '../../db/schema.js';
import { ServiceError } from '../../domain/errors.js';
import type { Clock, ServiceContext } from '../../services/context.js';
import { TokenCipher } from './tokenCipher.js';
import { CallFailed, postToPlatform, type PlatformAnswer } from './platformHttp.js';

/**
 * The platform's Admin API as svc uses it (PRODUCT §9): the shop's offline access token (token exchange, refresh
 * before expiry and on a 401, kept encrypted), and GraphQL calls that respect the shop's cost bucket. Every failure
 * a caller can meet is a ServiceError: 503 platform_unavailable (unreachable, failing, throttling past the budget,
 * an answer svc cannot use) or 403 app_not_installed (no token: the shop has not installed, or uninstalled).
 */

export type ShopifySettings = {
  apiKey: string;
  apiSecret: string;
  apiVersion: string;
  /** SHOPIFY_SHOP_URL: `https://{shop}` in production, the stand-in's address in tests. */
  shopUrlTemplate: string;
  tokenKey: Buffer;
  /** How long one HTTP call to the platform may take (default 10 s). */
  timeoutMs?: number;
  /** How long calls wait for cost capacity, throttled retries included, before 503 (PRODUCT §9: 5 s). */
  throttleBudgetMs?: number;
  /** Refresh an access token this long before it expires (default 5 minutes). */
  refreshMarginMs?: number;
  /** How calls reach the platform (tests may put a fault between). */
  post?: typeof postToPlatform;
};

export type ShopRef = { id: string; domain: string };
export type Cost = {
  requestedQueryCost: number;
  actualQueryCost: number | null;
  throttleStatus: { maximumAvailable: number; currentlyAvailable: number; restoreRate: number };
};
/** A GraphQL answer as the platform sends it: `errors` beside (partial) `data`, the cost in `extensions`. */
type GraphqlAnswer<T> = { data?: T | null; errors?: { message?: string; extensions?: { code?: string } }[]; extensions?: { cost?: Cost } };

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';

export const platformUnavailable = (why: string, retryAfterSeconds = 5) =>
  new ServiceError('platform_unavailable', `The platform could not be reached or did not answer (${why}). Nothing was changed; try again shortly.`, {
    headers: { 'retry-after': String(retryAfterSeconds) },
  });
const notInstalled = () =>
  new ServiceError('app_not_installed', 'The shop has not installed the app, or has uninstalled it. Open the app from the shop admin to install it.');

/**
 * Thrown by a call made while carrying out a change (possibly inside a transaction) when the shop's token is not in
 * memory or was refused: nothing happened on the platform, and the caller refreshes outside and tries again.
 */
export class TokenNeeded extends Error {
  constructor(readonly stale?: string) {
    super('the platform access token must be loaded or refreshed first');
  }
}

/** Token endpoint answers as the platform documents them (access_token, expires_in, refresh_token, …). */
type TokenAnswer = { access_token: string; scope?: string; expires_in?: number; refresh_token?: string; refresh_token_expires_in?: number };

type CachedToken = { token: string; expiresAt: number | null };

/** A refresh's tokens stored: a new access token always, a new refresh token when the platform rotated it. */
const STORE_REFRESHED = `UPDATE platform_installations SET access_token = $2, access_token_expires_at = $3, refresh_token = COALESCE($4, refresh_token),
        refresh_token_expires_at = COALESCE($5, refresh_token_expires_at), updated_at = $6 WHERE shop_id = $1`;
const storeRefreshedParams = (
  shopId: string,
  v: { accessToken: string; accessTokenExpiresAt: Date | null; refreshToken: string | null; refreshTokenExpiresAt: Date | null },
  at: Date,
) => [shopId, v.accessToken, v.accessTokenExpiresAt, v.refreshToken, v.refreshTokenExpiresAt, at];

/**
 * A shop's cost bucket as svc last saw it (the platform reports it on every answer), for every call of this process
 * to the shop: calls wait for capacity rather than being throttled, and a throttled call waits for the restore rate.
 *
 * Calls take their turn in the order they came (a queue: a large query is not starved by a stream of small ones),
 * and what a call was expected to cost stays counted against the bucket until its answer: the platform's report
 * cannot include calls it has not seen yet, so the level svc works with is the reported one less the calls in
 * flight. (The bucket is a leaky bucket refilled continuously at the restore rate up to its size, so a bucket kept
 * just above empty loses none of it: https://shopify.dev/docs/apps/build/apis/graphql-admin/rate-limits.)
 */
class Bucket {
  available: number;
  max: number;
  restoreRate: number;
  at: number;
  /** Expected costs of the calls sent and not yet answered. */
  inFlight = 0;
  /** The last call to have taken its turn: the next waits for it. */
  tail: Promise<void> = Promise.resolve();
  constructor(now: number) {
    // The platform's documented defaults for a standard shop, until its first answer says otherwise.
    this.max = 2000;
    this.available = 2000;
    this.restoreRate = 100;
    this.at = now;
  }
  level(now: number): number {
    return Math.min(this.max, this.available + ((now - this.at) / 1000) * this.restoreRate);
  }
  take(cost: number, now: number): void {
    this.available = this.level(now) - cost;
    this.at = now;
    this.inFlight += cost;
  }
  /** A call taken with `cost` was answered (or failed): it no longer counts as in flight. */
  answered(cost: number): void {
    this.inFlight = Math.max(0, this.inFlight - cost);
  }
  update(cost: Cost['throttleStatus'], now: number): void {
    this.max = cost.maximumAvailable;
    this.available = cost.currentlyAvailable - this.inFlight;
    this.restoreRate = cost.restoreRate || 1;
    this.at = now;
  }
  /** Milliseconds until `cost` points are there. */
  waitFor(cost: number, now: number): number {
    const missing = Math.min(cost, this.max) - this.level(now);
    return missing <= 0 ? 0 : Math.ceil((missing / this.restoreRate) * 1000);
  }
}

export class ShopifyAdmin {
  readonly cipher: TokenCipher;
  private readonly post: typeof postToPlatform;
  private readonly timeoutMs: number;
  private readonly budgetMs: number;
  private readonly refreshMarginMs: number;
  private readonly tokens = new Map<string, CachedToken>();
  private readonly refreshing = new Map<string, Promise<string>>();
  private readonly buckets = new Map<string, Bucket>();
  /** Last seen requested cost per operation: what the next call of it should wait for. */
  private readonly costs = new Map<string, number>();

  constructor(
    private readonly ctx: Pick<ServiceContext, 'db' | 'clock'>,
    readonly settings: ShopifySettings,
  ) {
    this.cipher = new TokenCipher(settings.tokenKey);
    this.post = settings.post ?? postToPlatform;
    this.timeoutMs = settings.timeoutMs ?? 10_000;
    this.budgetMs = settings.throttleBudgetMs ?? 5000;
    this.refreshMarginMs = settings.refreshMarginMs ?? 5 * 60_000;
  }

  private get clock(): Clock {
    return this.ctx.clock;
  }

  /** Where a shop's Admin API and token endpoint are (SHOPIFY_SHOP_URL). */
  shopUrl(domain: string): string {
    return this.settings.shopUrlTemplate.replaceAll('{shop}', domain);
  }

  // ---- tokens ----

  /**
   * Install (PRODUCT §9): exchanges a valid session token for an expiring offline access token and stores it
   * encrypted, with its refresh token. The shop is marked installed again if it had uninstalled.
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
    const body = parseJson(res.body) as (TokenAnswer & { error?: string }) | null;
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
   * Reads the stored token; refreshes it when it expires soon or was refused (`stale`). The refresh runs under the
   * installation row's lock and looks again once it holds it: two instances never spend one refresh token twice
   * (the platform kills a refresh token when it is used), the second finds the first's new token.
   */
  private async loadOrRefresh(shopId: string, stale?: string): Promise<string> {
    // Set once the platform has answered a refresh: from then on its old refresh token is spent, and these are the
    // shop's only working tokens.
    let refreshed: { token: string; columns: ReturnType<ShopifyAdmin['tokenColumns']>; at: Date } | undefined;
    let outcome: string | { refused: ServiceError };
    try {
      outcome = await this.ctx.db.transaction(async (run): Promise<string | { refused: ServiceError }> => {
        const [row] = await run<{ domain: string; access_token: string | null; access_token_expires_at: Date | null; refresh_token: string | null }>(
          `SELECT s.domain, i.access_token, i.access_token_expires_at, i.refresh_token
             FROM platform_installations i JOIN shops s ON s.id = i.shop_id
            WHERE i.shop_id = $1 AND s.uninstalled_at IS NULL FOR UPDATE OF i`,
          [shopId],
        );
        if (!row?.access_token) throw notInstalled();
        const token = this.cipher.open(row.access_token, shopId);
        if (token === null) throw platformUnavailable('the stored access token does not decrypt under TOKEN_ENCRYPTION_KEY');
        const expiresAt = row.access_token_expires_at ? new Date(row.access_token_expires_at).getTime() : null;
        if (token !== stale && !this.expiring(expiresAt)) {
          this.tokens.set(shopId, { token, expiresAt });
          return token;
        }
        const refresh = row.refresh_token ? this.cipher.open(row.refresh_token, shopId) : null;
        if (!refresh) {
          if (token !== stale) throw notInstalled();
          // The platform refused the access token and there is no refresh token to try: that refusal is kept.
          await run(`UPDATE platform_installations SET access_refused_at = $2, updated_at = $2 WHERE shop_id = $1`, [shopId, this.clock.now()]);
          return { refused: notInstalled() };
        }
        let answer: TokenAnswer;
        try {
          answer = await this.tokenRequest(row.domain, {
            client_id: this.settings.apiKey,
            client_secret: this.settings.apiSecret,
            grant_type: 'refresh_token',
            refresh_token: refresh,
          });
        } catch (err) {
          if (!(err instanceof ServiceError && err.code === 'app_not_installed')) throw err;
          // The platform will not refresh this token again (its answer to an earlier refresh was lost, say, which
          // spent the refresh token): forget both, so the merchant's next visit to the app exchanges a new one.
          // Asked because the platform had just refused the access token (a 401), this is the platform refusing svc
          // the shop altogether, as after an uninstall: kept (access_refused_at), for the uninstall's confirmation.
          await run(
            `UPDATE platform_installations SET access_token = NULL, refresh_token = NULL, updated_at = $2,
                    access_refused_at = CASE WHEN $3::boolean THEN $2 ELSE access_refused_at END WHERE shop_id = $1`,
            [shopId, this.clock.now(), stale !== undefined && token === stale],
          );
          this.tokens.delete(shopId);
          return { refused: err };
        }
        const at = this.clock.now();
        refreshed = { token: answer.access_token, columns: this.tokenColumns(shopId, answer, at), at };
        await run(STORE_REFRESHED, storeRefreshedParams(shopId, refreshed.columns, at));
        return answer.access_token;
      });
    } catch (err) {
      // The platform rotated the tokens, but the transaction that kept them failed (its UPDATE or its COMMIT): keep
      // them in a statement of their own. Lost, they would leave the database with a spent refresh token, and the
      // shop disconnected at the next refresh on any instance.
      if (!refreshed) throw err;
      const { columns, at } = refreshed;
      await this.ctx.db.withSession((run) => run(STORE_REFRESHED, storeRefreshedParams(shopId, columns, at))).catch(() => {
        throw err;
      });
      outcome = refreshed.token;
    }
    if (typeof outcome !== 'string') throw outcome.refused;
    // The new token is used here only once it is stored (committed): never a token the other instances cannot see.
    if (refreshed) this.tokens.set(shopId, { token: refreshed.token, expiresAt: refreshed.columns.accessTokenExpiresAt?.getTime() ?? null });
    return outcome;
  }

  // ---- GraphQL ----

  private bucket(shopId: string): Bucket {
    let b = this.buckets.get(shopId);
    if (!b) this.buckets.set(shopId, (b = new Bucket(this.clock.now().getTime())));
    return b;
  }

  /**
   * Waits for the call's turn at the shop's bucket (after every call that came before it) and for `cost` points, then
   * takes them. Past the budget (`left`), 503: nothing was sent.
   */
  private async turn(bucket: Bucket, cost: number, left: () => number): Promise<void> {
    const before = bucket.tail;
    let done!: () => void;
    bucket.tail = new Promise<void>((resolve) => (done = resolve));
    try {
      await before;
      const wait = bucket.waitFor(cost, this.clock.now().getTime());
      if (wait > 0) {
        if (wait > left()) throw platformUnavailable('the shop’s API cost limit is used up', Math.ceil(wait / 1000));
        await sleep(wait);
      }
      bucket.take(cost, this.clock.now().getTime());
    } finally {
      done();
    }
  }

  /**
   * Runs one GraphQL operation for a shop. Waits for cost capacity, retries a THROTTLED answer after the restore
   * time (within the budget), refreshes the token once on a 401, and retries a query (never a mutation: it may have
   * happened) once after a network failure or a 5xx. Top-level errors other than throttling are svc's or the
   * platform's fault, never the client's: 503.
   */
  async graphql<T>(
    shop: ShopRef,
    document: string,
    variables: Record<string, unknown> = {},
    opts: { budgetMs?: number; /** Inside a transaction: no database, so only a token in memory (else TokenNeeded). */ heldToken?: boolean } = {},
  ): Promise<T> {
    const operation = /^\s*(query|mutation)\s+(\w+)/.exec(document);
    const isMutation = operation?.[1] === 'mutation';
    const name = operation?.[2] ?? 'anonymous';
    const started = Date.now();
    const budget = opts.budgetMs ?? this.budgetMs;
    const left = () => budget - (Date.now() - started);
    const bucket = this.bucket(shop.id);
    let token: string;
    if (opts.heldToken) {
      const cached = this.tokens.get(shop.id);
      if (!cached || this.expiring(cached.expiresAt)) throw new TokenNeeded();
      token = cached.token;
    } else {
      token = await this.accessToken(shop.id);
    }
    const url = `${this.shopUrl(shop.domain)}/admin/api/${this.settings.apiVersion}/graphql.json`;
    const body = JSON.stringify({ query: document, variables });
    let refreshed = false;
    let retriedNetwork = false;
    for (;;) {
      const expected = this.costs.get(name) ?? (isMutation ? 10 : 50);
      await this.turn(bucket, expected, left);
      let res: PlatformAnswer;
      try {
        res = await this.post(url, {
          headers: { 'content-type': 'application/json', accept: 'application/json', 'x-shopify-access-token': token, 'user-agent': USER_AGENT },
          body,
          timeoutMs: this.timeoutMs,
        });
      } catch (err) {
        bucket.answered(expected);
        if (!isMutation && !retriedNetwork) {
          retriedNetwork = true;
          continue;
        }
        throw platformUnavailable(err instanceof CallFailed && err.timedOut ? 'no answer in time' : 'the connection failed');
      }
      bucket.answered(expected);
      const status = res.status;
      if (status === 401 && opts.heldToken) throw new TokenNeeded(token);
      if (status === 401 && !refreshed) {
        refreshed = true;
        token = await this.accessToken(shop.id, { stale: token });
        continue;
      }
      if (status === 401 || status === 403 || status === 402 || status === 423) throw notInstalledOr(status);
      if (status >= 500 && !isMutation && !retriedNetwork) {
        retriedNetwork = true;
        continue;
      }
      if (status !== 200) throw platformUnavailable(`HTTP ${status}`);
      const answer = parseJson(res.body) as GraphqlAnswer<T> | null;
      if (answer === null || typeof answer !== 'object') throw platformUnavailable('an answer that is not JSON');
      const cost = answer.extensions?.cost;
      if (cost) {
        bucket.update(cost.throttleStatus, this.clock.now().getTime());
        this.costs.set(name, cost.requestedQueryCost);
      }
      const errors = Array.isArray(answer.errors) ? answer.errors : [];
      if (errors.some((e) => e?.extensions?.code === 'THROTTLED')) {
        const need = cost ? bucket.waitFor(cost.requestedQueryCost, this.clock.now().getTime()) : 1000;
        if (need > left()) throw platformUnavailable('throttled past svc’s retry budget', Math.max(1, Math.ceil(need / 1000)));
        await sleep(Math.max(need, 50));
        continue;
      }
      if (errors.length || answer.errors !== undefined || answer.data === undefined || answer.data === null) {
        const why = typeof errors[0]?.message === 'string' ? errors[0].message : 'no data';
        throw platformUnavailable(`the platform answered an error: ${why.slice(0, 200)}`);
      }
      return answer.data;
    }
  }
}

function notInstalledOr(status: number): ServiceError {
  if (status === 401) return notInstalled();
  // 402: the shop is frozen (unpaid); 423: locked. Neither is the client's to fix by retrying at once.
  return platformUnavailable(`HTTP ${status}`, 60);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const USER_AGENT = 'svc (subscription contracts; Admin API)';

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
