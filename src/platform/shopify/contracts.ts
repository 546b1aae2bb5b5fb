import type { PlatformContract as MirroredContract } from '../../db/mirror.js';
import { ContractStatus, totalsOf, type Discount, type Line, type ShippingAddress } from '../../domain/contract.js';
import type { Money } from '../../domain/money.js';
import type { Interval } from '../../domain/time.js';
import { MIRRORED_DISCOUNTS, MIRRORED_LINES } from './documents.js';

/** A contract as the Admin API answers it (documents.ts CONTRACT_FIELDS). */
export type PlatformContract = {
  id: string;
  status: string;
  nextBillingDate: string | null;
  createdAt: string;
  updatedAt: string;
  revisionId: string;
  currencyCode?: string;
  customer: { id: string; defaultEmailAddress: { emailAddress: string | null } | null } | null;
  billingPolicy: { interval: string; intervalCount: number };
  deliveryPolicy?: { interval: string; intervalCount: number };
  deliveryPrice?: Money | null;
  deliveryMethod?: { address?: PlatformAddress | null } | null;
  lines: { nodes: PlatformLine[] } | PlatformLine[];
  discounts?: { nodes: PlatformDiscount[] } | PlatformDiscount[];
};
export type PlatformLine = { id?: string; title: string; variantId: string | null; quantity: number; currentPrice: Money };
export type PlatformDiscount = {
  id: string;
  title: string | null;
  type: string;
  value: { percentage?: number; amount?: Money; appliesOnEachItem?: boolean };
};
export type PlatformAddress = {
  firstName: string | null;
  lastName: string | null;
  address1: string | null;
  address2: string | null;
  city: string | null;
  provinceCode: string | null;
  zip: string | null;
  countryCodeV2: string | null;
  phone: string | null;
};

const CONTRACT_GID = /^gid:\/\/shopify\/SubscriptionContract\/(\d{1,19})$/;

/** The numeric id svc serves (the last segment of the platform's gid), or null. */
export function contractIdOf(gid: string): string | null {
  return CONTRACT_GID.exec(gid)?.[1] ?? null;
}
export const contractGid = (id: string) => `gid://shopify/SubscriptionContract/${id}`;
/** The last segment of any gid (customers, variants, lines, discounts). */
export const lastSegment = (gid: string | null | undefined) => (gid ? (gid.split('/').pop() ?? '') : '');
export const lineGid = (id: string) => `gid://shopify/SubscriptionLine/${id}`;
export const variantGid = (id: string) => `gid://shopify/ProductVariant/${id}`;
export const discountGid = (id: string) => `gid://shopify/SubscriptionManualDiscount/${id}`;

const INTERVALS = new Set(['DAY', 'WEEK', 'MONTH', 'YEAR']);
const nodesOf = <T>(c: { nodes: T[] } | T[] | undefined): T[] => (c === undefined ? [] : Array.isArray(c) ? c : c.nodes);

export function toLine(l: PlatformLine): Line {
  return { id: lastSegment(l.id), title: l.title, variantId: lastSegment(l.variantId), quantity: l.quantity, price: { amount: l.currentPrice.amount, currencyCode: l.currentPrice.currencyCode } };
}

export function toDiscount(d: PlatformDiscount): Discount {
  const value: Discount['value'] =
    d.value.amount !== undefined ? { type: 'fixed_amount', amount: { amount: d.value.amount.amount, currencyCode: d.value.amount.currencyCode } } : { type: 'percentage', percentage: d.value.percentage ?? 0 };
  return { id: lastSegment(d.id), title: d.title ?? '', code: d.type === 'CODE_DISCOUNT' ? d.title : null, value };
}

export function toAddress(a: PlatformAddress | null | undefined): ShippingAddress | null {
  if (!a) return null;
  const out: ShippingAddress = {
    firstName: a.firstName ?? '',
    lastName: a.lastName ?? '',
    address1: a.address1 ?? '',
    city: a.city ?? '',
    zip: a.zip ?? '',
    countryCode: a.countryCodeV2 ?? '',
  };
  if (a.address2) out.address2 = a.address2;
  if (a.provinceCode) out.provinceCode = a.provinceCode;
  if (a.phone) out.phone = a.phone;
  return out;
}

/** The platform's contract as the mirror holds it; null when it is not something svc can serve (an unknown status). */
export function mirrorFields(c: PlatformContract): MirroredContract | null {
  const id = contractIdOf(c.id);
  const status = ContractStatus.safeParse(c.status);
  if (!id || !status.success || !INTERVALS.has(c.billingPolicy.interval)) return null;
  const lines = nodesOf(c.lines).slice(0, MIRRORED_LINES).map(toLine);
  const discounts = nodesOf(c.discounts).slice(0, MIRRORED_DISCOUNTS).map(toDiscount);
  const delivery = c.deliveryPolicy && INTERVALS.has(c.deliveryPolicy.interval) ? c.deliveryPolicy : c.billingPolicy;
  const deliveryPrice = c.deliveryPrice && c.deliveryPrice.amount !== undefined ? { amount: c.deliveryPrice.amount, currencyCode: c.deliveryPrice.currencyCode } : null;
  const state = {
    status: status.data,
    customerId: lastSegment(c.customer?.id),
    customerEmail: c.customer?.defaultEmailAddress?.emailAddress ?? '',
    billingInterval: c.billingPolicy.interval as Interval,
    billingIntervalCount: c.billingPolicy.intervalCount,
    deliveryInterval: delivery.interval as Interval,
    deliveryIntervalCount: delivery.intervalCount,
    // A contract without a next billing date (an expired one) keeps its creation date there: the column is required.
    nextBillingDate: new Date(c.nextBillingDate ?? c.createdAt),
    lines,
    shippingAddress: toAddress(c.deliveryMethod?.address),
    deliveryPrice,
    discounts,
  };
  return {
    id,
    createdAt: new Date(c.createdAt),
    state: { ...state, totals: totalsOf(state) },
    mark: { platformRevision: c.revisionId, platformUpdatedAt: new Date(c.updatedAt) },
  };
}
