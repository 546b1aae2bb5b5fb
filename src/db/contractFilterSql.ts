import { and, eq, gte, inArray, lte, sql, type SQL } from 'drizzle-orm';
import type { ContractCriteria } from '../domain/contractFilter.js';
import { contracts } from './schema.js';

/**
 * A shop's contracts matching a filter (domain/contractFilter.ts), as a condition of the query builder: the list
 * endpoint's and a bulk job's selector. Each part is served by an index led by the shop (its customer, the lowercased
 * email) or by the lines' variants (a GIN index over the lines as jsonb), migration 0032; payment trouble (a billing
 * status other than ok) by a partial index, migration 0052.
 */
export function matching(shopId: string, c: ContractCriteria): SQL {
  return and(
    eq(contracts.shopId, shopId),
    c.statuses ? inArray(contracts.status, c.statuses) : undefined,
    c.billingStatuses ? inArray(contracts.billingStatus, c.billingStatuses) : undefined,
    c.customerId !== null ? eq(contracts.customerId, c.customerId) : undefined,
    c.customerEmail !== null ? sql`lower(${contracts.customerEmail}) = lower(${c.customerEmail})` : undefined,
    c.variantId !== null ? sql`${contracts.lines}::jsonb @> ${JSON.stringify([{ variantId: c.variantId }])}::jsonb` : undefined,
    c.nextBillingFrom ? gte(contracts.nextBillingDate, c.nextBillingFrom) : undefined,
    c.nextBillingTo ? lte(contracts.nextBillingDate, c.nextBillingTo) : undefined,
  )!;
}
