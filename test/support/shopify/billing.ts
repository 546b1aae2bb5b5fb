import { billingCycle, cycleIndexAt } from './cycles.js';
import type { ResolverContext } from './resolverContext.js';
import { gid, parseGid, type Clock, type Contract, type Shop } from './store.js';
import { dt } from './views.js';

/**
 * Billing attempts, as the platform models them (`subscriptionBillingAttemptCreate`, the attempt's `state` union, the
 * `subscription_billing_attempts/*` webhooks), with their outcomes chosen by the test.
 *
 * Rules the stand-in applies:
 * - One attempt per idempotency key and shop: creating again with a key already used answers the first attempt and
 *   charges nothing (https://shopify.dev/docs/api/usage/idempotent-requests).
 * - The cycle is the one the selector's date falls in (the current one without a selector); a skipped cycle is
 *   userError BILLING_CYCLE_SKIPPED, a CANCELLED or EXPIRED contract CONTRACT_TERMINATED, an unknown one
 *   CONTRACT_NOT_FOUND. An `originTime` outside the selected cycle is ORIGIN_TIME_OUT_OF_RANGE.
 * - A PAUSED or FAILED contract is billed like an ACTIVE one: the app owns the schedule and must not ask.
 * - An attempt is created pending (`SubscriptionBillingAttemptPendingState`) and settles after the answer (or when
 *   the test says, with `settle: 'manual'`): success makes an order (`#1001`, … per shop) for the lines' total and
 *   sends `subscription_billing_attempts/success`; a failure sends `…/failure` with the lowercase code; a challenge
 *   becomes `SubscriptionBillingAttemptActionRequiredState` with no webhook until the buyer comes back
 *   (`buyerReturns`), which sends `…/challenged` (the platform sends it only then:
 *   https://help.shopify.com/en/manual/shopify-flow/reference/triggers/subscription-billing-attempt-challenged).
 * - Settling does not change the contract (no new revision): the next billing date is the app's to set. It makes the
 *   cycle BILLED (a success) or leaves it UNBILLED (a failure), so a failed cycle can still be skipped.
 * Late, repeated or lost webhooks come from the webhook faults (`webhooks.fault({ mode: 'delay' | 'twice' | 'drop' },
 * { topic: 'subscription_billing_attempts/success' })`).
 */

/** What the payment of an attempt comes to. `code` is one of the schema's SubscriptionBillingAttemptErrorCode. */
export type PaymentOutcome = { kind: 'success' } | { kind: 'failure'; code: string; message?: string } | { kind: 'challenge' };

export type AttemptState =
  | { kind: 'pending' }
  | { kind: 'success'; order: { id: number; name: string; amount: string; currencyCode: string } }
  | { kind: 'failed'; type: ErrorType; code: string; message: string }
  | { kind: 'challenged'; nextActionUrl: string; status: 'OFF_SESSION_REJECTED' | 'ON_SESSION_CHALLENGED' };

type ErrorType = 'payment' | 'inventory' | 'general' | 'unexpected';

export type StandInAttempt = {
  id: number;
  gid: string;
  shop: string;
  contractId: number;
  idempotencyKey: string;
  originTime: Date | null;
  cycleIndex: number;
  createdAt: Date;
  completedAt: Date | null;
  state: AttemptState;
  /** What it settles to. */
  outcome: PaymentOutcome;
};

export type BillingSettings = { settle?: 'auto' | 'manual' };

/** The schema's error codes by the error type of the state union that carries them (the rest are payment codes). */
const INVENTORY_CODES = new Set(['INSUFFICIENT_INVENTORY', 'INVENTORY_ALLOCATIONS_NOT_FOUND']);
const GENERAL_CODES = new Set([
  'CUSTOMER_INVALID',
  'CUSTOMER_NOT_FOUND',
  'FREE_GIFT_CARD_NOT_ALLOWED',
  'INVALID_BILLING_ADDRESS',
  'MERCHANT_ACCOUNT_ERROR',
  'NON_TEST_ORDER_LIMIT_REACHED',
  'PAYMENT_METHOD_INCOMPATIBLE_WITH_GATEWAY_CONFIG',
  'PAYMENT_METHOD_NOT_FOUND',
  'PAYMENT_METHOD_NOT_SPECIFIED',
  'PAYMENT_PROVIDER_IS_NOT_ENABLED',
]);
const errorType = (code: string): ErrorType =>
  code === 'UNEXPECTED_ERROR' ? 'unexpected' : INVENTORY_CODES.has(code) ? 'inventory' : GENERAL_CODES.has(code) ? 'general' : 'payment';

