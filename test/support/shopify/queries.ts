import { GraphQLError } from 'graphql';
import { billingCycle, cycleIndexAt, cyclesInRange, type BillingCycle } from './cycles.js';
import type { ResolverContext } from './resolverContext.js';
import { gid, parseGid, type Contract } from './store.js';
import {
  appSubscriptionView,
  billingCycleView,
  bulkOperationView,
  connection,
  contractView,
  customerView,
  webhookSubscriptionView,
  type PageArgs,
} from './views.js';

type Term = { negate: boolean; field: string; op: '=' | '>' | '>=' | '<' | '<='; value: string };

/**
 * The platform's search syntax, as far as the stand-in reads it: `field:value`, `field:>value` (also >=, <, <=),
 * values bare or in single or double quotes, `-field:value` to negate; terms joined by spaces or AND all apply.
 */
export function parseSearch(query: string | null | undefined): Term[] {
  const terms: Term[] = [];
  const re = /(-)?([a-z_]+):(>=|<=|>|<)?(?:'([^']*)'|"([^"]*)"|(\S+))/gi;
  for (const m of (query ?? '').matchAll(re)) {
    terms.push({ negate: !!m[1], field: m[2].toLowerCase(), op: (m[3] ?? '=') as Term['op'], value: m[4] ?? m[5] ?? m[6] });
  }
  return terms;
}

function compare(a: number, op: Term['op'], b: number): boolean {
  return op === '=' ? a === b : op === '>' ? a > b : op === '>=' ? a >= b : op === '<' ? a < b : a <= b;
}

/** Filters contracts by updated_at, created_at, status and id; other fields are ignored (as unknown ones are). */
export function matchesSearch(c: Contract, terms: Term[]): boolean {
  return terms.every((t) => {
    let hit: boolean;
    if (t.field === 'updated_at' || t.field === 'created_at') {
      const at = Date.parse(t.value);
      if (Number.isNaN(at)) return true;
      hit = compare((t.field === 'updated_at' ? c.updatedAt : c.createdAt).getTime(), t.op, at);
    } else if (t.field === 'status') hit = c.status === t.value.toUpperCase();
    else if (t.field === 'id') hit = compare(c.id, t.op, Number(parseGid(t.value)?.id ?? t.value));
    else return true;
    return t.negate ? !hit : hit;
  });
}

const CONTRACT_SORT: Record<string, (c: Contract) => string | number> = {
  ID: (c) => c.id,
  CREATED_AT: (c) => c.createdAt.getTime(),
  UPDATED_AT: (c) => c.updatedAt.getTime(),
  STATUS: (c) => c.status,
};

function contractById(ctx: ResolverContext, id: string): Contract | undefined {
  const g = parseGid(id);
  if (!g) throw new GraphQLError(`Invalid global id '${id}'`);
  return g.type === 'SubscriptionContract' ? ctx.shop.contracts.get(g.id) : undefined;
}

export function installationView(ctx: ResolverContext): object {
  const { shop, hooks } = ctx;
  return {
    __typename: 'AppInstallation',
    id: gid('AppInstallation', shop.id),
    activeSubscriptions: shop.appSubscriptions.filter((s) => s.status === 'ACTIVE').map(appSubscriptionView),
    allSubscriptions: (args: PageArgs) =>
      connection(shop.appSubscriptions, args, ctx, (s) => ({ id: s.id, value: s.createdAt.getTime() }), appSubscriptionView),
    accessScopes: hooks.scopes.split(',').map((handle) => ({ handle, description: handle })),
    launchUrl: `https://${shop.domain}/admin/apps/${hooks.appKey}`,
    uninstallUrl: null,
    app: {
      __typename: 'App',
      id: gid('App', 1),
      apiKey: hooks.appKey,
      title: 'svc',
      handle: 'svc',
      embedded: true,
      webhookApiVersion: hooks.apiVersion,
    },
  };
}

/** Lookups by global id, for node/nodes. */
function nodeById(ctx: ResolverContext, id: string): object | null {
  const g = parseGid(id);
  if (!g) throw new GraphQLError(`Invalid global id '${id}'`);
  const { shop } = ctx;
  switch (g.type) {
    case 'SubscriptionContract': {
      const c = shop.contracts.get(g.id);
      return c ? contractView(c) : null;
    }
    case 'BulkOperation': {
      const b = shop.bulkOperations.find((x) => x.id === g.id);
      return b ? bulkOperationView(b) : null;
    }
    case 'AppSubscription': {
      const s = shop.appSubscriptions.find((x) => x.id === g.id);
      return s ? appSubscriptionView(s) : null;
    }
    case 'WebhookSubscription': {
      const w = shop.webhookSubscriptions.find((x) => x.id === g.id);
      return w ? webhookSubscriptionView(w) : null;
    }
    case 'SubscriptionBillingAttempt':
      return ctx.hooks.billing.find(shop, g.id);
    case 'Customer': {
      const c = [...shop.contracts.values()].find((x) => x.customer.id === g.id);
      return c ? customerView(c.customer) : null;
    }
    default:
      return null;
  }
}

