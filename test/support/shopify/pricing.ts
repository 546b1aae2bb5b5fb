import { gid, type Address, type ContractDiscount, type ContractLine, type DiscountValue, type DraftDiscount, type Money } from './store.js';

/**
 * What the stand-in prices and shows of discounts and addresses: each line's discount allocations (what every
 * discount takes off that line), the discount union's views, and a mailing address. Amounts are computed in cents
 * (the stand-in's currencies have two decimals), written as the platform writes Decimals ("24.0", "7.2", "7.25").
 */

const cents = (amount: string): number => {
  const [whole, frac = ''] = amount.split('.');
  return Number(whole) * 100 + Number(frac.slice(0, 2).padEnd(2, '0'));
};
export const decimalOf = (c: number): string => {
  const text = (c / 100).toFixed(2).replace(/0$/, '');
  return text;
};

/** A discount that prices lines: its id as the view gives it and its value; a rejected code prices nothing. */
type Pricing = { view: object; value: DiscountValue };

/**
 * Each line's allocations, in the order of the discounts: a percentage takes that share of each line's price ×
 * quantity (rounded half up to the cent); a fixed amount per item takes it off each unit; a fixed amount per order is
 * taken from the lines in order until it is used up. A line never goes below zero.
 */
export function allocations(lines: ContractLine[], discounts: Pricing[]): Map<number, { amount: Money; discount: object }[]> {
  const out = new Map<number, { amount: Money; discount: object }[]>();
  const left = new Map(lines.map((l) => [l.id, cents(l.currentPrice.amount) * l.quantity]));
  for (const l of lines) out.set(l.id, []);
  for (const d of discounts) {
    let pool = 'amount' in d.value && !d.value.appliesOnEachItem ? cents(d.value.amount.amount) : 0;
    for (const l of lines) {
      const total = cents(l.currentPrice.amount) * l.quantity;
      let take: number;
      if ('percentage' in d.value) take = Math.floor((total * d.value.percentage + 50) / 100);
      else if (d.value.appliesOnEachItem) take = cents(d.value.amount.amount) * l.quantity;
      else take = pool;
      take = Math.min(take, left.get(l.id)!);
      if ('amount' in d.value && !d.value.appliesOnEachItem) pool -= take;
      if (take <= 0) continue;
      left.set(l.id, left.get(l.id)! - take);
      out.get(l.id)!.push({ amount: { amount: decimalOf(take), currencyCode: l.currentPrice.currencyCode }, discount: d.view });
    }
  }
  return out;
}

export function discountValueView(v: DiscountValue): object {
  return 'percentage' in v
    ? { __typename: 'SubscriptionDiscountPercentageValue', percentage: v.percentage }
    : { __typename: 'SubscriptionDiscountFixedAmountValue', amount: v.amount, appliesOnEachItem: v.appliesOnEachItem };
}

/** A contract's discount (SubscriptionManualDiscount). */
export function manualDiscountView(d: ContractDiscount): object {
  return {
    __typename: 'SubscriptionManualDiscount',
    id: gid('SubscriptionManualDiscount', d.id),
    title: d.title,
    type: d.type,
    value: discountValueView(d.value),
    targetType: 'LINE_ITEM',
    usageCount: d.usageCount,
    recurringCycleLimit: d.recurringCycleLimit,
    rejectionReason: null,
    entitledLines: { __typename: 'SubscriptionDiscountEntitledLines', all: true, lines: () => ({ edges: [], nodes: [], pageInfo: { hasNextPage: false, hasPreviousPage: false, startCursor: null, endCursor: null } }) },
  };
}

/** A draft's discount: a code applied in the draft is a SubscriptionAppliedCodeDiscount (id, redeemCode, rejectionReason). */
export function draftDiscountView(d: DraftDiscount): object {
  if (d.kind === 'existing') return manualDiscountView(d.discount);
  return { __typename: 'SubscriptionAppliedCodeDiscount', id: gid('SubscriptionAppliedCodeDiscount', d.id), redeemCode: d.redeemCode, rejectionReason: d.rejectionReason };
}

/** The discounts that price a contract's lines. */
export const contractPricing = (ds: ContractDiscount[]): Pricing[] => ds.map((d) => ({ view: manualDiscountView(d), value: d.value }));
/** The discounts that price a draft's lines: a rejected code takes nothing off. */
export const draftPricing = (ds: DraftDiscount[]): Pricing[] =>
  ds.flatMap((d) => (d.kind === 'existing' ? [{ view: manualDiscountView(d.discount), value: d.discount.value }] : d.rejectionReason ? [] : [{ view: draftDiscountView(d), value: d.value }]));

export function mailingAddressView(a: Address): object {
  const name = [a.firstName, a.lastName].filter(Boolean).join(' ');
  return {
    __typename: 'MailingAddress',
    firstName: a.firstName,
    lastName: a.lastName,
    name: name || null,
    address1: a.address1,
    address2: a.address2,
    city: a.city,
    provinceCode: a.provinceCode,
    zip: a.zip,
    countryCodeV2: a.countryCode,
    phone: a.phone,
    company: null,
  };
}

/** A delivery method that ships to an address (SubscriptionDeliveryMethodShipping). */
export function shippingMethodView(m: { address: Address } | null): object | null {
  if (!m) return null;
  return {
    __typename: 'SubscriptionDeliveryMethodShipping',
    address: mailingAddressView(m.address),
    shippingOption: { __typename: 'SubscriptionDeliveryMethodShippingOption', title: 'Standard', presentmentTitle: 'Standard', code: 'standard', description: null, carrierService: null },
  };
}
