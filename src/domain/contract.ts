import { z } from 'zod';
import type { AttemptState } from './billing.js';
import { currencyDigits, fromUnits, percentOf, toUnits, type Money } from './money.js';
import { addInterval, type Interval } from './time.js';

export const ContractStatus = z.enum(['ACTIVE', 'PAUSED', 'CANCELLED', 'EXPIRED', 'FAILED']);
export type ContractStatus = z.infer<typeof ContractStatus>;
export const BillingInterval = z.enum(['DAY', 'WEEK', 'MONTH', 'YEAR']);

/** One line of a contract: what is delivered each cycle. `id` is stable for the line's life (edits name it). */
export type Line = { id: string; title: string; variantId: string; quantity: number; price: Money };

export type ShippingAddress = {
  firstName: string;
  lastName: string;
  address1: string;
  address2?: string | null;
  city: string;
  provinceCode?: string | null;
  zip: string;
  countryCode: string;
  phone?: string | null;
};

export type DiscountValue = { type: 'percentage'; percentage: number } | { type: 'fixed_amount'; amount: Money };
export type Discount = { id: string; title: string; code: string | null; value: DiscountValue };

export type Totals = { subtotal: string; discounts: string; shipping: string; total: string; currencyCode: string };

/**
 * Where a contract stands in its billing (renewals), which says whether a cycle is owed: `ok`, nothing is; `retrying`,
 * a payment of the current cycle failed (retried on the shop's schedule while ACTIVE; on a FAILED contract, billed
 * when it is resumed); `action_required`, the customer must authenticate. docs/renewals.md.
 */
export const BILLING_STATUSES = ['ok', 'retrying', 'action_required'] as const;
export type BillingStatus = (typeof BILLING_STATUSES)[number];

/** A field of the contract's state as a value: its type is there for the compiler only. */
type Field<T> = (value: T) => T;
const field = <T>(): Field<T> => (value) => value;

/**
 * The whole contract as the domain reads and writes it: status and dates, what is delivered (lines, shipping
 * address, delivery price, discounts, with their totals), how often (billing and delivery policy), who to (the
 * customer), and where its billing stands. Flat, with the names of the row's columns, so a stored row is a state and
 * every command's `decide` works on the same shape in both modes.
 *
 * Declared once, as a value: the type ContractState and the list of its keys (CONTRACT_STATE_KEYS, from which the
 * state's columns are read: db/contractColumns.ts) both come from it.
 */
const CONTRACT_STATE = {
  status: field<ContractStatus>(),
  customerId: field<string>(),
  customerEmail: field<string>(),
  billingInterval: field<Interval>(),
  billingIntervalCount: field<number>(),
  deliveryInterval: field<Interval>(),
  deliveryIntervalCount: field<number>(),
  nextBillingDate: field<Date>(),
  pausedAt: field<Date | null>(),
  resumeAt: field<Date | null>(),
  cancelledAt: field<Date | null>(),
  cancellationReason: field<string | null>(),
  lines: field<Line[]>(),
  shippingAddress: field<ShippingAddress | null>(),
  deliveryPrice: field<Money | null>(),
  discounts: field<Discount[]>(),
  totals: field<Totals>(),
  /** Renewals: where the billing of the current cycle stands (see domain/billing.ts). */
  billingStatus: field<BillingStatus>(),
  billingFailedAttempts: field<number>(),
  billingNextAttemptAt: field<Date | null>(),
  billingCycleDate: field<Date | null>(),
  billingLastAttempt: field<AttemptState | null>(),
};

export type ContractState = { [K in keyof typeof CONTRACT_STATE]: (typeof CONTRACT_STATE)[K] extends Field<infer T> ? T : never };
export type ContractStateKey = keyof ContractState;
/** Every key of ContractState, in the order of its declaration. */
export const CONTRACT_STATE_KEYS = Object.keys(CONTRACT_STATE) as readonly ContractStateKey[];

