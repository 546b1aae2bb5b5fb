import type { Decision } from '../../domain/commands/command.js';
import { editRejected } from '../../domain/commands/edit.js';
import type { EditOperation } from '../../domain/commands/edits/index.js';
import type { Step } from '../../domain/commands/plan.js';
import type { Command } from '../../domain/commands/registry.js';
import type { PlatformState } from '../../domain/commands/sync.js';
import { totalsOf, type ContractState, type Discount, type Line } from '../../domain/contract.js';
import type { ErrorDetail } from '../../domain/errors.js';
import { OutcomeUnknown, ServiceError } from '../../domain/errors.js';
import { currencyDigits, fromUnits, toUnits, type Money } from '../../domain/money.js';
import { isoString, type Interval } from '../../domain/time.js';
import { unreachable } from '../../domain/unreachable.js';
import type { Executed } from '../../services/platform.js';
import type { ShopifyAdmin, ShopRef } from './admin.js';
import { platformUnavailable } from './adminFailures.js';
import { discountGid, lastSegment, lineGid, mirrorFields, toAddress, toDiscount, toLine, variantGid, type PlatformAddress, type PlatformContract, type PlatformDiscount, type PlatformLine } from './contracts.js';
import { PLATFORM_COUNTRY_CODES } from './countryCodes.js';
import { COMMIT_DRAFT, CREATE_DRAFT, draftEditDocument, VARIANT_PRICES, type DraftOperation } from './documents.js';

type EditStep = Step & { command: Extract<Command, { name: 'edit' }> };
type UserError = { field: string[] | null; message: string; code: string | null };
type Allocation = { amount: Money; discount: { __typename: string; id?: string } };
type AppliedCode = { __typename: 'SubscriptionAppliedCodeDiscount'; id: string; redeemCode: string; rejectionReason: string | null };
type DraftAnswer = {
  id: string;
  nextBillingDate: string | null;
  billingPolicy: { interval: string; intervalCount: number };
  deliveryPolicy: { interval: string; intervalCount: number };
  deliveryPrice: Money | null;
  deliveryMethod: { address?: PlatformAddress | null } | null;
  lines: { nodes: (PlatformLine & { discountAllocations: Allocation[] })[] };
  discounts: { nodes: (AppliedCode | ({ __typename: 'SubscriptionManualDiscount' } & PlatformDiscount))[] };
};
type OperationAnswer = {
  userErrors: UserError[];
  lineAdded?: { id: string } | null;
  appliedDiscount?: { id: string; redeemCode: string; rejectionReason: string | null } | null;
  draft?: DraftAnswer | null;
};
/** What the platform named for an operation: the id of the line it added, of the discount a code became. */
type OperationResult = { lineId?: string; discountId?: string };

/**
 * Contract edits on the platform, by its draft flow, in at most three calls: (1) subscriptionContractUpdate makes
 * a draft; (2) one document carries every operation as its draft mutation (aliases, in the edit's order) and reads
 * the draft as it then stands; (3) subscriptionDraftCommit applies it and answers the contract. A preview stops
 * after (2): its draft is never committed, so nothing changes on the platform. A userError of any operation (or a
 * code the platform applied with a rejection reason) is 422 invalid_edit naming that operation, with the platform's
 * message and field, and the draft is not committed. A line added or swapped without a price takes its variant's:
 * those prices are read in one query sent alongside (1), so it costs no extra round trip.
 */
export class ShopifyEdits {
  constructor(readonly admin: ShopifyAdmin) {}

