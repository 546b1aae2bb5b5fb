import { StandInBilling } from './billing.js';
import { BulkRunner } from './bulk.js';
import { billingCycle } from './cycles.js';
import { Faults } from './faults.js';
import type { CostSettings } from './graphql.js';
import { topicName } from './mutations.js';
import { signSessionToken, TokenIssuer } from './oauth.js';
import * as payloads from './payloads.js';
import { selectCycle } from './queries.js';
import type { LoggedRequest, StandInOptions } from './options.js';
import type { ResolverContext, ResolverHooks, RootCall } from './resolverContext.js';
import { ADMIN_API_VERSION } from './schema.js';
import {
  applyStatus,
  planStatusChange,
  Store,
  toSecond,
  type AppSubscription,
  type AppSubscriptionStatus,
  type Clock,
  type Contract,
  type ContractInit,
  type ContractLine,
  type Shop,
  type StatusAction,
} from './store.js';
import { WebhookSender } from './webhooks.js';

const COMPLIANCE: string[] = ['customers/data_request', 'customers/redact', 'shop/redact'];
const DEFAULT_SCOPES = 'read_own_subscription_contracts,write_own_subscription_contracts,read_customers';

/** The stand-in's state and the test harness's controls. The HTTP side is in server.ts. */
export class StandIn {
  url = '';
  readonly clock: Clock;
  readonly store: Store;
  readonly tokens: TokenIssuer;
  readonly webhooks: WebhookSender;
  readonly faults = new Faults();
  readonly bulk: BulkRunner;
  /** Billing attempts and their outcomes (billing.ts). */
  readonly billing: StandInBilling;
  readonly requests: LoggedRequest[] = [];
  /** Admin API GraphQL requests per shop, counted even when the log is off (a benchmark counts calls with it). */
  readonly graphqlCalls = new Map<string, number>();
  readonly costs: CostSettings;
  private readonly hooks: ResolverHooks;
  appWebhooks: { uri: string; topics?: string[] } | undefined;

  constructor(readonly options: StandInOptions) {
    this.clock = options.clock ?? { now: () => new Date() };
    this.store = new Store(this.clock, {
      maximumAvailable: options.bucket?.maximumAvailable ?? 2000,
      restoreRate: options.bucket?.restoreRate ?? 100,
    });
    this.tokens = new TokenIssuer({
      appKey: options.appKey,
      appSecret: options.appSecret,
      clock: this.clock,
      scopes: options.scopes ?? DEFAULT_SCOPES,
      accessTokenTtlSeconds: options.accessTokenTtlSeconds ?? 3600,
      refreshTokenTtlSeconds: options.refreshTokenTtlSeconds ?? 7_776_000,
    });
    this.webhooks = new WebhookSender({
      appSecret: options.appSecret,
      apiVersion: ADMIN_API_VERSION,
      clock: this.clock,
      timeoutMs: options.webhookTimeoutMs ?? 5000,
      retryDelaysMs: options.webhookRetryDelaysMs ?? [],
      keepLog: options.keepLog ?? true,
    });
    this.bulk = new BulkRunner(
      { autoComplete: options.bulk?.autoComplete ?? true, delayMs: options.bulk?.delayMs ?? 0 },
      {
        clock: this.clock,
        baseUrl: () => this.url,
        context: (shop) => this.context(shop),
        finished: (shop, op) => this.emit(shop, 'bulk_operations/finish', payloads.bulkOperationPayload(op)),
      },
    );
    this.billing = new StandInBilling(
      {
        clock: this.clock,
        nextId: () => this.store.nextId(),
        emit: (shop, topic, payload) => this.emit(shop, topic, payload),
        shop: (domain) => this.store.shop(domain),
        baseUrl: () => this.url,
      },
      options.billing,
    );
    this.costs = { maxQueryCost: options.maxQueryCost ?? 1000, costByOperation: options.costByOperation ?? {} };
    this.appWebhooks = options.appWebhooks;
    this.hooks = {
      appKey: options.appKey,
      scopes: options.scopes ?? DEFAULT_SCOPES,
      apiVersion: ADMIN_API_VERSION,
      webhookOnSetNextBillingDate: options.webhookOnSetNextBillingDate ?? false,
      contractEvent: (shop, topic, contract) => this.contractEvent(shop, topic, contract),
      cycleEvent: (shop, topic, cycle) => this.emit(shop, topic, payloads.billingCyclePayload(cycle)),
      confirmationUrl: (shop, sub) =>
        `${this.shopUrl(shop.domain)}/admin/charges/1/${sub.id}/RecurringApplicationCharge/confirm_recurring_application_charge?signature=standin`,
      setAppSubscriptionStatus: (shop, sub, status) => this.setAppSubscriptionStatus(shop, sub, status),
      startBulk: (shop, op) => this.bulk.start(shop, op),
      takeUserError: (shop, mutation) => this.faults.takeUserError(shop.domain, mutation),
      billing: this.billing,
    };
  }

  /** Where svc reaches a shop (SHOPIFY_SHOP_URL with {shop} filled in). */
  shopUrl(shop: string): string {
    return `${this.url}/${shop}`;
  }

