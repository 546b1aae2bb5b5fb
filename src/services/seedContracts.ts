import { randomInt } from 'node:crypto';
import { contracts, type LineItem } from '../db/schema.js';
import { addInterval, type Interval } from '../domain/time.js';
import { toContract, type Contract } from '../domain/resources.js';
import type { ServiceCall } from './context.js';

const FIRST = ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Ken', 'Margaret', 'Linus', 'Radia', 'Donald', 'Frances', 'John'];
const LAST = ['Lovelace', 'Hopper', 'Turing', 'Dijkstra', 'Liskov', 'Thompson', 'Hamilton', 'Torvalds', 'Perlman', 'Knuth', 'Allen', 'Backus'];
const PRODUCTS: { title: string; price: string }[] = [
  { title: 'Coffee 1kg', price: '24.00' },
  { title: 'Espresso beans 500g', price: '14.50' },
  { title: 'Green tea 250g', price: '11.90' },
  { title: 'Oat milk 6-pack', price: '9.80' },
  { title: 'Dog food 12kg', price: '54.00' },
  { title: 'Razor blades 8-pack', price: '17.00' },
  { title: 'Vitamin D3 90 caps', price: '12.40' },
  { title: 'Protein powder 2kg', price: '49.90' },
];
const POLICIES: { interval: Interval; count: number; weight: number }[] = [
  { interval: 'MONTH', count: 1, weight: 6 },
  { interval: 'WEEK', count: 2, weight: 2 },
  { interval: 'MONTH', count: 3, weight: 1 },
  { interval: 'YEAR', count: 1, weight: 1 },
];
const pick = <T>(xs: T[]) => xs[randomInt(xs.length)];

function policy() {
  let r = randomInt(POLICIES.reduce((s, p) => s + p.weight, 0));
  for (const p of POLICIES) if ((r -= p.weight) < 0) return p;
  return POLICIES[0];
}

/**
 * Creates realistic ACTIVE contracts for a shop (development and benchmarks): customers, one to three lines in one
 * currency, a billing policy, and a next billing date within the next interval.
 */
export async function seedContracts({
  ctx,
  input,
}: ServiceCall<{ shopId: string; count: number; currencyCode?: string }>): Promise<Contract[]> {
  const now = ctx.clock.now();
  const currencyCode = input.currencyCode ?? 'EUR';
  const rows: (typeof contracts.$inferInsert)[] = [];
  for (let i = 0; i < input.count; i++) {
    const first = pick(FIRST);
    const last = pick(LAST);
    const p = policy();
    const lines: LineItem[] = Array.from({ length: 1 + randomInt(3) }, () => {
      const product = pick(PRODUCTS);
      return { title: product.title, variantId: String(40_000 + randomInt(60_000)), quantity: 1 + randomInt(3), price: { amount: product.price, currencyCode } };
    });
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
      nextBillingDate: next,
      lines,
      createdAt,
      updatedAt: createdAt,
    });
  }
  const created = [];
  for (let i = 0; i < rows.length; i += 500) {
    created.push(...(await ctx.db.orm.insert(contracts).values(rows.slice(i, i + 500)).returning()));
  }
  return created.map((row) => toContract(row));
}