export function queryRoot(ctx: ResolverContext): Record<string, unknown> {
  const { shop } = ctx;
  return {
    subscriptionContracts: (args: PageArgs & { query?: string; sortKey?: string }) => {
      const terms = parseSearch(args.query);
      const sort = CONTRACT_SORT[args.sortKey ?? 'ID'] ?? CONTRACT_SORT.ID;
      const items = [...shop.contracts.values()].filter((c) => matchesSearch(c, terms));
      return connection(items, args, ctx, (c) => ({ id: c.id, value: sort(c) }), contractView);
    },
    subscriptionContract: ({ id }: { id: string }) => {
      const c = contractById(ctx, id);
      return c ? contractView(c) : null;
    },
    customer: ({ id }: { id: string }) => (parseGid(id)?.type === 'Customer' ? nodeById(ctx, id) : null),
    currentAppInstallation: () => installationView(ctx),
    appInstallation: () => installationView(ctx),
    shop: () => ({
      __typename: 'Shop',
      id: gid('Shop', shop.id),
      name: shop.name,
      email: shop.email,
      contactEmail: shop.email,
      myshopifyDomain: shop.domain,
      currencyCode: shop.currencyCode,
      ianaTimezone: 'UTC',
      url: `https://${shop.domain}`,
    }),
    webhookSubscriptions: (args: PageArgs & { topics?: string[]; uri?: string; callbackUrl?: string; format?: string }) => {
      const items = shop.webhookSubscriptions.filter(
        (w) =>
          (!args.topics?.length || args.topics.includes(w.topic)) &&
          (!args.uri || w.uri === args.uri) &&
          (!args.callbackUrl || w.uri === args.callbackUrl) &&
          (!args.format || w.format === args.format),
      );
      return connection(items, args, ctx, (w) => ({ id: w.id, value: w.id }), webhookSubscriptionView);
    },
    webhookSubscription: ({ id }: { id: string }) => nodeById(ctx, id),
    currentBulkOperation: ({ type }: { type?: string }) => {
      const ops = shop.bulkOperations.filter((b) => b.type === (type ?? 'QUERY'));
      return ops.length ? bulkOperationView(ops[ops.length - 1]) : null;
    },
    bulkOperation: ({ id }: { id: string }) => nodeById(ctx, id),
    bulkOperations: (args: PageArgs) =>
      connection(shop.bulkOperations, args, ctx, (b) => ({ id: b.id, value: b.id }), bulkOperationView),
    subscriptionBillingAttempt: ({ id }: { id: string }) => (parseGid(id)?.type === 'SubscriptionBillingAttempt' ? nodeById(ctx, id) : null),
    node: ({ id }: { id: string }) => nodeById(ctx, id),
    nodes: ({ ids }: { ids: string[] }) => ids.map((id) => nodeById(ctx, id)),
    subscriptionBillingCycle: ({ billingCycleInput }: { billingCycleInput: CycleInput }) => {
      const found = selectCycle(ctx, billingCycleInput);
      return 'cycle' in found ? billingCycleView(found.cycle) : null;
    },
    subscriptionBillingCycles: (
      args: PageArgs & {
        contractId: string;
        billingCyclesDateRangeSelector?: { startDate: string; endDate: string };
        billingCyclesIndexRangeSelector?: { startIndex: number; endIndex: number };
      },
    ) => {
      const c = contractById(ctx, args.contractId);
      if (!c) throw new GraphQLError('Subscription contract does not exist');
      const dates = args.billingCyclesDateRangeSelector;
      const indexes = args.billingCyclesIndexRangeSelector ?? { startIndex: 1, endIndex: cycleIndexAt(c, ctx.now) + 250 };
      const cycles = dates
        ? cyclesInRange(c, ctx.now, { startDate: new Date(dates.startDate), endDate: new Date(dates.endDate) })
        : cyclesInRange(c, ctx.now, indexes);
      return connection(cycles, args, ctx, (x) => ({ id: x.index, value: x.index }), billingCycleView);
    },
  };
}

export type CycleInput = { contractId: string; selector: { date?: string | null; index?: number | null } };

/** Resolves a billing cycle selector (by date: the cycle the date falls in; by index: that cycle). */
export type SelectedCycle = { contract: Contract; cycle: BillingCycle } | { error: string; field: string[] };

export function selectCycle(ctx: ResolverContext, input: CycleInput): SelectedCycle {
  const c = contractById(ctx, input.contractId);
  if (!c) return { error: 'Subscription contract does not exist', field: ['billingCycleInput', 'contractId'] };
  const { date, index } = input.selector;
  if ((date == null) === (index == null)) {
    return { error: 'Select a billing cycle by exactly one of date or index', field: ['billingCycleInput', 'selector'] };
  }
  if (index != null && index < 1) return { error: 'Billing cycle index must be 1 or more', field: ['billingCycleInput', 'selector', 'index'] };
  const i = index ?? cycleIndexAt(c, new Date(date as string));
  return { contract: c, cycle: billingCycle(c, i, ctx.now) };
}

