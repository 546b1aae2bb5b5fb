import { Kind, OperationTypeNode, parse, visit } from 'graphql';
import { billingCycle } from './cycles.js';
import { selectCycle, type CycleInput } from './queries.js';
import type { ResolverContext } from './resolverContext.js';
import { checkDocument } from './schema.js';
import { applyStatus, parseGid, planStatusChange, toSecond, type AppPlan, type StatusAction } from './store.js';
import { appSubscriptionView, billingCycleView, bulkOperationView, contractView, webhookSubscriptionView } from './views.js';

type UserError = { field: string[] | null; message: string; code?: string | null };
const err = (field: string[] | null, message: string, code?: string): UserError => (code ? { field, message, code } : { field, message });

/** `SUBSCRIPTION_CONTRACTS_PAUSE` → `subscription_contracts/pause` (the topic's name in webhooks). */
export function topicName(value: string): string {
  if (value === 'APP_UNINSTALLED') return 'app/uninstalled';
  const i = value.lastIndexOf('_');
  return `${value.slice(0, i)}/${value.slice(i + 1)}`.toLowerCase();
}

const isLoopback = (host: string) => host === 'localhost' || host === '[::1]' || /^127\./.test(host);

export function mutationRoot(ctx: ResolverContext): Record<string, unknown> {
  const { shop, store, hooks } = ctx;

  const statusMutation = (name: string, action: StatusAction) => ({ subscriptionContractId }: { subscriptionContractId: string }) => {
    const injected = hooks.takeUserError(shop, name);
    if (injected) return { contract: null, userErrors: [err(injected.field ?? null, injected.message, injected.code ?? 'INVALID')] };
    const g = parseGid(subscriptionContractId);
    const contract = g?.type === 'SubscriptionContract' ? shop.contracts.get(g.id) : undefined;
    if (!contract) return { contract: null, userErrors: [err(['subscriptionContractId'], 'Subscription contract does not exist', 'INVALID')] };
    const plan = planStatusChange(contract, action);
    if (!plan.ok) return { contract: null, userErrors: [err(['subscriptionContractId'], plan.message, plan.code)] };
    if (plan.changed) {
      applyStatus(store, contract, action);
      hooks.contractEvent(shop, `subscription_contracts/${action}`, contract);
    }
    return { contract: contractView(contract), userErrors: [] };
  };

  const cycleMutation = (name: string, skip: boolean) => ({ billingCycleInput }: { billingCycleInput: CycleInput }) => {
    const injected = hooks.takeUserError(shop, name);
    if (injected) return { billingCycle: null, userErrors: [err(injected.field ?? null, injected.message, injected.code ?? 'INVALID')] };
    const found = selectCycle(ctx, billingCycleInput);
    if (!('cycle' in found)) return { billingCycle: null, userErrors: [err(found.field, found.error, 'INVALID')] };
    const { contract, cycle } = found;
    if (contract.status === 'CANCELLED' || contract.status === 'EXPIRED') {
      return { billingCycle: null, userErrors: [err(['billingCycleInput', 'contractId'], `The contract is ${contract.status.toLowerCase()}`, 'INVALID')] };
    }
    if (cycle.status === 'BILLED') {
      return { billingCycle: null, userErrors: [err(['billingCycleInput', 'selector'], 'The billing cycle has already been billed', 'INVALID')] };
    }
    if (cycle.skipped !== skip) {
      if (skip) contract.skippedCycles.add(cycle.index);
      else contract.skippedCycles.delete(cycle.index);
      const after = billingCycle(contract, cycle.index, ctx.now);
      hooks.cycleEvent(shop, `subscription_billing_cycles/${skip ? 'skip' : 'unskip'}`, after);
      return { billingCycle: billingCycleView(after), userErrors: [] };
    }
    return { billingCycle: billingCycleView(cycle), userErrors: [] };
  };

  return {
    subscriptionContractPause: statusMutation('subscriptionContractPause', 'pause'),
    subscriptionContractActivate: statusMutation('subscriptionContractActivate', 'activate'),
    subscriptionContractCancel: statusMutation('subscriptionContractCancel', 'cancel'),
    subscriptionContractFail: statusMutation('subscriptionContractFail', 'fail'),
    subscriptionContractExpire: statusMutation('subscriptionContractExpire', 'expire'),
    subscriptionBillingCycleSkip: cycleMutation('subscriptionBillingCycleSkip', true),
    subscriptionBillingCycleUnskip: cycleMutation('subscriptionBillingCycleUnskip', false),
    subscriptionBillingAttemptCreate: (args: Parameters<typeof hooks.billing.create>[1]) => hooks.billing.create(ctx, args),

    subscriptionContractSetNextBillingDate: ({ contractId, date }: { contractId: string; date: string }) => {
      const injected = hooks.takeUserError(shop, 'subscriptionContractSetNextBillingDate');
      if (injected) return { contract: null, userErrors: [err(injected.field ?? null, injected.message, injected.code ?? 'INVALID')] };
      const g = parseGid(contractId);
      const contract = g?.type === 'SubscriptionContract' ? shop.contracts.get(g.id) : undefined;
      if (!contract) return { contract: null, userErrors: [err(['contractId'], 'Subscription contract does not exist', 'INVALID')] };
      if (contract.status === 'CANCELLED' || contract.status === 'EXPIRED') {
        return { contract: null, userErrors: [err(['contractId'], `Cannot change the next billing date of a ${contract.status.toLowerCase()} contract`, 'INVALID')] };
      }
      const next = toSecond(new Date(date));
      if (contract.nextBillingDate?.getTime() !== next.getTime()) {
        contract.nextBillingDate = next;
        store.touch(contract);
        if (hooks.webhookOnSetNextBillingDate) hooks.contractEvent(shop, 'subscription_contracts/update', contract);
      }
      return { contract: contractView(contract), userErrors: [] };
    },

    webhookSubscriptionCreate: ({ topic, webhookSubscription: input }: { topic: string; webhookSubscription: Record<string, unknown> }) => {
      const uri = (input.uri ?? input.callbackUrl) as string | undefined;
      const field = ['webhookSubscription', input.uri !== undefined ? 'uri' : 'callbackUrl'];
      if (!uri) return { webhookSubscription: null, userErrors: [err(field, "Address can't be blank")] };
      let url: URL;
      try {
        url = new URL(uri);
      } catch {
        return { webhookSubscription: null, userErrors: [err(field, 'Address is invalid')] };
      }
      if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url.hostname))) {
        return { webhookSubscription: null, userErrors: [err(field, `Address protocol ${url.protocol}// is not supported`)] };
      }
      if (shop.webhookSubscriptions.some((w) => w.topic === topic && w.uri === uri)) {
        return { webhookSubscription: null, userErrors: [err(field, 'Address for this topic has already been taken')] };
      }
      const now = store.now();
      const w = {
        id: store.nextId(),
        topic,
        uri,
        format: (input.format as 'JSON' | 'XML') ?? 'JSON',
        filter: (input.filter as string) ?? null,
        includeFields: (input.includeFields as string[]) ?? [],
        name: (input.name as string) ?? null,
        createdAt: now,
        updatedAt: now,
      };
      shop.webhookSubscriptions.push(w);
      return { webhookSubscription: webhookSubscriptionView(w), userErrors: [] };
    },

    webhookSubscriptionDelete: ({ id }: { id: string }) => {
      const i = shop.webhookSubscriptions.findIndex((w) => w.id === parseGid(id)?.id);
      if (i < 0) return { deletedWebhookSubscriptionId: null, userErrors: [err(['id'], 'Webhook subscription does not exist')] };
      shop.webhookSubscriptions.splice(i, 1);
      return { deletedWebhookSubscriptionId: id, userErrors: [] };
    },

    appSubscriptionCreate: (args: { name: string; lineItems: { plan: Record<string, any> }[]; returnUrl: string; test?: boolean; trialDays?: number; replacementBehavior?: string }) => {
      const errors: UserError[] = [];
      if (!args.name.trim()) errors.push(err(['name'], "Name can't be blank"));
      if (args.lineItems.length === 0) errors.push(err(['lineItems'], 'Line items must have at least one plan'));
      const plans: AppPlan[] = [];
      args.lineItems.forEach(({ plan }, i) => {
        const r = plan.appRecurringPricingDetails;
        const u = plan.appUsagePricingDetails;
        if (!!r === !!u) errors.push(err(['lineItems', String(i), 'plan'], 'A plan needs exactly one of appRecurringPricingDetails or appUsagePricingDetails'));
        else if (r && !(Number(r.price.amount) > 0)) errors.push(err(['lineItems', String(i), 'plan', 'appRecurringPricingDetails', 'price'], 'Price must be greater than 0'));
        else if (r) plans.push({ kind: 'recurring', price: { amount: String(r.price.amount), currencyCode: r.price.currencyCode }, interval: r.interval ?? 'EVERY_30_DAYS' });
        else plans.push({ kind: 'usage', cappedAmount: { amount: String(u.cappedAmount.amount), currencyCode: u.cappedAmount.currencyCode }, terms: u.terms, interval: 'EVERY_30_DAYS' });
      });
      if (errors.length) return { appSubscription: null, confirmationUrl: null, userErrors: errors };
      const now = store.now();
      const sub = {
        id: store.nextId(),
        name: args.name,
        status: 'PENDING' as const,
        test: args.test ?? false,
        returnUrl: args.returnUrl,
        trialDays: args.trialDays ?? 0,
        createdAt: now,
        updatedAt: now,
        currentPeriodEnd: null,
        lineItems: plans.map((plan) => ({ id: store.nextId(), plan })),
        replacementBehavior: args.replacementBehavior ?? 'STANDARD',
      };
      shop.appSubscriptions.push(sub);
      return { appSubscription: appSubscriptionView(sub), confirmationUrl: hooks.confirmationUrl(shop, sub), userErrors: [] };
    },

    appSubscriptionCancel: ({ id }: { id: string }) => {
      const sub = shop.appSubscriptions.find((s) => s.id === parseGid(id)?.id);
      if (!sub) return { appSubscription: null, userErrors: [err(['id'], 'Subscription does not exist')] };
      if (sub.status !== 'ACTIVE' && sub.status !== 'PENDING') return { appSubscription: null, userErrors: [err(['id'], `Cannot cancel a subscription that is ${sub.status.toLowerCase()}`)] };
      hooks.setAppSubscriptionStatus(shop, sub, 'CANCELLED');
      return { appSubscription: appSubscriptionView(sub), userErrors: [] };
    },

    bulkOperationRunQuery: ({ query }: { query: string }) => {
      const fail = (message: string, code = 'INVALID') => ({ bulkOperation: null, userErrors: [err(['query'], message, code)] });
      const checked = checkDocument(query);
      if (!checked.document) return fail(`Invalid bulk query: ${checked.errors[0].message}`);
      const ops = checked.document.definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION);
      if (ops.length !== 1 || ops[0].kind !== Kind.OPERATION_DEFINITION || ops[0].operation !== OperationTypeNode.QUERY) {
        return fail('Bulk queries must contain exactly one query operation');
      }
      if (!hasConnection(query)) return fail('Bulk queries must contain at least one connection.');
      const running = shop.bulkOperations.find((b) => b.type === 'QUERY' && (b.status === 'CREATED' || b.status === 'RUNNING'));
      if (running) return fail(`A bulk query operation for this app and shop is already in progress: gid://shopify/BulkOperation/${running.id}.`, 'OPERATION_IN_PROGRESS');
      const op = {
        id: store.nextId(),
        status: 'CREATED' as const,
        type: 'QUERY' as const,
        query,
        createdAt: store.now(),
        completedAt: null,
        errorCode: null,
        url: null,
        objectCount: 0,
        rootObjectCount: 0,
        fileSize: null,
      };
      shop.bulkOperations.push(op);
      const view = bulkOperationView(op);
      hooks.startBulk(shop, op);
      return { bulkOperation: view, userErrors: [] };
    },
  };
}

/** A connection is selected when some field takes `first`/`last` or selects `edges`/`nodes`. */
function hasConnection(query: string): boolean {
  let found = false;
  visit(parse(query), {
    Field(node) {
      if (node.name.value === 'edges' || node.name.value === 'nodes') found = true;
    },
  });
  return found;
}
