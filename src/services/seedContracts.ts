import { randomInt, randomUUID } from 'node:crypto';
import { CONTRACT_ROW, contracts } from '../db/schema.js';
import { totalsOf, type Line, type ShippingAddress } from '../domain/contract.js';
import { addInterval, type Interval } from '../domain/time.js';
import { toContract, type Contract } from '../domain/resources.js';
import { seedProducts } from './catalog.js';
import type { ServiceCall } from './context.js';

const FIRST = ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Ken', 'Margaret', 'Linus', 'Radia', 'Donald', 'Frances', 'John'];
const LAST = ['Lovelace', 'Hopper', 'Turing', 'Dijkstra', 'Liskov', 'Thompson', 'Hamilton', 'Torvalds', 'Perlman', 'Knuth', 'Allen', 'Backus'];
const POLICIES: { interval: Interval; count: number; weight: number }[] = [
  { interval: 'MONTH', count: 1, weight: 6 },
  { interval: 'WEEK', count: 2, weight: 2 },
  { interval: 'MONTH', count: 3, weight: 1 },
  { interval: 'YEAR', count: 1, weight: 1 },
];
const STREETS = ['Main Street', 'Station Road', 'Oak Avenue', 'Harbour Lane', 'Mill Road', 'Church Street'];
const CITIES: { city: string; zip: string; countryCode: string; provinceCode?: string }[] = [
  { city: 'Berlin', zip: '10115', countryCode: 'DE' },
  { city: 'Lyon', zip: '69002', countryCode: 'FR' },
  { city: 'Portland', zip: '97205', countryCode: 'US', provinceCode: 'OR' },
  { city: 'Toronto', zip: 'M5V 2T6', countryCode: 'CA', provinceCode: 'ON' },
];
const pick = <T>(xs: T[]) => xs[randomInt(xs.length)];

/** `n` different items of `xs` (all of them when it has fewer), in a random order. */
function pickDistinct<T>(xs: readonly T[], n: number): T[] {
  const pool = xs.slice();
  const out: T[] = [];
  while (out.length < n && pool.length) out.push(pool.splice(randomInt(pool.length), 1)[0]);
  return out;
}

function policy() {
  let r = randomInt(POLICIES.reduce((s, p) => s + p.weight, 0));
  for (const p of POLICIES) if ((r -= p.weight) < 0) return p;
  return POLICIES[0];
}

/**
 * Creates realistic ACTIVE contracts for a shop (development and benchmarks): customers with a shipping address, one
 * to three lines of different variants of the shop's catalog (made here if the shop has none: `products seed`) in one currency, a billing
 * and delivery policy, and a next billing date within the next interval.
 */
export async function seedContracts({
  ctx,
  input,
}: ServiceCall<{ shopId: string; count: number; currencyCode?: string }>): Promise<Contract[]> {
  const now = ctx.clock.now();
  const currencyCode = input.currencyCode ?? 'EUR';
  const catalog = await seedProducts(ctx, input.shopId, currencyCode);
  const rows: (typeof contracts.$inferInsert)[] = [];
  for (let i = 0; i < input.count; i++) {
    const first = pick(FIRST);
    const last = pick(LAST);
    const p = policy();
    // A contract holds a variant on one line at most, as the platform's do: more of it is a larger quantity.
    const lines: Line[] = pickDistinct(catalog, 1 + randomInt(3)).map((variant) => ({
      id: randomUUID(),
      title: variant.title,
      variantId: variant.id,
      quantity: 1 + randomInt(3),
      price: { amount: variant.price, currencyCode },
    }));
    const place = pick(CITIES);
    const shippingAddress: ShippingAddress = { firstName: first, lastName: last, address1: `${1 + randomInt(200)} ${pick(STREETS)}`, city: place.city, zip: place.zip, countryCode: place.countryCode };
    if (place.provinceCode) shippingAddress.provinceCode = place.provinceCode;
    const createdAt = new Date(now.getTime() - randomInt(1, 400) * 86_400_000);
    const span = addInterval(now, p.interval, p.count).getTime() - now.getTime();
    const next = new Date(Math.floor((now.getTime() + 86_400_000 + randomInt(Math.max(1, span / 1000)) * 1000) / 1000) * 1000);
    rows.push({
      shopId: input.shopId,
      status: 'ACTIVE',
      customerId: String(7_000_000 + randomInt(3_000_000)),
      customerEmail: `${first}.${last}${randomInt(100)}@example.com`.toLowerCase(),
      billingInterval: p.interval,
      billingIntervalCount: p.count,
      deliveryInterval: p.interval,
      deliveryIntervalCount: p.count,
      nextBillingDate: next,
      lines,
      shippingAddress,
      discounts: [],
      totals: totalsOf({ lines, discounts: [], deliveryPrice: null }),
      createdAt,
      updatedAt: createdAt,
    });
  }
  const created = [];
  for (let i = 0; i < rows.length; i += 500) {
    created.push(...(await ctx.db.orm.insert(contracts).values(rows.slice(i, i + 500)).returning(CONTRACT_ROW)));
  }
  return created.map((row) => toContract(row));
}
