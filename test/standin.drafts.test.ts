import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { accessTokenFor, adminGraphql } from './support/shopify/client.js';
import { startStandIn, type RunningStandIn } from './support/shopify/index.js';
import type { Contract } from './support/shopify/store.js';

/**
 * The stand-in's contract drafts, spoken to as svc would, over HTTP with GraphQL: the schema's shapes, a draft
 * committed only by subscriptionDraftCommit, userErrors that change nothing, and the pricing a draft shows.
 */

const APP = { appKey: 'stand-in-app-key', appSecret: 'stand-in-app-secret' };
let standIn: RunningStandIn;
let n = 0;
let shop: string;
let token: string;
let contract: Contract;
let variant: { id: number };

const gql = (query: string, variables?: Record<string, unknown>) => adminGraphql(standIn, shop, token, query, variables);
const ERRORS = 'userErrors { field message code }';
const DRAFT = `id nextBillingDate billingPolicy { interval intervalCount } deliveryPolicy { interval intervalCount }
  deliveryMethod { ... on SubscriptionDeliveryMethodShipping { address { address1 city countryCodeV2 } } }
  lines(first: 10) { nodes { id title variantId quantity currentPrice { amount currencyCode } lineDiscountedPrice { amount }
    discountAllocations { amount { amount } discount { __typename ... on SubscriptionAppliedCodeDiscount { id } } } } }
  discounts(first: 5) { nodes { __typename ... on SubscriptionAppliedCodeDiscount { id redeemCode rejectionReason } ... on SubscriptionManualDiscount { id title type } } }`;

async function draftOf(id = contract.gid): Promise<string> {
  const r = await gql(`mutation($id: ID!) { subscriptionContractUpdate(contractId: $id) { draft { id } ${ERRORS} } }`, { id });
  expect(r.body.data.subscriptionContractUpdate.userErrors).toEqual([]);
  return r.body.data.subscriptionContractUpdate.draft.id;
}
const commit = async (draftId: string) =>
  (await gql(`mutation($id: ID!) { subscriptionDraftCommit(draftId: $id) { contract { id revisionId lines(first: 10) { nodes { id quantity } } discounts(first: 5) { nodes { id title type } } } ${ERRORS} } }`, { id: draftId })).body.data
    .subscriptionDraftCommit;

beforeAll(async () => {
  standIn = await startStandIn({ ...APP });
});
afterAll(async () => {
  await standIn?.close();
});
beforeEach(async () => {
  shop = `drafts-${++n}.myshopify.com`;
  standIn.faults.clear();
  standIn.createShop(shop);
  token = await accessTokenFor(standIn, shop);
  variant = standIn.createVariant(shop, { productTitle: 'Oat milk', price: '9.80' });
  standIn.createDiscountCode(shop, 'TENOFF', { percentage: 10 });
  contract = standIn.createContract(shop, { lines: [{ title: 'Coffee', quantity: 2, currentPrice: { amount: '25.0', currencyCode: 'USD' } }] }, { silent: true });
});

