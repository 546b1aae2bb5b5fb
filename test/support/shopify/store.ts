import { CostBucket } from './cost.js';

/** The stand-in's time source; tests pass one they can move. */
export type Clock = { now(): Date };

export type ContractStatus = 'ACTIVE' | 'PAUSED' | 'CANCELLED' | 'EXPIRED' | 'FAILED';
export type Interval = 'DAY' | 'WEEK' | 'MONTH' | 'YEAR';
export type Money = { amount: string; currencyCode: string };

export type ContractLine = {
  id: number;
  title: string;
  variantId: number | null;
  productId: number | null;
  sku: string | null;
  variantTitle: string | null;
  quantity: number;
  currentPrice: Money;
};

export type Customer = { id: number; email: string | null; phone: string | null; firstName: string | null; lastName: string | null };

export type Contract = {
  id: number;
  gid: string;
  status: ContractStatus;
  nextBillingDate: Date | null;
  billingPolicy: { interval: Interval; intervalCount: number; minCycles: number | null; maxCycles: number | null };
  deliveryPolicy: { interval: Interval; intervalCount: number };
  customer: Customer;
  lines: ContractLine[];
  currencyCode: string;
  createdAt: Date;
  updatedAt: Date;
  /** UnsignedInt64, a string on the wire; grows on every change. */
  revisionId: string;
  lastPaymentStatus: 'SUCCEEDED' | 'FAILED' | null;
  lastBillingAttemptErrorType: 'CUSTOMER_ERROR' | 'INVENTORY_ERROR' | 'OTHER' | 'PAYMENT_ERROR' | null;
  originOrderId: number | null;
  note: string | null;
  /** Billing date of cycle 1: the anchor of the computed billing cycles (see cycles.ts). */
  firstBillingDate: Date;
  skippedCycles: Set<number>;
  /** What the latest billing attempt of a cycle came to, by cycle index (billing.ts); absent: none was made. */
  cycleBilling?: Map<number, 'billed' | 'failed'>;
};

export type AppSubscriptionStatus = 'PENDING' | 'ACTIVE' | 'DECLINED' | 'CANCELLED' | 'EXPIRED' | 'FROZEN';
export type AppPlan =
  | { kind: 'recurring'; price: Money; interval: 'EVERY_30_DAYS' | 'ANNUAL' }
  | { kind: 'usage'; cappedAmount: Money; terms: string; interval: 'EVERY_30_DAYS' | 'ANNUAL' };

export type AppSubscription = {
  id: number;
  name: string;
  status: AppSubscriptionStatus;
  test: boolean;
  returnUrl: string;
  trialDays: number;
  createdAt: Date;
  updatedAt: Date;
  currentPeriodEnd: Date | null;
  lineItems: { id: number; plan: AppPlan }[];
  replacementBehavior: string;
};

export type WebhookSubscription = {
  id: number;
  /** The schema's enum value, e.g. SUBSCRIPTION_CONTRACTS_PAUSE. */
  topic: string;
  uri: string;
  format: 'JSON' | 'XML';
  filter: string | null;
  includeFields: string[];
  name: string | null;
  createdAt: Date;
  updatedAt: Date;
};

export type BulkOperation = {
  id: number;
  status: 'CREATED' | 'RUNNING' | 'COMPLETED' | 'FAILED' | 'CANCELED' | 'CANCELING' | 'EXPIRED';
  type: 'QUERY' | 'MUTATION';
  query: string;
  createdAt: Date;
  completedAt: Date | null;
  errorCode: 'ACCESS_DENIED' | 'INTERNAL_SERVER_ERROR' | 'TIMEOUT' | null;
  url: string | null;
  objectCount: number;
  rootObjectCount: number;
  fileSize: number | null;
};

export type Shop = {
  domain: string;
  id: number;
  name: string;
  email: string;
  currencyCode: string;
  installed: boolean;
  contracts: Map<number, Contract>;
  appSubscriptions: AppSubscription[];
  webhookSubscriptions: WebhookSubscription[];
  bulkOperations: BulkOperation[];
  bucket: CostBucket;
};

export type ContractInit = Partial<Omit<Contract, 'id' | 'gid' | 'revisionId' | 'skippedCycles' | 'lines' | 'customer' | 'nextBillingDate'>> & {
  nextBillingDate?: Date | string | null;
  lines?: Partial<ContractLine>[];
  customer?: Partial<Customer>;
};

export const SHOP_DOMAIN = /^[a-z0-9][a-z0-9-]*\.myshopify\.com$/;

export const gid = (type: string, id: number | string) => `gid://shopify/${type}/${id}`;

/** Parses `gid://shopify/Type/123` (or a bare number) into its type and numeric id. */
export function parseGid(value: string): { type: string; id: number } | null {
  const m = /^gid:\/\/shopify\/([A-Za-z]+)\/(\d{1,19})(\?.*)?$/.exec(value);
  return m ? { type: m[1], id: Number(m[2]) } : null;
}

/** The platform answers times to the second. */
export const toSecond = (d: Date) => new Date(Math.floor(d.getTime() / 1000) * 1000);

/**
 * The platform's data: shops and what each holds. Ids are global across shops (as the platform's are) and grow;
 * every change to a contract goes through `touch`, which moves `updatedAt` and `revisionId`.
 */
export class Store {
  readonly shops = new Map<string, Shop>();
  private lastId = 1_000_000;
  private lastRevision = 5_000_000_000;

  constructor(
    readonly clock: Clock,
    private readonly bucket: { maximumAvailable: number; restoreRate: number },
  ) {}

  nextId(): number {
    return ++this.lastId;
  }

  now(): Date {
    return this.clock.now();
  }

