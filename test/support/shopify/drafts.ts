import { GraphQLError } from 'graphql';
import { allocations, decimalOf, draftDiscountView, draftPricing, shippingMethodView } from './pricing.js';
import type { ResolverContext } from './resolverContext.js';
import { gid, parseGid, toSecond, type Address, type Contract, type ContractLine, type Draft, type Shop } from './store.js';
import { connection, contractView, customerView, dt, emptyConnection, lineView, type PageArgs, type ViewContext } from './views.js';

/**
 * The draft flow of contract edits: subscriptionContractUpdate makes a draft (a copy of the contract's lines,
 * discounts, policies, delivery method and price, next billing date), the draft mutations change only the draft, and
 * subscriptionDraftCommit applies it to the contract (a new revision, subscription_contracts/update). A draft never
 * committed changes nothing. Every mutation answers `userErrors` (SubscriptionDraftUserError: field, message, code)
 * and changes nothing when it has one. The platform's exact wording is not published: the messages are the
 * stand-in's, the codes the schema's SubscriptionDraftErrorCode.
 */

type UserError = { field: string[] | null; message: string; code: string };
const fail = (field: string[] | null, message: string, code = 'INVALID') => ({ userErrors: [{ field, message, code } satisfies UserError] });

/** Input fields the stand-in models; any other is an explicit error (nothing is silently ignored). */
const DRAFT_INPUT = new Set(['billingPolicy', 'deliveryPolicy', 'nextBillingDate', 'deliveryPrice', 'note', 'deliveryMethod']);
const LINE_INPUT = new Set(['productVariantId', 'quantity', 'currentPrice']);
const ADDRESS_INPUT = new Set(['firstName', 'lastName', 'address1', 'address2', 'city', 'provinceCode', 'zip', 'countryCode', 'phone', 'company']);

function unsupported(input: Record<string, unknown>, allowed: Set<string>, type: string): void {
  for (const [k, v] of Object.entries(input)) {
    if (v !== undefined && v !== null && !allowed.has(k)) throw new GraphQLError(`The stand-in does not model ${type}.${k}`, { extensions: { code: 'STAND_IN_UNSUPPORTED' } });
  }
}

const copyLine = (l: ContractLine): ContractLine => ({ ...l, currentPrice: { ...l.currentPrice } });
const lineTitle = (productTitle: string, title: string) => (title === 'Default Title' ? productTitle : `${productTitle} - ${title}`);

/** A Decimal as the platform writes it back ("19.90" → "19.9", "50" → "50.0"). */
function decimal(value: string): string {
  const [whole, frac = ''] = value.split('.');
  return decimalOf(Number(whole) * 100 + Number(frac.slice(0, 2).padEnd(2, '0')));
}

export function draftView(shop: Shop, d: Draft): object {
  const c = shop.contracts.get(d.contractId)!;
  const allocated = allocations(d.lines, draftPricing(d.discounts));
  const lines = (list: ContractLine[]) => (args: PageArgs, ctx: ViewContext) =>
    connection(list, args, ctx, (l) => ({ id: l.id, value: l.id }), (l) => lineView(l, allocated.get(l.id) ?? []));
  const discountKey = (x: Draft['discounts'][number]) => ({ id: x.kind === 'existing' ? x.discount.id : x.id, value: x.kind === 'existing' ? x.discount.id : x.id });
  const discounts = (list: Draft['discounts']) => (args: PageArgs, ctx: ViewContext) => connection(list, args, ctx, discountKey, draftDiscountView);
  const removed = c.discounts.filter((x) => !d.discounts.some((y) => y.kind === 'existing' && y.discount.id === x.id)).map((discount) => ({ kind: 'existing' as const, discount }));
  return {
    __typename: 'SubscriptionDraft',
    id: gid('SubscriptionDraft', d.id),
    status: c.status,
    currencyCode: c.currencyCode,
    customer: customerView(c.customer),
    customerPaymentMethod: null,
    customAttributes: [],
    billingPolicy: { ...d.billingPolicy, anchors: [] },
    deliveryPolicy: { ...d.deliveryPolicy, anchors: [] },
    deliveryPrice: d.deliveryPrice,
    deliveryMethod: shippingMethodView(d.deliveryMethod),
    deliveryOptions: null,
    shippingOptions: null,
    nextBillingDate: dt(d.nextBillingDate),
    note: d.note,
    originalContract: contractView(c),
    billingCycle: null,
    concatenatedBillingCycles: emptyConnection,
    lines: lines(d.lines),
    linesAdded: lines(d.lines.filter((l) => !c.lines.some((x) => x.id === l.id))),
    linesRemoved: lines(c.lines.filter((l) => !d.lines.some((x) => x.id === l.id))),
    discounts: discounts(d.discounts),
    discountsAdded: discounts(d.discounts.filter((x) => x.kind === 'code')),
    discountsRemoved: discounts(removed),
    discountsUpdated: emptyConnection,
  };
}