describe('drafts', () => {
  it('aliased draft mutations run in order on one draft; the draft shows lines, prices, allocations; the contract is untouched until commit', async () => {
    const draftId = await draftOf();
    const lineId = `gid://shopify/SubscriptionLine/${contract.lines[0].id}`;
    const revision = contract.revisionId;
    const r = await gql(
      `mutation($d: ID!, $line: ID!, $add: SubscriptionLineInput!, $upd: SubscriptionDraftInput!) {
        a: subscriptionDraftLineUpdate(draftId: $d, lineId: $line, input: { quantity: 3 }) { lineUpdated { quantity } ${ERRORS} }
        b: subscriptionDraftLineAdd(draftId: $d, input: $add) { lineAdded { id title } ${ERRORS} }
        c: subscriptionDraftUpdate(draftId: $d, input: $upd) { ${ERRORS} }
        e: subscriptionDraftDiscountCodeApply(draftId: $d, redeemCode: "tenoff") { appliedDiscount { id redeemCode rejectionReason } ${ERRORS} draft { ${DRAFT} } }
      }`,
      {
        d: draftId,
        line: lineId,
        add: { productVariantId: `gid://shopify/ProductVariant/${variant.id}`, quantity: 1, currentPrice: '5' },
        upd: { billingPolicy: { interval: 'WEEK', intervalCount: 2 }, deliveryPolicy: { interval: 'WEEK', intervalCount: 2 }, deliveryMethod: { shipping: { address: { address1: '1 Main St', city: 'Berlin', countryCode: 'DE' } } } },
      },
    );
    const data = r.body.data;
    expect(['a', 'b', 'c', 'e'].map((k) => data[k].userErrors)).toEqual([[], [], [], []]);
    expect(data.b.lineAdded.title).toBe('Oat milk');
    expect(data.e.appliedDiscount).toMatchObject({ redeemCode: 'TENOFF', rejectionReason: null });
    const draft = data.e.draft;
    expect(draft.billingPolicy).toEqual({ interval: 'WEEK', intervalCount: 2 });
    expect(draft.deliveryMethod.address).toEqual({ address1: '1 Main St', city: 'Berlin', countryCodeV2: 'DE' });
    expect(draft.lines.nodes.map((l: any) => [l.quantity, l.currentPrice.amount, l.lineDiscountedPrice.amount, l.discountAllocations.map((a: any) => a.amount.amount)])).toEqual([
      [3, '25.0', '67.5', ['7.5']],
      [1, '5.0', '4.5', ['0.5']],
    ]);
    expect(draft.lines.nodes[0].discountAllocations[0].discount).toEqual({ __typename: 'SubscriptionAppliedCodeDiscount', id: data.e.appliedDiscount.id });
    // Nothing on the contract yet.
    expect(contract.revisionId).toBe(revision);
    expect(contract.lines.map((l) => l.quantity)).toEqual([2]);
    expect(contract.discounts).toEqual([]);

    const done = await commit(draftId);
    expect(done.userErrors).toEqual([]);
    expect(done.contract.revisionId).not.toBe(revision);
    expect(done.contract.lines.nodes.map((l: any) => l.quantity)).toEqual([3, 1]);
    expect(done.contract.discounts.nodes).toEqual([{ id: data.e.appliedDiscount.id.replace('SubscriptionAppliedCodeDiscount', 'SubscriptionManualDiscount'), title: 'TENOFF', type: 'CODE_DISCOUNT' }]);
    expect(contract.deliveryPolicy).toEqual({ interval: 'WEEK', intervalCount: 2 });
    // A committed draft takes no more changes and is not committed twice.
    expect((await commit(draftId)).userErrors).toEqual([{ field: ['draftId'], message: 'Subscription draft has already been committed', code: 'COMMITTED' }]);
  });

  it('a mutation with a userError changes nothing on the draft; an unknown variant, line, code and discount are refused', async () => {
    const draftId = await draftOf();
    const r = await gql(
      `mutation($d: ID!) {
        a: subscriptionDraftLineAdd(draftId: $d, input: { productVariantId: "gid://shopify/ProductVariant/1", quantity: 1, currentPrice: "1" }) { lineAdded { id } ${ERRORS} draft { id } }
        b: subscriptionDraftLineRemove(draftId: $d, lineId: "gid://shopify/SubscriptionLine/1") { ${ERRORS} }
        c: subscriptionDraftDiscountCodeApply(draftId: $d, redeemCode: "NOPE") { ${ERRORS} }
        e: subscriptionDraftDiscountRemove(draftId: $d, discountId: "gid://shopify/SubscriptionManualDiscount/1") { ${ERRORS} }
        f: subscriptionDraftUpdate(draftId: $d, input: { billingPolicy: { interval: MONTH, intervalCount: 3 }, deliveryPolicy: { interval: MONTH, intervalCount: 2 } }) { ${ERRORS} }
      }`,
      { d: draftId },
    );
    const d = r.body.data;
    expect(d.a).toEqual({ lineAdded: null, draft: null, userErrors: [{ field: ['input', 'productVariantId'], message: 'Product variant does not exist', code: 'INVALID' }] });
    expect(d.b.userErrors[0]).toMatchObject({ field: ['lineId'], code: 'INVALID' });
    expect(d.c.userErrors[0]).toMatchObject({ field: ['redeemCode'], message: 'Discount code is invalid' });
    expect(d.e.userErrors[0]).toMatchObject({ field: ['discountId'] });
    expect(d.f.userErrors[0]).toMatchObject({ code: 'DELIVERY_MUST_BE_MULTIPLE_OF_BILLING' });
    const draft = standIn.shop(shop).drafts.values().next().value!;
    expect(draft.lines).toHaveLength(1);
    expect(draft.discounts).toEqual([]);
    expect(draft.billingPolicy.intervalCount).toBe(1);
  });

  it('a commit after the contract changed is STALE_CONTRACT; an inactive code is applied with its reason and takes nothing off', async () => {
    const draftId = await draftOf();
    const applied = await gql(`mutation($d: ID!) { subscriptionDraftDiscountCodeApply(draftId: $d, redeemCode: "OLD") { appliedDiscount { rejectionReason } ${ERRORS} } }`, { d: draftId });
    expect(applied.body.data.subscriptionDraftDiscountCodeApply.userErrors[0].message).toBe('Discount code is invalid');
    standIn.createDiscountCode(shop, 'OLD', { percentage: 50 }, { active: false });
    const again = await gql(`mutation($d: ID!) { subscriptionDraftDiscountCodeApply(draftId: $d, redeemCode: "OLD") { appliedDiscount { rejectionReason } draft { ${DRAFT} } ${ERRORS} } }`, { d: draftId });
    const answer = again.body.data.subscriptionDraftDiscountCodeApply;
    expect(answer.appliedDiscount).toEqual({ rejectionReason: 'CURRENTLY_INACTIVE' });
    expect(answer.draft.lines.nodes[0].discountAllocations).toEqual([]);
    standIn.platform.update(shop, contract.id, { note: 'changed in the shop admin' });
    expect((await commit(draftId)).userErrors).toEqual([{ field: ['draftId'], message: 'The contract has changed since the draft was made', code: 'STALE_CONTRACT' }]);
    expect(contract.discounts).toEqual([]);
  });

  it('an input field the stand-in does not model is an explicit error, never silently ignored', async () => {
    const draftId = await draftOf();
    const r = await gql(`mutation($d: ID!) { subscriptionDraftUpdate(draftId: $d, input: { paymentMethodId: "gid://shopify/CustomerPaymentMethod/1" }) { ${ERRORS} } }`, { d: draftId });
    expect(r.body.errors[0]).toMatchObject({ message: 'The stand-in does not model SubscriptionDraftInput.paymentMethodId', extensions: { code: 'STAND_IN_UNSUPPORTED' } });
  });
});