type UserError = { field: string[] | null; message: string; code: string };
type Emit = (shop: Shop, topic: string, payload: unknown) => unknown;

/** The stand-in's billing: the resolvers' side (create, read) and the test's controls. */
export class StandInBilling {
  /** Every attempt created, in order (the bench counts duplicates here). */
  readonly attempts: StandInAttempt[] = [];
  private readonly byId = new Map<number, StandInAttempt>();
  private readonly byKey = new Map<string, StandInAttempt>();
  private readonly planned = new Map<string, PaymentOutcome[]>();
  private readonly defaults = new Map<string, PaymentOutcome>();
  private readonly orderNumbers = new Map<string, number>();
  private readonly settling = new Set<Promise<void>>();
  private readonly settle: 'auto' | 'manual';

  constructor(
    private readonly deps: { clock: Clock; nextId(): number; emit: Emit; shop(domain: string): Shop; baseUrl(): string },
    settings: BillingSettings = {},
  ) {
    this.settle = settings.settle ?? 'auto';
  }

  // ---- the test's controls ----

  /** The next `count` attempts of the contract (default 1) come to `outcome`; without `count`, every later one. */
  willAnswer(domain: string, contractId: number | string, outcome: PaymentOutcome, opts: { count?: number } = {}): void {
    const key = `${domain}/${idOf(contractId)}`;
    if (opts.count === undefined) {
      this.defaults.set(key, outcome);
      this.planned.delete(key);
      return;
    }
    const list = this.planned.get(key) ?? [];
    for (let i = 0; i < opts.count; i++) list.push(outcome);
    this.planned.set(key, list);
  }

  /** The attempts of a shop (and contract). */
  of(domain: string, contractId?: number | string): StandInAttempt[] {
    const c = contractId === undefined ? undefined : idOf(contractId);
    return this.attempts.filter((a) => a.shop === domain && (c === undefined || a.contractId === c));
  }

  /** Settles pending attempts now (with `settle: 'manual'`), all or those of a shop; returns how many. */
  settlePending(domain?: string): number {
    const pending = this.attempts.filter((a) => a.state.kind === 'pending' && (!domain || a.shop === domain));
    for (const a of pending) this.complete(a);
    return pending.length;
  }

  /** The buyer comes back to a challenged attempt: `subscription_billing_attempts/challenged` goes out. */
  buyerReturns(domain: string, attemptId: number | string): StandInAttempt {
    const a = this.attempt(domain, attemptId);
    if (a.state.kind !== 'challenged') throw new Error(`attempt ${a.id} is not challenged`);
    a.state = { ...a.state, status: 'ON_SESSION_CHALLENGED' };
    this.deps.emit(this.deps.shop(domain), 'subscription_billing_attempts/challenged', this.payload(a));
    return a;
  }

  /** Resolves once every automatic settlement has run (its webhook handed to the sender). */
  async flush(): Promise<void> {
    while (this.settling.size) await Promise.allSettled([...this.settling]);
  }

  attempt(domain: string, id: number | string): StandInAttempt {
    const a = this.byId.get(idOf(id));
    if (!a || a.shop !== domain) throw new Error(`unknown billing attempt ${id} in ${domain}`);
    return a;
  }

  // ---- resolvers ----