/** The state part of a contract (of a row, say), as a state of its own: what a command copies and changes. */
export function stateOf(c: ContractState): ContractState {
  return {
    status: c.status,
    customerId: c.customerId,
    customerEmail: c.customerEmail,
    billingInterval: c.billingInterval,
    billingIntervalCount: c.billingIntervalCount,
    deliveryInterval: c.deliveryInterval,
    deliveryIntervalCount: c.deliveryIntervalCount,
    nextBillingDate: c.nextBillingDate,
    pausedAt: c.pausedAt,
    resumeAt: c.resumeAt,
    cancelledAt: c.cancelledAt,
    cancellationReason: c.cancellationReason,
    lines: c.lines,
    shippingAddress: c.shippingAddress,
    deliveryPrice: c.deliveryPrice,
    discounts: c.discounts,
    totals: c.totals,
    billingStatus: c.billingStatus,
    billingFailedAttempts: c.billingFailedAttempts,
    billingNextAttemptAt: c.billingNextAttemptAt,
    billingCycleDate: c.billingCycleDate,
    billingLastAttempt: c.billingLastAttempt,
  };
}

/** The billing fields with no cycle being billed or retried: after a success, a skip, or an abandoned cycle. */
export function withoutDunning<S extends ContractState>(s: S): S {
  return { ...s, billingStatus: 'ok', billingFailedAttempts: 0, billingNextAttemptAt: null, billingCycleDate: null };
}

/** True when a paused contract's resume moment has come: every read and command treats it as resumed. */
export function isResumeDue(state: Pick<ContractState, 'status' | 'resumeAt'>, now: Date): boolean {
  return state.status === 'PAUSED' && state.resumeAt !== null && state.resumeAt.getTime() <= now.getTime();
}

/** The first billing date after `now`, moving forward from `date` by whole intervals (anchored on `date`). */
export function nextBillingAfter(date: Date, interval: Interval, count: number, now: Date): Date {
  if (date.getTime() > now.getTime()) return date;
  // Jump close with an estimate, then step; anchoring on the original date keeps month-end days stable.
  const approxMs = { DAY: 86_400_000, WEEK: 604_800_000, MONTH: 28 * 86_400_000, YEAR: 365 * 86_400_000 }[interval] * count;
  let n = Math.max(1, Math.floor((now.getTime() - date.getTime()) / approxMs) - 1);
  while (addInterval(date, interval, count * (n - 1)).getTime() > now.getTime() && n > 1) n--;
  while (addInterval(date, interval, count * n).getTime() <= now.getTime()) n++;
  return addInterval(date, interval, count * n);
}

/** The currency of a contract: its lines' (a contract bills in one currency), else its delivery price's, else EUR. */
export const currencyOf = (s: Pick<ContractState, 'lines' | 'deliveryPrice'>): string => s.lines[0]?.price.currencyCode ?? s.deliveryPrice?.currencyCode ?? 'EUR';

/**
 * What one cycle costs: the lines' subtotal, the discounts (each percentage of the subtotal, or a fixed amount per
 * order; together never more than the subtotal), the delivery price, and the total. In the currency's minor units,
 * so the figures add up exactly.
 */
export function totalsOf(s: Pick<ContractState, 'lines' | 'discounts' | 'deliveryPrice'>): Totals {
  const currencyCode = currencyOf(s);
  const scale = currencyDigits(currencyCode);
  let subtotal = 0n;
  for (const l of s.lines) subtotal += toUnits(l.price.amount, scale) * BigInt(l.quantity);
  let discounts = 0n;
  for (const d of s.discounts) discounts += d.value.type === 'percentage' ? percentOf(subtotal, d.value.percentage) : toUnits(d.value.amount.amount, scale);
  if (discounts > subtotal) discounts = subtotal;
  const shipping = s.deliveryPrice ? toUnits(s.deliveryPrice.amount, scale) : 0n;
  return {
    subtotal: fromUnits(subtotal, scale),
    discounts: fromUnits(discounts, scale),
    shipping: fromUnits(shipping, scale),
    total: fromUnits(subtotal - discounts + shipping, scale),
    currencyCode,
  };
}