  async execute(shop: ShopRef, gid: string, before: ContractState, step: EditStep, preview: boolean): Promise<Executed> {
    const operations = step.command.input.operations;
    const countries: ErrorDetail[] = [];
    operations.forEach((o, i) => {
      if (o.op === 'set_shipping_address' && !PLATFORM_COUNTRY_CODES.has(o.address.countryCode)) {
        countries.push({ path: `operations.${i}.address.countryCode`, message: `the platform does not know the country code "${o.address.countryCode}"` });
      }
    });
    if (countries.length) throw editRejected(countries);
    const unpriced = [...new Set(operations.flatMap((o) => ((o.op === 'add_line' || o.op === 'swap_variant') && o.price === undefined ? [o.variantId] : [])))];
    const [draftId, prices] = await Promise.all([uncommitted(this.createDraft(shop, gid)), this.variantPrices(shop, unpriced)]);
    const unknown: ErrorDetail[] = [];
    operations.forEach((o, i) => {
      if ((o.op === 'add_line' || o.op === 'swap_variant') && o.price === undefined && !prices.has(o.variantId)) unknown.push({ path: `operations.${i}`, message: `unknown variant "${o.variantId}"` });
    });
    if (unknown.length) throw editRejected(unknown);

    const { document, variables } = draftEditDocument(draftId, operations.map((o) => draftOperation(o, prices)));
    const data = await uncommitted(this.admin.graphql<Record<string, OperationAnswer | null>>(shop, document, variables, HELD));
    const details: ErrorDetail[] = [];
    const results: OperationResult[] = operations.map((o, i) => {
      const answer = data[`op${i}`];
      const error = answer?.userErrors[0];
      const path = `operations.${i}`;
      if (!answer) details.push({ path, message: 'the platform gave no answer for this operation' });
      else if (error) details.push({ path, message: `the platform says ${quote(error.message)}${error.field?.length ? ` (${error.field.join('.')})` : ''}` });
      else if (answer.appliedDiscount?.rejectionReason) {
        details.push({ path, message: `the code ${quote(answer.appliedDiscount.redeemCode)} does not apply to this contract (the platform says ${answer.appliedDiscount.rejectionReason})` });
      }
      return { lineId: answer?.lineAdded ? lastSegment(answer.lineAdded.id) : undefined, discountId: answer?.appliedDiscount ? lastSegment(answer.appliedDiscount.id) : undefined };
    });
    if (details.length) throw editRejected(details);
    const draft = data[`op${operations.length - 1}`]?.draft;
    if (!draft) throw rejected('the answer did not include the draft');

    if (preview) return { decision: corrected(step.decision, operations, results, draftState(step.decision.contract, draft)) };
    const committed = mirrorFields(await this.commit(shop, draftId));
    if (!committed) throw rejected('the committed contract is not one svc can serve');
    const state = editedFields(step.decision.contract, committed.state, operations);
    return { decision: corrected(step.decision, operations, results, state), platform: { state: committed.state, mark: committed.mark } };
  }

  private async createDraft(shop: ShopRef, gid: string): Promise<string> {
    type Created = { subscriptionContractUpdate: { draft: { id: string } | null; userErrors: UserError[] } };
    const answer = (await this.admin.graphql<Created>(shop, CREATE_DRAFT, { id: gid }, HELD)).subscriptionContractUpdate;
    if (answer.userErrors.length || !answer.draft) throw rejected(answer.userErrors[0]?.message ?? 'no draft in the answer');
    return answer.draft.id;
  }

  /** The prices of these variants (by svc's id); a variant the platform does not know is left out. */
  private async variantPrices(shop: ShopRef, ids: string[]): Promise<Map<string, string>> {
    const prices = new Map<string, string>();
    if (!ids.length) return prices;
    type Variants = { nodes: ({ id?: string; price?: string } | null)[] };
    const data = await this.admin.graphql<Variants>(shop, VARIANT_PRICES, { ids: ids.map(variantGid) }, HELD);
    for (const v of data.nodes) if (v?.id && typeof v.price === 'string') prices.set(lastSegment(v.id), v.price);
    return prices;
  }

  private async commit(shop: ShopRef, draftId: string): Promise<PlatformContract> {
    type Committed = { subscriptionDraftCommit: { contract: PlatformContract | null; userErrors: UserError[] } };
    const answer = (await this.admin.graphql<Committed>(shop, COMMIT_DRAFT, { id: draftId }, HELD)).subscriptionDraftCommit;
    if (answer.userErrors.length || !answer.contract) throw rejected(answer.userErrors[0]?.message ?? 'no contract in the answer');
    return answer.contract;
  }
}

