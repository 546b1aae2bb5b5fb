import { GraphQLError } from 'graphql';
import type { BillingCycle } from './cycles.js';
import { ADMIN_API_VERSION } from './schema.js';
import { allocations, contractPricing, manualDiscountView, shippingMethodView } from './pricing.js';
import { gid, type AppSubscription, type BulkOperation, type Contract, type ContractLine, type Customer, type WebhookSubscription } from './store.js';

/** What every resolver gets. `bulk` is set while a bulk operation runs its query (no page limits). */
export type ViewContext = { now: Date; bulk: boolean; contractsOfCustomer(customerId: number): Contract[] };

export type PageArgs = { first?: number | null; last?: number | null; after?: string | null; before?: string | null; reverse?: boolean | null };

/** Times as the Admin API writes them: UTC, to the second. */
export const dt = (d: Date | null) => (d ? d.toISOString().replace(/\.\d{3}Z$/, 'Z') : null);

const decimal = (n: number) => (Number.isInteger(n) ? n.toFixed(1) : String(Number(n.toFixed(2))));

const encodeCursor = (id: number, value: string | number) => Buffer.from(JSON.stringify({ last_id: id, last_value: value })).toString('base64');

function decodeCursor(cursor: string): { last_id: number; last_value: string | number } {
  try {
    const c = JSON.parse(Buffer.from(cursor, 'base64').toString('utf8'));
    if (typeof c.last_id === 'number') return c;
  } catch {
    // fall through
  }
  throw new GraphQLError(`Invalid cursor for current pagination sort.`, { extensions: { code: 'BAD_REQUEST' } });
}

/**
 * A Relay connection over `items`, ordered by (sortValue, id) ascending (descending with `reverse`), with the
 * platform's rules: one of `first`/`last` is required and at most 250, cursors are opaque (base64 of
 * `{ last_id, last_value }`). While a bulk operation runs, every item is returned.
 */
export function connection<T>(
  items: T[],
  args: PageArgs,
  ctx: ViewContext,
  key: (t: T) => { id: number; value: string | number },
  view: (t: T) => object,
): object {
  const cmp = (a: { id: number; value: string | number }, b: { id: number; value: string | number }) =>
    a.value < b.value ? -1 : a.value > b.value ? 1 : a.id - b.id;
  let list = [...items].sort((a, b) => cmp(key(a), key(b)));
  if (args.reverse) list.reverse();
  const dir = args.reverse ? -1 : 1;
  let hasPreviousPage = false;
  let hasNextPage = false;
  if (!ctx.bulk) {
    if (args.first == null && args.last == null) throw new GraphQLError('you must provide one of first or last');
    for (const n of [args.first, args.last]) {
      if (n != null && (n < 0 || n > 250)) throw new GraphQLError('The first and last arguments must be between 0 and 250.');
    }
    if (args.after) {
      const c = decodeCursor(args.after);
      const before = list.length;
      list = list.filter((t) => dir * cmp(key(t), { id: c.last_id, value: c.last_value }) > 0);
      hasPreviousPage = list.length < before;
    }
    if (args.before) {
      const c = decodeCursor(args.before);
      const before = list.length;
      list = list.filter((t) => dir * cmp(key(t), { id: c.last_id, value: c.last_value }) < 0);
      hasNextPage = list.length < before;
    }
    if (args.first != null && list.length > args.first) {
      list = list.slice(0, args.first);
      hasNextPage = true;
    }
    if (args.last != null && list.length > args.last) {
      list = list.slice(list.length - args.last);
      hasPreviousPage = true;
    }
  }
  const edges = list.map((t) => {
    const k = key(t);
    return { cursor: encodeCursor(k.id, k.value), node: view(t) };
  });
  return {
    edges,
    nodes: edges.map((e) => e.node),
    pageInfo: { hasNextPage, hasPreviousPage, startCursor: edges[0]?.cursor ?? null, endCursor: edges.at(-1)?.cursor ?? null },
  };
}

export const emptyConnection = (args: PageArgs, ctx: ViewContext) => connection([], args, ctx, () => ({ id: 0, value: 0 }), () => ({}));

export function contractView(c: Contract): object {
  return {
    __typename: 'SubscriptionContract',
    id: c.gid,
    status: c.status,
    nextBillingDate: dt(c.nextBillingDate),
    createdAt: dt(c.createdAt),
    updatedAt: dt(c.updatedAt),
    revisionId: c.revisionId,
    currencyCode: c.currencyCode,
    lastPaymentStatus: c.lastPaymentStatus,
    lastBillingAttemptErrorType: c.lastBillingAttemptErrorType,
    note: c.note,
    app: null,
    appAdminUrl: null,
    billingPolicy: { ...c.billingPolicy, anchors: [] },
    deliveryPolicy: { ...c.deliveryPolicy, anchors: [] },
    deliveryPrice: c.deliveryPrice,
    customAttributes: [],
    customer: customerView(c.customer),
    customerPaymentMethod: null,
    deliveryMethod: shippingMethodView(c.deliveryMethod),
    lineCount: c.lines.length,
    linesCount: { count: c.lines.length, precision: 'EXACT' },
    lines: (args: PageArgs, ctx: ViewContext) => {
      const allocated = allocations(c.lines, contractPricing(c.discounts));
      return connection(c.lines, args, ctx, (l) => ({ id: l.id, value: l.id }), (l) => lineView(l, allocated.get(l.id)));
    },
    discounts: (args: PageArgs, ctx: ViewContext) => connection(c.discounts, args, ctx, (d) => ({ id: d.id, value: d.id }), manualDiscountView),
    orders: emptyConnection,
    billingAttempts: emptyConnection,
    originOrder:
      c.originOrderId === null
        ? null
        : { __typename: 'Order', id: gid('Order', c.originOrderId), legacyResourceId: String(c.originOrderId), name: `#${c.originOrderId}` },
  };
}

