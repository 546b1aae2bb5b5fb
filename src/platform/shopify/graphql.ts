import type { ServiceError } from '../../domain/errors.js';
import type { Clock } from '../../services/context.js';
import type { ShopifySettings, ShopRef } from './admin.js';
import { mutationOutcomeUnknown, notInstalled, parseAnswer, platformUnavailable, TokenNeeded } from './adminFailures.js';
import { CostBucket, sleep, type Cost } from './costBucket.js';
import { CallFailed, type PlatformAnswer, type postToPlatform } from './platformHttp.js';
import type { ShopTokens } from './tokens.js';

/** A GraphQL answer as the platform sends it: `errors` beside (partial) `data`, the cost in `extensions`. */
type GraphqlAnswer<T> = { data?: T | null; errors?: { message?: string; extensions?: { code?: string } }[]; extensions?: { cost?: Cost } };

export type GraphqlOptions = {
  budgetMs?: number;
  /** Inside a transaction: no database, so only a token in memory (else TokenNeeded). */
  heldToken?: boolean;
};

const USER_AGENT = 'svc (subscription contracts; Admin API)';

/**
 * The Admin GraphQL API over the platform's HTTP transport (platformHttp.ts): each call with the shop's token
 * (tokens.ts), in its turn at the shop's cost bucket (costBucket.ts).
 */
export class AdminGraphql {
  private readonly budgetMs: number;
  private readonly buckets = new Map<string, CostBucket>();
  /** Last seen requested cost per operation: what the next call of it should wait for. */
  private readonly costs = new Map<string, number>();

  constructor(
    private readonly clock: Clock,
    private readonly settings: ShopifySettings,
    private readonly tokens: ShopTokens,
    private readonly shopUrl: (domain: string) => string,
    private readonly post: typeof postToPlatform,
    private readonly timeoutMs: number,
  ) {
    this.budgetMs = settings.throttleBudgetMs ?? 5000;
  }

  private bucket(shopId: string): CostBucket {
    let b = this.buckets.get(shopId);
    if (!b) this.buckets.set(shopId, (b = new CostBucket(this.clock.now().getTime())));
    return b;
  }

  /**
   * Runs one GraphQL operation for a shop. Waits for cost capacity, retries a THROTTLED answer after the restore
   * time (within the budget), refreshes the token once on a 401, and retries a query (never a mutation: it may have
   * happened) once after a network failure or a 5xx. Top-level errors other than throttling are svc's or the
   * platform's fault, never the client's: 503.
   */
  async call<T>(shop: ShopRef, document: string, variables: Record<string, unknown> = {}, opts: GraphqlOptions = {}): Promise<T> {
    const operation = /^\s*(query|mutation)\s+(\w+)/.exec(document);
    const isMutation = operation?.[1] === 'mutation';
    const name = operation?.[2] ?? 'anonymous';
    const started = Date.now();
    const budget = opts.budgetMs ?? this.budgetMs;
    const left = () => budget - (Date.now() - started);
    const now = () => this.clock.now().getTime();
    const bucket = this.bucket(shop.id);
    let token: string;
    if (opts.heldToken) {
      const held = this.tokens.held(shop.id);
      if (held === null) throw new TokenNeeded();
      token = held;
    } else {
      token = await this.tokens.accessToken(shop.id);
    }
    const url = `${this.shopUrl(shop.domain)}/admin/api/${this.settings.apiVersion}/graphql.json`;
    const body = JSON.stringify({ query: document, variables });
    let refreshed = false;
    let retriedNetwork = false;
    for (;;) {
      const expected = this.costs.get(name) ?? (isMutation ? 10 : 50);
      await bucket.turn(expected, left, now);
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
        const why = err instanceof CallFailed && err.timedOut ? 'no answer in time' : 'the connection failed';
        throw isMutation ? mutationOutcomeUnknown(why) : platformUnavailable(why);
      }
      bucket.answered(expected);
      const status = res.status;
      if (status === 401 && opts.heldToken) throw new TokenNeeded(token);
      if (status === 401 && !refreshed) {
        refreshed = true;
        token = await this.tokens.accessToken(shop.id, { stale: token });
        continue;
      }
      if (status === 401 || status === 403 || status === 402 || status === 423) throw notInstalledOr(status);
      if (status >= 500 && !isMutation && !retriedNetwork) {
        retriedNetwork = true;
        continue;
      }
      if (status !== 200) throw isMutation && status >= 500 ? mutationOutcomeUnknown(`HTTP ${status}`) : platformUnavailable(`HTTP ${status}`);
      const answer = parseAnswer(res.body) as GraphqlAnswer<T> | null;
      if (answer === null || typeof answer !== 'object') throw isMutation ? mutationOutcomeUnknown('an answer that is not JSON') : platformUnavailable('an answer that is not JSON');
      const cost = answer.extensions?.cost;
      if (cost) {
        bucket.update(cost.throttleStatus, now());
        this.costs.set(name, cost.requestedQueryCost);
      }
      const errors = Array.isArray(answer.errors) ? answer.errors : [];
      if (errors.some((e) => e?.extensions?.code === 'THROTTLED')) {
        const need = cost ? bucket.waitFor(cost.requestedQueryCost, now()) : 1000;
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