export function draftMutations(ctx: ResolverContext): Record<string, unknown> {
  const { shop, store, hooks } = ctx;

  /** The open draft an argument names, or the userError the platform would answer. */
  const open = (draftId: string): { draft: Draft } | ReturnType<typeof fail> => {
    const g = parseGid(draftId);
    const draft = g?.type === 'SubscriptionDraft' ? shop.drafts.get(g.id) : undefined;
    if (!draft) return fail(['draftId'], 'Subscription draft does not exist');
    if (draft.committed) return fail(['draftId'], 'Subscription draft has already been committed', 'COMMITTED');
    return { draft };
  };
  /** Runs a draft mutation: an injected userError first, then the draft, then the change. */
  const draftMutation =
    <A extends { draftId: string }>(name: string, change: (draft: Draft, args: A) => Record<string, unknown>) =>
    (args: A) => {
      const injected = hooks.takeUserError(shop, name);
      if (injected) return { userErrors: [{ field: injected.field ?? null, message: injected.message, code: injected.code ?? 'INVALID' }] };
      const found = open(args.draftId);
      if (!('draft' in found)) return found;
      const answer = change(found.draft, args);
      if (answer.userErrors) return { draft: null, ...answer };
      return { draft: draftView(shop, found.draft), userErrors: [], ...answer };
    };
  const variantOf = (id: string) => {
    const g = parseGid(id);
    return g?.type === 'ProductVariant' ? shop.variants.get(g.id) : undefined;
  };
  const lineOf = (draft: Draft, lineId: string) => {
    const g = parseGid(lineId);
    return g?.type === 'SubscriptionLine' ? draft.lines.find((l) => l.id === g.id) : undefined;
  };

  return {
    subscriptionContractUpdate: ({ contractId }: { contractId: string }) => {
      const injected = hooks.takeUserError(shop, 'subscriptionContractUpdate');
      if (injected) return { draft: null, userErrors: [{ field: injected.field ?? null, message: injected.message, code: injected.code ?? 'INVALID' }] };
      const g = parseGid(contractId);
      const c = g?.type === 'SubscriptionContract' ? shop.contracts.get(g.id) : undefined;
      if (!c) return { draft: null, ...fail(['contractId'], 'Subscription contract does not exist') };
      if (c.status === 'CANCELLED' || c.status === 'EXPIRED') return { draft: null, ...fail(['contractId'], `Cannot update a ${c.status.toLowerCase()} contract`) };
      const draft: Draft = {
        id: store.nextId(),
        contractId: c.id,
        baseRevision: c.revisionId,
        committed: false,
        lines: c.lines.map(copyLine),
        discounts: c.discounts.map((discount) => ({ kind: 'existing', discount })),
        billingPolicy: { ...c.billingPolicy },
        deliveryPolicy: { ...c.deliveryPolicy },
        deliveryMethod: c.deliveryMethod ? { address: { ...c.deliveryMethod.address } } : null,
        deliveryPrice: { ...c.deliveryPrice },
        nextBillingDate: c.nextBillingDate,
        note: c.note,
      };
      shop.drafts.set(draft.id, draft);
      return { draft: draftView(shop, draft), userErrors: [] };
    },

    subscriptionDraftLineAdd: draftMutation('subscriptionDraftLineAdd', (draft, { input }: { draftId: string; input: Record<string, any> }) => {
      unsupported(input, LINE_INPUT, 'SubscriptionLineInput');
      const v = variantOf(input.productVariantId);
      if (!v) return fail(['input', 'productVariantId'], 'Product variant does not exist');
      if (input.quantity < 1) return fail(['input', 'quantity'], 'Quantity must be greater than or equal to 1', 'GREATER_THAN_OR_EQUAL_TO');
      const c = shop.contracts.get(draft.contractId)!;
      const line: ContractLine = {
        id: store.nextId(),
        title: lineTitle(v.productTitle, v.title),
        variantId: v.id,
        productId: v.productId,
        sku: v.sku,
        variantTitle: v.title,
        quantity: input.quantity,
        currentPrice: { amount: decimal(String(input.currentPrice)), currencyCode: c.currencyCode },
      };
      draft.lines.push(line);
      return { lineAdded: lineView(line) };
    }),

    subscriptionDraftLineUpdate: draftMutation('subscriptionDraftLineUpdate', (draft, { lineId, input }: { draftId: string; lineId: string; input: Record<string, any> }) => {
      unsupported(input, LINE_INPUT, 'SubscriptionLineUpdateInput');
      const line = lineOf(draft, lineId);
      if (!line) return fail(['lineId'], 'Subscription line does not exist');
      const v = input.productVariantId == null ? undefined : variantOf(input.productVariantId);
      if (input.productVariantId != null && !v) return fail(['input', 'productVariantId'], 'Product variant does not exist');
      if (input.quantity != null && input.quantity < 1) return fail(['input', 'quantity'], 'Quantity must be greater than or equal to 1', 'GREATER_THAN_OR_EQUAL_TO');
      if (v) Object.assign(line, { variantId: v.id, productId: v.productId, sku: v.sku, variantTitle: v.title, title: lineTitle(v.productTitle, v.title) });
      // A new variant keeps the line's price unless one is given (the app prices the line).
      if (input.currentPrice != null) line.currentPrice = { ...line.currentPrice, amount: decimal(String(input.currentPrice)) };
      if (input.quantity != null) line.quantity = input.quantity;
      return { lineUpdated: lineView(line) };
    }),

    subscriptionDraftLineRemove: draftMutation('subscriptionDraftLineRemove', (draft, { lineId }: { draftId: string; lineId: string }) => {
      const line = lineOf(draft, lineId);
      if (!line) return fail(['lineId'], 'Subscription line does not exist');
      draft.lines = draft.lines.filter((l) => l !== line);
      return { lineRemoved: lineView(line), discountsUpdated: [] };
    }),

    subscriptionDraftUpdate: draftMutation('subscriptionDraftUpdate', (draft, { input }: { draftId: string; input: Record<string, any> }) => {
      unsupported(input, DRAFT_INPUT, 'SubscriptionDraftInput');
      const billing = input.billingPolicy ?? draft.billingPolicy;
      const delivery = input.deliveryPolicy ?? draft.deliveryPolicy;
      for (const [name, p] of [['billingPolicy', billing], ['deliveryPolicy', delivery]] as const) {
        if (p.anchors?.length) throw new GraphQLError(`The stand-in does not model ${name}.anchors`, { extensions: { code: 'STAND_IN_UNSUPPORTED' } });
        if (p.intervalCount < 1) return fail(['input', name, 'intervalCount'], 'Interval count must be greater than or equal to 1', 'GREATER_THAN_OR_EQUAL_TO');
      }
      // Delivery is at least as often as billing: billing every N intervals delivers every M with N a multiple of M.
      if (billing.interval === delivery.interval && billing.intervalCount % delivery.intervalCount !== 0) {
        return fail(['input', 'deliveryPolicy'], 'Delivery policy must be a multiple of the billing policy', 'DELIVERY_MUST_BE_MULTIPLE_OF_BILLING');
      }
      let address: Address | undefined;
      if (input.deliveryMethod) {
        const { shipping, ...other } = input.deliveryMethod;
        unsupported(other, new Set(), 'SubscriptionDeliveryMethodInput');
        if (!shipping?.address) return fail(['input', 'deliveryMethod'], 'Delivery method requires a shipping address', 'DELIVERY_METHOD_REQUIRED');
        unsupported(shipping.address, ADDRESS_INPUT, 'MailingAddressInput');
        const a = shipping.address;
        address = { firstName: a.firstName ?? null, lastName: a.lastName ?? null, address1: a.address1 ?? null, address2: a.address2 ?? null, city: a.city ?? null, provinceCode: a.provinceCode ?? null, zip: a.zip ?? null, countryCode: a.countryCode ?? null, phone: a.phone ?? null };
        if (!address.address1 || !address.countryCode) return fail(['input', 'deliveryMethod', 'shipping', 'address'], 'Address is incomplete', 'PRESENCE');
      }
      if (input.billingPolicy) draft.billingPolicy = { ...draft.billingPolicy, interval: billing.interval, intervalCount: billing.intervalCount, minCycles: billing.minCycles ?? draft.billingPolicy.minCycles, maxCycles: billing.maxCycles ?? draft.billingPolicy.maxCycles };
      if (input.deliveryPolicy) draft.deliveryPolicy = { interval: delivery.interval, intervalCount: delivery.intervalCount };
      if (input.nextBillingDate != null) draft.nextBillingDate = toSecond(new Date(input.nextBillingDate));
      if (input.deliveryPrice != null) draft.deliveryPrice = { ...draft.deliveryPrice, amount: decimal(String(input.deliveryPrice)) };
      if (input.note !== undefined) draft.note = input.note;
      if (address) draft.deliveryMethod = { address };
      return {};
    }),

    subscriptionDraftDiscountCodeApply: draftMutation('subscriptionDraftDiscountCodeApply', (draft, { redeemCode }: { draftId: string; redeemCode: string }) => {
      const code = shop.discountCodes.get(redeemCode.trim().toLowerCase());
      if (!code) return fail(['redeemCode'], 'Discount code is invalid');
      const taken = draft.discounts.some((d) => (d.kind === 'code' ? d.redeemCode : d.discount.type === 'CODE_DISCOUNT' ? d.discount.title : '').toLowerCase() === code.code.toLowerCase());
      if (taken) return fail(['redeemCode'], 'Discount code has already been applied');
      // An inactive code is applied with its reason, as the platform reports a code it cannot honour.
      const applied = { kind: 'code' as const, id: store.nextId(), redeemCode: code.code, value: code.value, rejectionReason: code.active ? null : 'CURRENTLY_INACTIVE' };
      draft.discounts.push(applied);
      return { appliedDiscount: draftDiscountView(applied) };
    }),

    subscriptionDraftDiscountRemove: draftMutation('subscriptionDraftDiscountRemove', (draft, { discountId }: { draftId: string; discountId: string }) => {
      const g = parseGid(discountId);
      const found = g && (g.type === 'SubscriptionManualDiscount' || g.type === 'SubscriptionAppliedCodeDiscount') ? draft.discounts.find((d) => (d.kind === 'existing' ? d.discount.id : d.id) === g.id) : undefined;
      if (!found) return fail(['discountId'], 'Discount does not exist');
      draft.discounts = draft.discounts.filter((d) => d !== found);
      return { discountRemoved: draftDiscountView(found) };
    }),

    subscriptionDraftCommit: ({ draftId }: { draftId: string }) => {
      const injected = hooks.takeUserError(shop, 'subscriptionDraftCommit');
      if (injected) return { contract: null, userErrors: [{ field: injected.field ?? null, message: injected.message, code: injected.code ?? 'INVALID' }] };
      const found = open(draftId);
      if (!('draft' in found)) return { contract: null, ...found };
      const d = found.draft;
      const c = shop.contracts.get(d.contractId)!;
      if (c.revisionId !== d.baseRevision) return { contract: null, ...fail(['draftId'], 'The contract has changed since the draft was made', 'STALE_CONTRACT') };
      if (!d.lines.length) return { contract: null, ...fail(['draftId'], 'A contract needs at least one line', 'INVALID_LINES') };
      commit(c, d);
      store.touch(c);
      hooks.contractEvent(shop, 'subscription_contracts/update', c);
      return { contract: contractView(c), userErrors: [] };
    },
  };
}

/** The draft applied to its contract; a code applied in the draft becomes the contract's CODE_DISCOUNT. */
function commit(c: Contract, d: Draft): void {
  d.committed = true;
  c.lines = d.lines.map(copyLine);
  c.discounts = d.discounts.flatMap((x) =>
    x.kind === 'existing' ? [x.discount] : x.rejectionReason ? [] : [{ id: x.id, title: x.redeemCode, type: 'CODE_DISCOUNT' as const, value: x.value, recurringCycleLimit: null, usageCount: 0 }],
  );
  c.billingPolicy = { ...d.billingPolicy };
  c.deliveryPolicy = { ...d.deliveryPolicy };
  c.deliveryMethod = d.deliveryMethod;
  c.deliveryPrice = d.deliveryPrice;
  c.nextBillingDate = d.nextBillingDate;
  c.note = d.note;
}
