import type { RunSql } from '../../db/client.js';
import type { ServiceContext } from '../../services/context.js';
import { AdminGraphql, type GraphqlOptions } from './graphql.js';
import { postToPlatform } from './platformHttp.js';
import { ShopTokens } from './tokens.js';
import type { TokenCipher } from './tokenCipher.js';

export { platformUnavailable, TokenNeeded } from './adminFailures.js';
export type { Cost } from './costBucket.js';

/**
 * The platform's Admin API as svc uses it (docs/product.md, "Platform mode"): the shop's offline access token
 * (tokens.ts: token exchange, refresh before expiry and on a 401, kept encrypted), and GraphQL calls (graphql.ts)
 * that respect the shop's cost bucket (costBucket.ts). Every failure a caller can meet is a ServiceError
 * (adminFailures.ts): 503 platform_unavailable or 403 app_not_installed.
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
  /** How long calls wait for cost capacity, throttled retries included, before 503 (docs/product.md: 5 s). */
  throttleBudgetMs?: number;
  /** Refresh an access token this long before it expires (default 5 minutes). */
  refreshMarginMs?: number;
  /** How calls reach the platform (tests may put a fault between). */
  post?: typeof postToPlatform;
};

export type ShopRef = { id: string; domain: string };

export class ShopifyAdmin {
  readonly tokens: ShopTokens;
  private readonly api: AdminGraphql;

  constructor(
    ctx: Pick<ServiceContext, 'db' | 'clock'>,
    readonly settings: ShopifySettings,
  ) {
    const post = settings.post ?? postToPlatform;
    const timeoutMs = settings.timeoutMs ?? 10_000;
    const shopUrl = (domain: string) => this.shopUrl(domain);
    this.tokens = new ShopTokens(ctx, settings, shopUrl, post, timeoutMs);
    this.api = new AdminGraphql(ctx.clock, settings, this.tokens, shopUrl, post, timeoutMs);
  }

  get cipher(): TokenCipher {
    return this.tokens.cipher;
  }

  /** Where a shop's Admin API and token endpoint are (SHOPIFY_SHOP_URL). */
  shopUrl(domain: string): string {
    return this.settings.shopUrlTemplate.replaceAll('{shop}', domain);
  }

  /** Install: a valid session token exchanged for the shop's offline access token (tokens.ts). */
  exchangeSessionToken(shop: ShopRef, sessionToken: string): Promise<{ firstInstall: boolean }> {
    return this.tokens.exchangeSessionToken(shop, sessionToken);
  }

  /** Drops the process's copy of a shop's token (its row is gone: shop/redact). */
  forgetCachedToken(shopId: string): void {
    this.tokens.forgetCachedToken(shopId);
  }

  /** Forgets the shop's tokens and that its webhooks are registered (app/uninstalled). */
  forgetTokens(shopId: string, run?: RunSql): Promise<void> {
    return this.tokens.forgetTokens(shopId, run);
  }

  /** The shop's access token, refreshed first when it is about to expire or was refused (`stale`). */
  accessToken(shopId: string, opts: { stale?: string } = {}): Promise<string> {
    return this.tokens.accessToken(shopId, opts);
  }

  /** One GraphQL operation for a shop (graphql.ts). */
  graphql<T>(shop: ShopRef, document: string, variables: Record<string, unknown> = {}, opts: GraphqlOptions = {}): Promise<T> {
    return this.api.call<T>(shop, document, variables, opts);
  }
}