  /** subscriptionBillingAttemptCreate. */
  create(
    ctx: ResolverContext,
    args: { subscriptionContractId: string; subscriptionBillingAttemptInput: { idempotencyKey: string; originTime?: string | null; billingCycleSelector?: { date?: string | null; index?: number | null } | null } },
  ): object {
    const { shop, hooks } = ctx;
    const fail = (e: UserError) => ({ subscriptionBillingAttempt: null, userErrors: [e] });
    const injected = hooks.takeUserError(shop, 'subscriptionBillingAttemptCreate');
    if (injected) return fail({ field: injected.field ?? null, message: injected.message, code: injected.code ?? 'INVALID' });
    const input = args.subscriptionBillingAttemptInput;
    const g = parseGid(args.subscriptionContractId);
    const contract = g?.type === 'SubscriptionContract' ? shop.contracts.get(g.id) : undefined;
    if (!contract) return fail({ field: ['subscriptionContractId'], message: 'Subscription contract does not exist', code: 'CONTRACT_NOT_FOUND' });
    const existing = this.byKey.get(`${shop.domain}\n${input.idempotencyKey}`);
    if (existing) return { subscriptionBillingAttempt: this.view(existing), userErrors: [] };
    if (contract.status === 'CANCELLED' || contract.status === 'EXPIRED') {
      return fail({ field: ['subscriptionContractId'], message: `The contract is ${contract.status.toLowerCase()}`, code: 'CONTRACT_TERMINATED' });
    }
    const selector = input.billingCycleSelector;
    if (selector?.index != null && selector.index < 1) {
      return fail({ field: ['subscriptionBillingAttemptInput', 'billingCycleSelector', 'index'], message: 'Billing cycle index out of range', code: 'CYCLE_INDEX_OUT_OF_RANGE' });
    }
    const index = selector?.index ?? cycleIndexAt(contract, selector?.date ? new Date(selector.date) : ctx.now);
    const cycle = billingCycle(contract, index, ctx.now);
    if (cycle.skipped) return fail({ field: ['subscriptionBillingAttemptInput', 'billingCycleSelector'], message: 'The billing cycle is skipped', code: 'BILLING_CYCLE_SKIPPED' });
    const originTime = input.originTime ? new Date(input.originTime) : null;
    if (originTime && (originTime < cycle.startAt || originTime >= cycle.endAt)) {
      return fail({ field: ['subscriptionBillingAttemptInput', 'originTime'], message: "Origin time must be within the billing cycle's start and end", code: 'ORIGIN_TIME_OUT_OF_RANGE' });
    }
    const id = this.deps.nextId();
    const attempt: StandInAttempt = {
      id,
      gid: gid('SubscriptionBillingAttempt', id),
      shop: shop.domain,
      contractId: contract.id,
      idempotencyKey: input.idempotencyKey,
      originTime,
      cycleIndex: index,
      createdAt: this.deps.clock.now(),
      completedAt: null,
      state: { kind: 'pending' },
      outcome: this.nextOutcome(shop.domain, contract.id),
    };
    this.attempts.push(attempt);
    this.byId.set(id, attempt);
    this.byKey.set(`${shop.domain}\n${input.idempotencyKey}`, attempt);
    if (this.settle === 'auto') {
      // After the answer, as the platform processes the payment behind its commit.
      const p = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
        if (attempt.state.kind === 'pending') this.complete(attempt);
      });
      const tracked = p.finally(() => this.settling.delete(tracked));
      this.settling.add(tracked);
    }
    return { subscriptionBillingAttempt: this.view(attempt), userErrors: [] };
  }

  /** An attempt by id as `node`/`subscriptionBillingAttempt` answers it (null: not this shop's). */
  find(shop: Shop, id: number): object | null {
    const a = this.byId.get(id);
    return a && a.shop === shop.domain ? this.view(a) : null;
  }

  private nextOutcome(domain: string, contractId: number): PaymentOutcome {
    const key = `${domain}/${contractId}`;
    const list = this.planned.get(key);
    const next = list?.shift();
    if (list && !list.length) this.planned.delete(key);
    return next ?? this.defaults.get(key) ?? { kind: 'success' };
  }

  private complete(a: StandInAttempt): void {
    const shop = this.deps.shop(a.shop);
    const contract = shop.contracts.get(a.contractId);
    const now = this.deps.clock.now();
    const o = a.outcome;
    if (o.kind === 'challenge') {
      a.state = { kind: 'challenged', nextActionUrl: `${this.deps.baseUrl()}/${a.shop}/authenticate/${a.id}`, status: 'OFF_SESSION_REJECTED' };
      return;
    }
    a.completedAt = now;
    if (o.kind === 'success') {
      const number = (this.orderNumbers.get(a.shop) ?? 1000) + 1;
      this.orderNumbers.set(a.shop, number);
      const currencyCode = contract?.currencyCode ?? shop.currencyCode;
      a.state = { kind: 'success', order: { id: this.deps.nextId(), name: `#${number}`, amount: contract ? linesTotal(contract) : '0.00', currencyCode } };
      if (contract) {
        contract.lastPaymentStatus = 'SUCCEEDED';
        (contract.cycleBilling ??= new Map()).set(a.cycleIndex, 'billed');
      }
      this.deps.emit(shop, 'subscription_billing_attempts/success', this.payload(a));
      return;
    }
    const type = errorType(o.code);
    a.state = { kind: 'failed', type, code: o.code, message: o.message ?? o.code.toLowerCase().replaceAll('_', ' ') };
    if (contract) {
      contract.lastPaymentStatus = 'FAILED';
      if (contract.cycleBilling?.get(a.cycleIndex) !== 'billed') (contract.cycleBilling ??= new Map()).set(a.cycleIndex, 'failed');
      contract.lastBillingAttemptErrorType = type === 'inventory' ? 'INVENTORY_ERROR' : type === 'payment' ? 'PAYMENT_ERROR' : type === 'general' ? 'CUSTOMER_ERROR' : 'OTHER';
    }
    this.deps.emit(shop, 'subscription_billing_attempts/failure', this.payload(a));
  }

  /**
   * The webhook body of the three topics, as documented (https://shopify.dev/docs/api/webhooks, topic
   * subscription_billing_attempts/success): numeric ids beside the gids, `ready`, and the failure's code lowercase.
   */
  payload(a: StandInAttempt) {
    const order = a.state.kind === 'success' ? a.state.order.id : null;
    const failed = a.state.kind === 'failed' ? a.state : null;
    return {
      id: a.id,
      admin_graphql_api_id: a.gid,
      idempotency_key: a.idempotencyKey,
      order_id: order,
      admin_graphql_api_order_id: order === null ? null : gid('Order', order),
      subscription_contract_id: a.contractId,
      admin_graphql_api_subscription_contract_id: gid('SubscriptionContract', a.contractId),
      ready: a.state.kind !== 'pending',
      error_message: failed ? failed.message : null,
      error_code: failed ? failed.code.toLowerCase() : null,
    };
  }

  private view(a: StandInAttempt): object {
    const shop = this.deps.shop(a.shop);
    const contract = shop.contracts.get(a.contractId);
    const s = a.state;
    const failed = s.kind === 'failed' ? s : null;
    return {
      __typename: 'SubscriptionBillingAttempt',
      id: a.gid,
      idempotencyKey: a.idempotencyKey,
      createdAt: dt(a.createdAt),
      completedAt: dt(a.completedAt),
      originTime: dt(a.originTime),
      respectInventoryPolicy: true,
      paymentGroupId: null,
      paymentSessionId: null,
      // The deprecated fields, as the platform still answers them.
      ready: s.kind !== 'pending',
      errorCode: failed?.code ?? null,
      errorMessage: failed?.message ?? null,
      nextActionUrl: s.kind === 'challenged' ? s.nextActionUrl : null,
      order: s.kind === 'success' ? orderView(s.order) : null,
      subscriptionContract: contract ? { __typename: 'SubscriptionContract', id: contract.gid } : null,
      state: stateView(s),
    };
  }
}