/**
 * A draft's mutations change nothing of the contract until it is committed: one whose answer never came left nothing
 * made, unlike the commit (whose OutcomeUnknown stands).
 */
function uncommitted<T>(call: Promise<T>): Promise<T> {
  return call.catch((err: unknown) => {
    throw err instanceof OutcomeUnknown ? platformUnavailable('no answer to a draft’s change') : err;
  });
}

/**
 * One operation as its draft mutation. A swap updates the line's variant in place (SubscriptionLineUpdateInput
 * takes productVariantId: https://shopify.dev/docs/api/admin-graphql/latest/input-objects/SubscriptionLineUpdateInput),
 * so the line keeps its id; a new line needs a price (SubscriptionLineInput.currentPrice is required). Frequency
 * sets billing and delivery together; a discount code is applied by its code.
 */
export function draftOperation(o: EditOperation, prices: Map<string, string>): DraftOperation {
  switch (o.op) {
    case 'set_quantity':
      return { kind: 'lineUpdate', args: { lineId: lineGid(o.lineId), input: { quantity: o.quantity } } };
    case 'set_price':
      return { kind: 'lineUpdate', args: { lineId: lineGid(o.lineId), input: { currentPrice: o.price } } };
    case 'swap_variant':
      return { kind: 'lineUpdate', args: { lineId: lineGid(o.lineId), input: { productVariantId: variantGid(o.variantId), currentPrice: o.price ?? prices.get(o.variantId) } } };
    case 'add_line':
      return { kind: 'lineAdd', args: { input: { productVariantId: variantGid(o.variantId), quantity: o.quantity, currentPrice: o.price ?? prices.get(o.variantId) } } };
    case 'remove_line':
      return { kind: 'lineRemove', args: { lineId: lineGid(o.lineId) } };
    case 'set_frequency': {
      const policy = { interval: o.interval, intervalCount: o.intervalCount };
      return { kind: 'update', args: { input: { billingPolicy: policy, deliveryPolicy: policy, ...(o.nextBillingDate ? { nextBillingDate: o.nextBillingDate } : {}) } } };
    }
    case 'set_shipping_address': {
      const a = o.address;
      const address = { firstName: a.firstName, lastName: a.lastName, address1: a.address1, address2: a.address2, city: a.city, provinceCode: a.provinceCode, zip: a.zip, countryCode: a.countryCode, phone: a.phone };
      return { kind: 'update', args: { input: { deliveryMethod: { shipping: { address: Object.fromEntries(Object.entries(address).filter(([, v]) => v !== undefined)) } } } } };
    }
    case 'apply_discount_code':
      return { kind: 'discountCodeApply', args: { redeemCode: o.code.trim() } };
    case 'remove_discount':
      return { kind: 'discountRemove', args: { discountId: discountGid(o.discountId) } };
    default:
      return unreachable(o);
  }
}

/**
 * The contract as the draft has it, for a preview. A code applied in the draft has no value of its own there; what
 * it takes off is the sum of its allocations on the draft's lines (the platform's pricing), shown as that amount.
 */
function draftState(current: ContractState, d: DraftAnswer): ContractState {
  const lines = d.lines.nodes.map(toLine);
  const currency = lines[0]?.price.currencyCode ?? d.deliveryPrice?.currencyCode ?? 'USD';
  const scale = currencyDigits(currency);
  const allocated = (id: string) => {
    let units = 0n;
    for (const l of d.lines.nodes) for (const a of l.discountAllocations) if (a.discount.id === id) units += toUnits(a.amount.amount, scale);
    return fromUnits(units, scale);
  };
  const discounts: Discount[] = d.discounts.nodes.map((x) =>
    x.__typename === 'SubscriptionAppliedCodeDiscount'
      ? { id: lastSegment(x.id), title: x.redeemCode, code: x.redeemCode, value: { type: 'fixed_amount', amount: { amount: allocated(x.id), currencyCode: currency } } }
      : toDiscount(x),
  );
  const state: ContractState = {
    ...current,
    lines,
    discounts,
    billingInterval: d.billingPolicy.interval as Interval,
    billingIntervalCount: d.billingPolicy.intervalCount,
    deliveryInterval: d.deliveryPolicy.interval as Interval,
    deliveryIntervalCount: d.deliveryPolicy.intervalCount,
    nextBillingDate: d.nextBillingDate ? new Date(d.nextBillingDate) : current.nextBillingDate,
    shippingAddress: toAddress(d.deliveryMethod?.address),
    deliveryPrice: d.deliveryPrice ? { amount: d.deliveryPrice.amount, currencyCode: d.deliveryPrice.currencyCode } : null,
  };
  return { ...state, totals: totalsOf(state) };
}

