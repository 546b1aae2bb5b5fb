import { z } from 'zod';
import { BILLING_STATUSES, ContractStatus, type BillingStatus } from './contract.js';
import { VariantId } from './commands/edits/fields.js';
import { parseUtcTimestamp, UtcTimestamp } from './time.js';

/**
 * Which contracts of a shop: the filter a bulk job's selector takes and the list endpoint takes as query parameters
 * (docs/product.md §15). Fields AND together; none is every contract of the shop.
 */
export const CustomerId = z.string().regex(/^\d{1,19}$/, { message: 'must be a string of 1 to 19 digits' });

export const ContractFilter = z
  .strictObject({
    status: z.array(ContractStatus).min(1).max(5).optional().describe('Only contracts with one of these statuses.'),
    billingStatus: z
      .array(z.enum(BILLING_STATUSES))
      .min(1)
      .max(3)
      .optional()
      .describe('Only contracts whose billing.status is one of these: ["retrying", "action_required"] is every contract with payment trouble (in dunning, or FAILED with its cycle unpaid).'),
    customerId: CustomerId.optional().describe('Only this customer\'s contracts (the platform\'s customer id).'),
    customerEmail: z.string().min(1).max(254).optional().describe('Only contracts of the customer with this email (exact, any case).'),
    variantId: VariantId.optional().describe('Only contracts with a line of this product variant.'),
    nextBillingDateFrom: UtcTimestamp.optional().describe('Only contracts whose next billing date is at or after this moment (ISO 8601 UTC).'),
    nextBillingDateTo: UtcTimestamp.optional().describe('Only contracts whose next billing date is at or before this moment (ISO 8601 UTC).'),
  })
  .meta({ id: 'ContractFilter' });
export type ContractFilter = z.infer<typeof ContractFilter>;

/** The filter with its dates parsed, as the database query takes it. */
export type ContractCriteria = {
  statuses: ContractStatus[] | null;
  billingStatuses: BillingStatus[] | null;
  customerId: string | null;
  customerEmail: string | null;
  variantId: string | null;
  nextBillingFrom: Date | null;
  nextBillingTo: Date | null;
};

export function criteriaOf(f: ContractFilter): ContractCriteria {
  return {
    statuses: f.status ?? null,
    billingStatuses: f.billingStatus ?? null,
    customerId: f.customerId ?? null,
    customerEmail: f.customerEmail ?? null,
    variantId: f.variantId ?? null,
    nextBillingFrom: f.nextBillingDateFrom ? parseUtcTimestamp(f.nextBillingDateFrom) : null,
    nextBillingTo: f.nextBillingDateTo ? parseUtcTimestamp(f.nextBillingDateTo) : null,
  };
}

/** True when the filter names nothing: every contract of the shop. */
export const isEmptyCriteria = (c: ContractCriteria) => Object.values(c).every((v) => v === null);