  createShop(domain: string, init: { name?: string; email?: string; currencyCode?: string; installed?: boolean } = {}): Shop {
    if (!SHOP_DOMAIN.test(domain)) throw new Error(`not a shop domain: ${domain}`);
    if (this.shops.has(domain)) throw new Error(`shop exists: ${domain}`);
    const shop: Shop = {
      domain,
      id: this.nextId(),
      name: init.name ?? domain.replace('.myshopify.com', ''),
      email: init.email ?? `owner@${domain}`,
      currencyCode: init.currencyCode ?? 'USD',
      installed: init.installed ?? true,
      contracts: new Map(),
      appSubscriptions: [],
      webhookSubscriptions: [],
      bulkOperations: [],
      bucket: new CostBucket(this.bucket.maximumAvailable, this.bucket.restoreRate, this.clock),
    };
    this.shops.set(domain, shop);
    return shop;
  }

  shop(domain: string): Shop {
    const shop = this.shops.get(domain);
    if (!shop) throw new Error(`unknown shop: ${domain}`);
    return shop;
  }

  contract(domain: string, id: number | string): Contract {
    const n = typeof id === 'number' ? id : (parseGid(id)?.id ?? Number(id));
    const contract = this.shop(domain).contracts.get(n);
    if (!contract) throw new Error(`unknown contract ${id} in ${domain}`);
    return contract;
  }

  /** Records a change: `updatedAt` to now (to the second), `revisionId` to a larger value. */
  touch(contract: Contract): void {
    contract.updatedAt = toSecond(this.now());
    this.lastRevision += 1 + Math.floor(Math.random() * 1000);
    contract.revisionId = String(this.lastRevision);
  }

  createContract(domain: string, init: ContractInit = {}): Contract {
    const shop = this.shop(domain);
    const now = toSecond(this.now());
    const id = this.nextId();
    const currencyCode = init.currencyCode ?? shop.currencyCode;
    const interval = init.billingPolicy?.interval ?? 'MONTH';
    const intervalCount = init.billingPolicy?.intervalCount ?? 1;
    const next =
      init.nextBillingDate === null
        ? null
        : toSecond(init.nextBillingDate ? new Date(init.nextBillingDate) : new Date(now.getTime() + 30 * 86_400_000));
    const customerId = init.customer?.id ?? this.nextId();
    const contract: Contract = {
      id,
      gid: gid('SubscriptionContract', id),
      status: init.status ?? 'ACTIVE',
      nextBillingDate: next,
      billingPolicy: { interval, intervalCount, minCycles: null, maxCycles: null, ...init.billingPolicy },
      deliveryPolicy: init.deliveryPolicy ?? { interval, intervalCount },
      customer: {
        id: customerId,
        email: `customer${customerId}@example.com`,
        phone: null,
        firstName: null,
        lastName: null,
        ...init.customer,
      },
      lines: (init.lines ?? [{}]).map((l) => this.line(l, currencyCode)),
      currencyCode,
      createdAt: init.createdAt ? toSecond(init.createdAt) : now,
      updatedAt: now,
      revisionId: '0',
      lastPaymentStatus: init.lastPaymentStatus ?? 'SUCCEEDED',
      lastBillingAttemptErrorType: init.lastBillingAttemptErrorType ?? null,
      originOrderId: init.originOrderId === undefined ? this.nextId() : init.originOrderId,
      note: init.note ?? null,
      firstBillingDate: init.firstBillingDate ? toSecond(init.firstBillingDate) : (next ?? now),
      skippedCycles: new Set(),
    };
    this.touch(contract);
    contract.updatedAt = init.updatedAt ? toSecond(init.updatedAt) : contract.updatedAt;
    shop.contracts.set(id, contract);
    return contract;
  }

  line(l: Partial<ContractLine>, currencyCode: string): ContractLine {
    const id = l.id ?? this.nextId();
    return {
      id,
      title: l.title ?? 'Coffee 1kg',
      variantId: l.variantId === undefined ? this.nextId() : l.variantId,
      productId: l.productId === undefined ? this.nextId() : l.productId,
      sku: l.sku ?? null,
      variantTitle: l.variantTitle ?? null,
      quantity: l.quantity ?? 1,
      currentPrice: l.currentPrice ?? { amount: '24.0', currencyCode },
    };
  }
}

export type StatusAction = 'pause' | 'activate' | 'cancel' | 'fail' | 'expire';

const TARGET: Record<StatusAction, ContractStatus> = {
  pause: 'PAUSED',
  activate: 'ACTIVE',
  cancel: 'CANCELLED',
  fail: 'FAILED',
  expire: 'EXPIRED',
};

export type StatusOutcome =
  | { ok: true; changed: boolean }
  | { ok: false; code: 'CONTRACT_TERMINATED' | 'INVALID'; message: string };

/**
 * The status rules the stand-in applies (the platform's own table is not published): CANCELLED and EXPIRED are
 * terminal (any status mutation answers CONTRACT_TERMINATED); asking for the status a contract already has is a
 * success that changes nothing (no new revision, no webhook); every other move between ACTIVE, PAUSED and FAILED,
 * and from them to CANCELLED or EXPIRED, is allowed.
 */
export function planStatusChange(contract: Contract, action: StatusAction): StatusOutcome {
  if (contract.status === 'CANCELLED' || contract.status === 'EXPIRED') {
    return { ok: false, code: 'CONTRACT_TERMINATED', message: `Cannot ${action} a contract that is ${contract.status.toLowerCase()}: subscription contract status cannot be changed once terminated.` };
  }
  return { ok: true, changed: contract.status !== TARGET[action] };
}

export function applyStatus(store: Store, contract: Contract, action: StatusAction): void {
  contract.status = TARGET[action];
  if (action === 'fail') contract.lastPaymentStatus = 'FAILED';
  store.touch(contract);
}