  /** The value for svc's SHOPIFY_SHOP_URL. */
  get shopUrlTemplate(): string {
    return `${this.url}/{shop}`;
  }

  createShop(domain: string, init?: Parameters<Store['createShop']>[1]): Shop {
    return this.store.createShop(domain, init);
  }

  shop(domain: string): Shop {
    return this.store.shop(domain);
  }

  /** A contract created on the platform (a checkout); sends subscription_contracts/create unless `silent`. */
  createContract(domain: string, init: ContractInit = {}, opts: { silent?: boolean } = {}): Contract {
    const contract = this.store.createContract(domain, init);
    if (!opts.silent) this.contractEvent(this.shop(domain), 'subscription_contracts/create', contract);
    return contract;
  }

  contract(domain: string, id: number | string): Contract {
    return this.store.contract(domain, id);
  }

  /** A product variant in the shop's catalog (what a draft's lines name). */
  createVariant(domain: string, init: Parameters<Store['createVariant']>[1]) {
    return this.store.createVariant(domain, init);
  }

  /** A discount code of the shop: `{ percentage }` (whole percent) or `{ amount, appliesOnEachItem }`; `active: false` is applied with a rejection reason. */
  createDiscountCode(domain: string, code: string, value: Parameters<Store['createDiscountCode']>[2], opts?: { active?: boolean }) {
    return this.store.createDiscountCode(domain, code, value, opts);
  }

  /** The drafts made of a contract (committed or not), oldest first. */
  drafts(domain: string, contractId: number | string) {
    const c = this.contract(domain, contractId);
    return [...this.shop(domain).drafts.values()].filter((d) => d.contractId === c.id);
  }

  /** Changes made on the platform outside svc (the shop admin, a failed payment); each sends its webhook. */
  readonly platform = {
    pause: (domain: string, id: number | string) => this.platformStatus(domain, id, 'pause'),
    activate: (domain: string, id: number | string) => this.platformStatus(domain, id, 'activate'),
    cancel: (domain: string, id: number | string) => this.platformStatus(domain, id, 'cancel'),
    fail: (domain: string, id: number | string) => this.platformStatus(domain, id, 'fail'),
    expire: (domain: string, id: number | string) => this.platformStatus(domain, id, 'expire'),
    /** Lines, dates or policies changed: subscription_contracts/update. */
    update: (
      domain: string,
      id: number | string,
      change: { lines?: Partial<ContractLine>[]; nextBillingDate?: Date | string | null } & Partial<Pick<Contract, 'billingPolicy' | 'deliveryPolicy' | 'note'>>,
    ): Contract => {
      const c = this.contract(domain, id);
      if (change.lines) c.lines = change.lines.map((l) => this.store.line(l, c.currencyCode));
      if (change.nextBillingDate !== undefined) c.nextBillingDate = change.nextBillingDate === null ? null : toSecond(new Date(change.nextBillingDate));
      if (change.billingPolicy) c.billingPolicy = change.billingPolicy;
      if (change.deliveryPolicy) c.deliveryPolicy = change.deliveryPolicy;
      if (change.note !== undefined) c.note = change.note;
      this.store.touch(c);
      this.contractEvent(this.shop(domain), 'subscription_contracts/update', c);
      return c;
    },
    skip: (domain: string, id: number | string, selector: { date?: string; index?: number }) => this.platformCycle(domain, id, selector, true),
    unskip: (domain: string, id: number | string, selector: { date?: string; index?: number }) => this.platformCycle(domain, id, selector, false),
  };

  private platformStatus(domain: string, id: number | string, action: StatusAction): Contract {
    const c = this.contract(domain, id);
    const plan = planStatusChange(c, action);
    if (!plan.ok) throw new Error(plan.message);
    if (plan.changed) {
      applyStatus(this.store, c, action);
      this.contractEvent(this.shop(domain), `subscription_contracts/${action}`, c);
    }
    return c;
  }

  private platformCycle(domain: string, id: number | string, selector: { date?: string; index?: number }, skip: boolean) {
    const shop = this.shop(domain);
    const found = selectCycle(this.context(shop), { contractId: this.contract(domain, id).gid, selector });
    if (!('cycle' in found)) throw new Error(found.error);
    if (skip) found.contract.skippedCycles.add(found.cycle.index);
    else found.contract.skippedCycles.delete(found.cycle.index);
    const after = billingCycle(found.contract, found.cycle.index, this.clock.now());
    this.emit(shop, `subscription_billing_cycles/${skip ? 'skip' : 'unskip'}`, payloads.billingCyclePayload(after));
    return after;
  }

  install(domain: string): void {
    this.shop(domain).installed = true;
  }

  /**
   * The merchant uninstalls the app: app/uninstalled goes out, then every token of the shop stops working, the
   * app's webhook subscriptions are removed and its app subscriptions cancelled (silently: the app is gone).
   */
  uninstall(domain: string): void {
    const shop = this.shop(domain);
    this.emit(shop, 'app/uninstalled', payloads.shopPayload(shop));
    shop.installed = false;
    this.tokens.revokeShop(domain);
    shop.webhookSubscriptions = [];
    for (const s of shop.appSubscriptions) if (s.status === 'ACTIVE' || s.status === 'PENDING') s.status = 'CANCELLED';
  }