/**
 * svc's decision with what the edit changed as the platform committed it: the lines and discounts (their ids,
 * titles and prices are the platform's), the policies and next billing date when the edit set them, the address
 * when it set one. Whatever else differs in the committed contract was changed on the platform by someone else
 * meanwhile: the change path records it after the edit, as the platform's own change (actor platform).
 */
function editedFields(own: ContractState, platform: PlatformState, operations: EditOperation[]): ContractState {
  const s: ContractState = { ...own, lines: platform.lines, discounts: platform.discounts };
  for (const o of operations) {
    if (o.op === 'set_frequency') {
      s.billingInterval = platform.billingInterval;
      s.billingIntervalCount = platform.billingIntervalCount;
      s.deliveryInterval = platform.deliveryInterval;
      s.deliveryIntervalCount = platform.deliveryIntervalCount;
      if (o.nextBillingDate) s.nextBillingDate = platform.nextBillingDate;
    }
    if (o.op === 'set_shipping_address') s.shippingAddress = platform.shippingAddress;
  }
  return { ...s, totals: totalsOf(s) };
}

/**
 * The edit's decision with the platform's contract: its lines, prices and discounts replace svc's guesses (a new
 * line's id, title and price, a swapped variant's title and price, an applied code's id and value), and the event's
 * changes name them. A line or discount the commit answers under another id is found by its variant or code.
 */
function corrected(decision: Decision, operations: EditOperation[], results: OperationResult[], after: ContractState): Decision {
  const [event] = decision.events;
  const changes = (event.data.changes as Record<string, unknown>[]).map((change, i) => {
    const o = operations[i];
    switch (o.op) {
      case 'add_line': {
        const line = after.lines.find((l) => l.id === results[i].lineId) ?? after.lines.find((l) => l.variantId === o.variantId && !decisionHas(decision, l));
        return line ? { ...change, lineId: line.id, after: line } : change;
      }
      case 'swap_variant': {
        const line = after.lines.find((l) => l.id === o.lineId);
        return line ? { ...change, after: { variantId: line.variantId, title: line.title, price: line.price } } : change;
      }
      case 'apply_discount_code': {
        const code = o.code.trim().toLowerCase();
        const d = after.discounts.find((x) => x.id === results[i].discountId) ?? after.discounts.find((x) => x.code?.toLowerCase() === code);
        return d ? { ...change, discountId: d.id, after: d } : change;
      }
      case 'set_frequency':
        // The date as the platform keeps it (to the second).
        return o.nextBillingDate ? { ...change, after: { ...(change.after as object), nextBillingDate: isoString(after.nextBillingDate) } } : change;
      case 'set_quantity':
      case 'set_price':
      case 'remove_line':
      case 'set_shipping_address':
      case 'remove_discount':
        return change;
      default:
        return unreachable(o);
    }
  });
  return { contract: after, events: [{ ...event, to: after.status, data: { ...event.data, changes }, after }] };
}

/** Whether svc's own decision already had this line (an existing line of the same variant is not the new one). */
const decisionHas = (d: Decision, l: Line) => d.contract.lines.some((x) => x.id === l.id);

const HELD = { heldToken: true };
const quote = (s: string) => JSON.stringify(s.slice(0, 300));
const rejected = (message: string) => new ServiceError('platform_rejected', `The platform refused the edit: ${message.slice(0, 300)}. Nothing was changed.`);