/** A line; `allocated`: what each discount takes off it (SubscriptionDiscountAllocation). */
export function lineView(l: ContractLine, allocated: { amount: { amount: string; currencyCode: string }; discount: object }[] = []): object {
  return {
    __typename: 'SubscriptionLine',
    id: gid('SubscriptionLine', l.id),
    title: l.title,
    variantId: l.variantId === null ? null : gid('ProductVariant', l.variantId),
    productId: l.productId === null ? null : gid('Product', l.productId),
    sku: l.sku,
    variantTitle: l.variantTitle,
    quantity: l.quantity,
    currentPrice: l.currentPrice,
    lineDiscountedPrice: { amount: decimal(Number(l.currentPrice.amount) * l.quantity - allocated.reduce((n, a) => n + Number(a.amount.amount), 0)), currencyCode: l.currentPrice.currencyCode },
    requiresShipping: true,
    taxable: true,
    customAttributes: [],
    discountAllocations: allocated.map((a) => ({ __typename: 'SubscriptionDiscountAllocation', ...a })),
    sellingPlanId: null,
    sellingPlanName: null,
    pricingPolicy: null,
    variantImage: null,
    concatenatedOriginContract: null,
  };
}

export function customerView(c: Customer): object {
  const displayName = [c.firstName, c.lastName].filter(Boolean).join(' ') || c.email || `Customer ${c.id}`;
  return {
    __typename: 'Customer',
    id: gid('Customer', c.id),
    legacyResourceId: String(c.id),
    email: c.email,
    phone: c.phone,
    firstName: c.firstName,
    lastName: c.lastName,
    displayName,
    defaultEmailAddress: c.email
      ? { emailAddress: c.email, validFormat: true, marketingState: 'NOT_SUBSCRIBED', openTrackingLevel: 'UNKNOWN', marketingOptInLevel: null, marketingUpdatedAt: null, sourceLocation: null }
      : null,
    defaultPhoneNumber: null,
    note: null,
    tags: [],
    state: 'ENABLED',
    verifiedEmail: true,
    taxExempt: false,
    locale: 'en',
    subscriptionContracts: (args: PageArgs, ctx: ViewContext) =>
      connection(ctx.contractsOfCustomer(c.id), args, ctx, (k) => ({ id: k.id, value: k.id }), contractView),
  };
}

export function billingCycleView(cycle: BillingCycle): object {
  return {
    __typename: 'SubscriptionBillingCycle',
    billingAttemptExpectedDate: dt(cycle.startAt),
    cycleStartAt: dt(cycle.startAt),
    cycleEndAt: dt(cycle.endAt),
    cycleIndex: cycle.index,
    skipped: cycle.skipped,
    edited: false,
    editedContract: null,
    status: cycle.status,
    sourceContract: contractView(cycle.contract),
    billingAttempts: emptyConnection,
  };
}

export function appSubscriptionView(s: AppSubscription): object {
  return {
    __typename: 'AppSubscription',
    id: gid('AppSubscription', s.id),
    name: s.name,
    status: s.status,
    test: s.test,
    returnUrl: s.returnUrl,
    trialDays: s.trialDays,
    createdAt: dt(s.createdAt),
    currentPeriodEnd: dt(s.currentPeriodEnd),
    lineItems: s.lineItems.map((li) => ({
      id: gid('AppSubscriptionLineItem', `${li.id}?v=1&index=0`),
      plan: {
        pricingDetails:
          li.plan.kind === 'recurring'
            ? { __typename: 'AppRecurringPricing', price: li.plan.price, interval: li.plan.interval, discount: null, planHandle: null }
            : {
                __typename: 'AppUsagePricing',
                cappedAmount: li.plan.cappedAmount,
                balanceUsed: { amount: '0.0', currencyCode: li.plan.cappedAmount.currencyCode },
                interval: li.plan.interval,
                terms: li.plan.terms,
              },
      },
      usageRecords: emptyConnection,
    })),
  };
}

export function webhookSubscriptionView(w: WebhookSubscription): object {
  return {
    __typename: 'WebhookSubscription',
    id: gid('WebhookSubscription', w.id),
    legacyResourceId: String(w.id),
    topic: w.topic,
    uri: w.uri,
    callbackUrl: w.uri,
    endpoint: { __typename: 'WebhookHttpEndpoint', callbackUrl: w.uri },
    format: w.format,
    filter: w.filter,
    includeFields: w.includeFields,
    name: w.name,
    apiVersion: { handle: ADMIN_API_VERSION, displayName: ADMIN_API_VERSION, supported: true },
    createdAt: dt(w.createdAt),
    updatedAt: dt(w.updatedAt),
  };
}

export function bulkOperationView(b: BulkOperation): object {
  return {
    __typename: 'BulkOperation',
    id: gid('BulkOperation', b.id),
    status: b.status,
    type: b.type,
    query: b.query,
    createdAt: dt(b.createdAt),
    completedAt: dt(b.completedAt),
    errorCode: b.errorCode,
    url: b.url,
    partialDataUrl: null,
    objectCount: String(b.objectCount),
    rootObjectCount: String(b.rootObjectCount),
    fileSize: b.fileSize === null ? null : String(b.fileSize),
  };
}