  private appSubscription(domain: string, id?: number | string): AppSubscription {
    const subs = this.shop(domain).appSubscriptions;
    const n = typeof id === 'string' ? Number(id.split('/').pop()) : id;
    const sub = n === undefined ? subs.filter((s) => s.status === 'PENDING').at(-1) : subs.find((s) => s.id === n);
    if (!sub) throw new Error(`no ${n === undefined ? 'pending ' : ''}app subscription ${n ?? ''} in ${domain}`);
    return sub;
  }

  /** The merchant approves an app subscription (default: the latest pending one): ACTIVE, replacing the active one. */
  approveAppSubscription(domain: string, id?: number | string): AppSubscription {
    const shop = this.shop(domain);
    const sub = this.appSubscription(domain, id);
    for (const other of shop.appSubscriptions) if (other !== sub && other.status === 'ACTIVE') this.setAppSubscriptionStatus(shop, other, 'CANCELLED');
    sub.currentPeriodEnd = new Date(this.clock.now().getTime() + 30 * 86_400_000);
    this.setAppSubscriptionStatus(shop, sub, 'ACTIVE');
    return sub;
  }

  declineAppSubscription(domain: string, id?: number | string): AppSubscription {
    const sub = this.appSubscription(domain, id);
    this.setAppSubscriptionStatus(this.shop(domain), sub, 'DECLINED');
    return sub;
  }

  /** The merchant (or the platform, for non-payment) ends an app subscription: CANCELLED, FROZEN or EXPIRED. */
  endAppSubscription(domain: string, id: number | string, status: 'CANCELLED' | 'FROZEN' | 'EXPIRED' = 'CANCELLED'): AppSubscription {
    const sub = this.appSubscription(domain, id);
    this.setAppSubscriptionStatus(this.shop(domain), sub, status);
    return sub;
  }

  setAppSubscriptionStatus(shop: Shop, sub: AppSubscription, status: AppSubscriptionStatus): void {
    sub.status = status;
    sub.updatedAt = this.clock.now();
    this.emit(shop, 'app_subscriptions/update', payloads.appSubscriptionPayload(shop, sub));
  }

  /** A session token for the shop, as App Bridge would hand svc's admin screen. */
  sessionToken(domain: string, opts: { ttlSeconds?: number; claims?: Record<string, unknown> } = {}): string {
    const { appKey, appSecret } = this.options;
    return signSessionToken({ appKey, appSecret, shop: domain, now: this.clock.now(), ...opts });
  }

  /** Sends a compliance webhook (to the app-configured uri). */
  sendCompliance(domain: string, topic: payloads.ComplianceTopic, input?: Parameters<typeof payloads.compliancePayload>[2]) {
    const shop = this.shop(domain);
    return this.emit(shop, topic, payloads.compliancePayload(shop, topic, input));
  }

  /**
   * Empties the shop's cost bucket: its next requests are throttled until points are restored, and, with `refusals`,
   * at least that many are refused before it refills at all.
   */
  throttle(domain: string, refusals = 0): void {
    this.shop(domain).bucket.drain(refusals);
  }

  /** The root-field calls svc made (e.g. 'subscriptionContractPause'), with their arguments. */
  calls(field: string, domain?: string): (RootCall & { shop: string; operationName: string | null | undefined })[] {
    return this.requests
      .filter((r) => r.endpoint === 'graphql' && (!domain || r.shop === domain))
      .flatMap((r) => (r.rootCalls ?? []).filter((c) => c.field === field).map((c) => ({ ...c, shop: r.shop, operationName: r.operationName })));
  }

  /** Requests whose document the schema rejected. */
  invalidDocuments(): LoggedRequest[] {
    return this.requests.filter((r) => r.validationErrors && r.validationErrors.length > 0);
  }

  context(shop: Shop): ResolverContext {
    return {
      now: this.clock.now(),
      bulk: false,
      contractsOfCustomer: (id) => [...shop.contracts.values()].filter((c) => c.customer.id === id),
      store: this.store,
      shop,
      hooks: this.hooks,
      calls: [],
    };
  }


  private contractEvent(shop: Shop, topic: string, contract: Contract): void {
    this.emit(shop, topic, payloads.contractPayload(contract));
  }

  /** Sends a topic to its subscribers: the shop's webhook subscriptions and the app-configured uri. */
  emit(shop: Shop, topic: string, payload: unknown) {
    const compliance = COMPLIANCE.includes(topic);
    if (!shop.installed && !compliance) return [];
    const urls = shop.webhookSubscriptions.filter((w) => topicName(w.topic) === topic).map((w) => w.uri);
    if (this.appWebhooks && (compliance || this.appWebhooks.topics?.includes(topic)) && !urls.includes(this.appWebhooks.uri)) {
      urls.push(this.appWebhooks.uri);
    }
    return this.webhooks.emit(shop.domain, topic, payload, urls);
  }
}
