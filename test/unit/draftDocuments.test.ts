import { getOperationAST, getVariableValues, parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { MAX_EDIT_OPERATIONS, parseOperations } from '../../src/domain/commands/edit.js';
import { COMMIT_DRAFT, CREATE_DRAFT, DRAFT_MUTATIONS, draftEditDocument, VARIANT_PRICES } from '../../src/platform/shopify/documents.js';
import { PLATFORM_COUNTRY_CODES } from '../../src/platform/shopify/countryCodes.js';
import { draftOperation } from '../../src/platform/shopify/edits.js';
import { requestedQueryCost } from '../support/shopify/cost.js';
import { adminSchema, validateAgainstAdminSchema } from '../support/shopify/index.js';

/**
 * The documents of platform-mode edits, checked against the platform's Admin schema (2026-10): the draft's
 * creation and commit, the variants' prices, and the one document of an edit's draft mutations, built for every
 * kind of operation and for all of them together, with the variables svc sends coerced by the schema's input types.
 */

const ADDRESS = { firstName: 'Ada', lastName: 'Lovelace', address1: '12 St James Square', address2: 'Flat 3', city: 'London', provinceCode: 'LND', zip: 'SW1Y 4JH', countryCode: 'GB', phone: '+44 20 7946 0000' };
const RAW: { op: string; [field: string]: unknown }[] = [
  { op: 'set_quantity', lineId: '1001', quantity: 3 },
  { op: 'swap_variant', lineId: '1001', variantId: '40002' },
  { op: 'swap_variant', lineId: '1001', variantId: '40002', price: '12.50' },
  { op: 'add_line', variantId: '40004', quantity: 2 },
  { op: 'add_line', variantId: '40005', quantity: 1, price: '50' },
  { op: 'remove_line', lineId: '1002' },
  { op: 'set_frequency', interval: 'WEEK', intervalCount: 2 },
  { op: 'set_frequency', interval: 'MONTH', intervalCount: 1, nextBillingDate: '2027-01-10T08:00:00Z' },
  { op: 'set_shipping_address', address: ADDRESS },
  { op: 'set_shipping_address', address: { firstName: 'Ada', lastName: 'L', address1: 'x', city: 'Berlin', zip: '10115', countryCode: 'DE' } },
  { op: 'apply_discount_code', code: ' WELCOME10 ' },
  { op: 'remove_discount', discountId: '2001' },
];
const EVERY_KIND = parseOperations(RAW);
const PRICES = new Map([
  ['40002', '14.5'],
  ['40004', '9.8'],
]);

function check(document: string, variables: Record<string, unknown>) {
  expect(validateAgainstAdminSchema(document, { noDeprecated: true }), document).toEqual([]);
  const doc = parse(document);
  const operation = getOperationAST(doc)!;
  const coerced = getVariableValues(adminSchema(), operation.variableDefinitions ?? [], variables);
  expect(coerced.errors?.map((e) => e.message) ?? [], JSON.stringify(variables)).toEqual([]);
  return coerced;
}

describe('platform-mode edit documents', () => {
  it('svc’s list of the platform’s country codes is the schema’s CountryCode enum', () => {
    const values = (adminSchema().getType('CountryCode') as import('graphql').GraphQLEnumType).getValues().map((v) => v.name);
    expect([...PLATFORM_COUNTRY_CODES].sort()).toEqual(values.sort());
  });

  it('the draft’s creation, its commit and the variants’ prices are valid, without deprecated fields', () => {
    check(CREATE_DRAFT, { id: 'gid://shopify/SubscriptionContract/1' });
    check(COMMIT_DRAFT, { id: 'gid://shopify/SubscriptionDraft/2' });
    check(VARIANT_PRICES, { ids: ['gid://shopify/ProductVariant/3'] });
  });

  it('each kind of operation alone is one valid document, its variables of the schema’s input types', () => {
    for (const o of EVERY_KIND) {
      const { document, variables } = draftEditDocument('gid://shopify/SubscriptionDraft/9', [draftOperation(o, PRICES)]);
      check(document, variables);
      expect(document).toMatch(/op0: subscriptionDraft\w+\(draftId: \$draftId/);
      expect(document).toContain('draft {');
    }
  });

  it('the largest edit (20 operations) stays under the platform’s single-query cost limit of 1,000 points', () => {
    const ops = Array.from({ length: MAX_EDIT_OPERATIONS }, (_, i) => draftOperation(EVERY_KIND[i % EVERY_KIND.length], PRICES));
    const { document, variables } = draftEditDocument('gid://shopify/SubscriptionDraft/9', ops);
    const doc = parse(document);
    const cost = requestedQueryCost(adminSchema(), doc, getOperationAST(doc)!, variables);
    expect(cost).toBeLessThan(1000);
  });

  it('all of them together are one document: an alias per operation in order, the draft read once, at the end', () => {
    const ops = EVERY_KIND.map((o) => draftOperation(o, PRICES));
    const { document, variables } = draftEditDocument('gid://shopify/SubscriptionDraft/9', ops);
    const coerced = check(document, variables);
    const fields = [...document.matchAll(/op(\d+): (\w+)\(/g)].map((m) => [Number(m[1]), m[2]]);
    expect(fields).toEqual(ops.map((o, i) => [i, DRAFT_MUTATIONS[o.kind].field]));
    expect(document.match(/ draft \{/g)).toHaveLength(1);
    expect(document.lastIndexOf(' draft {')).toBeGreaterThan(document.lastIndexOf(`op${ops.length - 1}:`));
    // The values as the platform reads them: prices from the variants where none was given, gids, the address.
    const values = coerced.coerced!;
    expect(values.op1_input).toEqual({ productVariantId: 'gid://shopify/ProductVariant/40002', currentPrice: '14.5' });
    expect(values.op2_input).toEqual({ productVariantId: 'gid://shopify/ProductVariant/40002', currentPrice: '12.50' });
    expect(values.op3_input).toEqual({ productVariantId: 'gid://shopify/ProductVariant/40004', quantity: 2, currentPrice: '9.8' });
    expect(values.op5_lineId).toBe('gid://shopify/SubscriptionLine/1002');
    expect(values.op6_input).toMatchObject({ billingPolicy: { interval: 'WEEK', intervalCount: 2 }, deliveryPolicy: { interval: 'WEEK', intervalCount: 2 } });
    expect(values.op7_input).toMatchObject({ nextBillingDate: '2027-01-10T08:00:00Z' });
    expect(values.op8_input).toEqual({ deliveryMethod: { shipping: { address: ADDRESS } } });
    expect(values.op10_redeemCode).toBe('WELCOME10');
    expect(values.op11_discountId).toBe('gid://shopify/SubscriptionManualDiscount/2001');
  });
});