function stateView(s: AttemptState): object {
  switch (s.kind) {
    case 'pending':
      return { __typename: 'SubscriptionBillingAttemptPendingState', processing: true };
    case 'success':
      return { __typename: 'SubscriptionBillingAttemptSuccessState', order: orderView(s.order) };
    case 'challenged':
      return {
        __typename: 'SubscriptionBillingAttemptActionRequiredState',
        action: { __typename: 'SubscriptionBillingAttemptPaymentChallenge', nextActionUrl: s.nextActionUrl, status: s.status },
      };
    case 'failed': {
      const error =
        s.type === 'unexpected'
          ? { __typename: 'SubscriptionBillingAttemptUnexpectedError', message: s.message }
          : s.type === 'inventory'
            ? { __typename: 'SubscriptionBillingAttemptInventoryError', code: s.code, insufficientStockProductVariants: null }
            : s.type === 'general'
              ? { __typename: 'SubscriptionBillingAttemptGeneralError', code: s.code }
              : { __typename: 'SubscriptionBillingAttemptPaymentError', code: s.code };
      return { __typename: 'SubscriptionBillingAttemptFailedState', error };
    }
    default: {
      const never: never = s;
      throw new Error(`unknown attempt state ${JSON.stringify(never)}`);
    }
  }
}

function orderView(o: { id: number; name: string; amount: string; currencyCode: string }): object {
  const money = { amount: o.amount, currencyCode: o.currencyCode };
  return { __typename: 'Order', id: gid('Order', o.id), legacyResourceId: String(o.id), name: o.name, totalPriceSet: { shopMoney: money, presentmentMoney: money } };
}

/** The contract's lines' total, exact (prices as decimal strings, summed in hundredths). */
function linesTotal(c: Contract): string {
  let cents = 0n;
  for (const l of c.lines) {
    const [whole, frac = ''] = l.currentPrice.amount.split('.');
    cents += (BigInt(whole) * 100n + BigInt((frac + '00').slice(0, 2))) * BigInt(l.quantity);
  }
  return `${cents / 100n}.${String(cents % 100n).padStart(2, '0')}`;
}

const idOf = (id: number | string): number => (typeof id === 'number' ? id : (parseGid(id)?.id ?? Number(id)));
