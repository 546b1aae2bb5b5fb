import { z } from 'zod';
import { ACTION_BODIES } from './actions.js';
import type { ContractState, Line, Totals } from './contract.js';
import { ContractId } from './contractId.js';
import { fitsInt8 } from './ids.js';
import { ContractFilter } from './contractFilter.js';
import { addLine } from './commands/edits/addLine.js';
import { applyDiscountCode } from './commands/edits/applyDiscountCode.js';
import { Quantity, UnitPrice, VariantId } from './commands/edits/fields.js';
import { setFrequency } from './commands/edits/setFrequency.js';
import { setShippingAddress } from './commands/edits/setShippingAddress.js';
import type { EditOperation } from './commands/edits/index.js';
import { ACTION_NAMES, type ActionName } from './commands/registry.js';
import { currencyDigits, fromUnits, toUnits } from './money.js';
import { unreachable } from './unreachable.js';

/**
 * Bulk jobs (docs/product.md §15), purely: what a job is asked (a selector and a change), how a change becomes each
 * contract's command (its lines named by variant, since line ids differ per contract), and how totals add up.
 */

/** A job's selector matches at most this many contracts (422 too_many_contracts beyond). */
export const MAX_BULK_CONTRACTS = 100_000;
/** Jobs of a shop not yet ended, at most (409 too_many_jobs beyond). */
export const MAX_UNFINISHED_JOBS = 10;
/** A previewed job not started within this long expires. */
export const PREVIEW_TTL_MS = 24 * 60 * 60_000;
/** Jobs and their results are kept this long after they end. */
export const BULK_JOB_RETENTION_MS = 30 * 24 * 60 * 60_000;

export const BULK_JOB_STATUSES = ['previewing', 'previewed', 'queued', 'running', 'completed', 'cancelled', 'failed', 'expired'] as const;
export type BulkJobStatus = (typeof BULK_JOB_STATUSES)[number];
/** A job in one of these has not ended: it counts against the shop's ten, and may be cancelled. */
export const UNFINISHED: readonly BulkJobStatus[] = ['previewing', 'previewed', 'queued', 'running'];
export const isUnfinished = (s: BulkJobStatus) => UNFINISHED.includes(s);

export const ITEM_STATUSES = ['pending', 'succeeded', 'failed', 'skipped'] as const;
export type ItemStatus = (typeof ITEM_STATUSES)[number];

export const Selector = z.union([
  z
    .strictObject({
      contractIds: z
        .array(ContractId.refine(fitsInt8, { message: 'is not a contract id (too large)' }))
        .min(1)
        .max(MAX_BULK_CONTRACTS)
        .refine((ids) => new Set(ids).size === ids.length, { message: 'must not name a contract twice' })
        .describe(`The contracts, by id: 1 to ${MAX_BULK_CONTRACTS.toLocaleString('en')} distinct ids.`),
    })
    .meta({ title: 'ContractIdsSelector' }),
  z.strictObject({ filter: ContractFilter.describe('The contracts matching this filter; {} is every contract of the shop.') }).meta({ title: 'FilterSelector' }),
]);
export type Selector = z.infer<typeof Selector>;

// Line operations name their lines by variant: every line of that variant in a contract.
const SetQuantityByVariant = z
  .strictObject({ op: z.literal('set_quantity'), variantId: VariantId, quantity: Quantity })
  .meta({ title: 'BulkSetQuantity', description: 'Set the quantity of every line of this variant.' });
const SwapVariantByVariant = z
  .strictObject({ op: z.literal('swap_variant'), fromVariantId: VariantId.describe('The variant to replace.'), variantId: VariantId, price: UnitPrice.optional() })
  .meta({ title: 'BulkSwapVariant', description: 'Deliver another variant on every line of fromVariantId (quantities stay); the price is the variant\'s unless given.' });
const SetPriceByVariant = z
  .strictObject({ op: z.literal('set_price'), variantId: VariantId, price: UnitPrice.describe('The new unit price, e.g. "26.50".') })
  .meta({ title: 'BulkSetPrice', description: 'Set the unit price of every line of this variant (a price rise).' });
const RemoveVariant = z
  .strictObject({ op: z.literal('remove_variant'), variantId: VariantId })
  .meta({ title: 'BulkRemoveVariant', description: 'Remove every line of this variant (a contract\'s last line cannot be removed: that contract fails with invalid_edit).' });

export const BulkOperation = z
  .discriminatedUnion('op', [SetQuantityByVariant, SwapVariantByVariant, SetPriceByVariant, RemoveVariant, addLine.input, setFrequency.input, setShippingAddress.input, applyDiscountCode.input] as unknown as [
    z.ZodObject,
    ...z.ZodObject[],
  ])
  .meta({ id: 'BulkEditOperation' });
export type BulkOperation =
  | z.infer<typeof SetQuantityByVariant>
  | z.infer<typeof SwapVariantByVariant>
  | z.infer<typeof SetPriceByVariant>
  | z.infer<typeof RemoveVariant>
  | Extract<EditOperation, { op: 'add_line' | 'set_frequency' | 'set_shipping_address' | 'apply_discount_code' }>;

/** The actions a bulk job may run: every action but bill_now (a job never charges customers). */
export const BULK_ACTION_NAMES = ACTION_NAMES.filter((n): n is Exclude<ActionName, 'bill_now'> => n !== 'bill_now');
export type BulkActionName = (typeof BULK_ACTION_NAMES)[number];

export const BulkEdit = z.strictObject({ operations: z.array(BulkOperation).min(1).max(20).describe('Applied in order to each contract, all or nothing per contract.') }).meta({ title: 'BulkEdit' });

export const BulkChange = z
  .union([...BULK_ACTION_NAMES.map((n) => ACTION_BODIES[n]), BulkEdit] as unknown as [z.ZodObject, ...z.ZodObject[]])
  .meta({ id: 'BulkChange', description: 'An action body of POST …/actions (every action but bill_now), or edit operations whose lines are named by variant.' });
export type BulkChange = { action: BulkActionName; [field: string]: unknown } | { operations: BulkOperation[] };

export const isEdit = (c: BulkChange): c is { operations: BulkOperation[] } => 'operations' in c;

/** The variants a change names to look up (standalone's catalog): those added or swapped to. */
export function variantsNamed(c: BulkChange): string[] {
  if (!isEdit(c)) return [];
  return c.operations.flatMap((o) => (o.op === 'add_line' || o.op === 'swap_variant' ? [o.variantId] : []));
}

/** A contract without a line of a variant a line operation names: the item is skipped with no_matching_line. */
export class NoMatchingLine extends Error {
  constructor(readonly variantId: string) {
    super(`the contract has no line of variant ${variantId}`);
  }
}

const linesOf = (lines: readonly Line[], variantId: string): Line[] => {
  const found = lines.filter((l) => l.variantId === variantId);
  if (!found.length) throw new NoMatchingLine(variantId);
  return found;
};

/**
 * A bulk edit as one contract's edit operations: each line operation becomes one operation per line of its variant,
 * in the order the contract holds them. Throws NoMatchingLine for a line operation that finds none.
 */
export function editOperationsFor(contract: Pick<ContractState, 'lines'>, operations: readonly BulkOperation[]): EditOperation[] {
  const out: EditOperation[] = [];
  for (const o of operations) {
    switch (o.op) {
      case 'set_quantity':
        for (const l of linesOf(contract.lines, o.variantId)) out.push({ op: 'set_quantity', lineId: l.id, quantity: o.quantity });
        break;
      case 'swap_variant':
        for (const l of linesOf(contract.lines, o.fromVariantId)) out.push({ op: 'swap_variant', lineId: l.id, variantId: o.variantId, ...(o.price !== undefined && { price: o.price }) });
        break;
      case 'set_price':
        for (const l of linesOf(contract.lines, o.variantId)) out.push({ op: 'set_price', lineId: l.id, price: o.price });
        break;
      case 'remove_variant':
        for (const l of linesOf(contract.lines, o.variantId)) out.push({ op: 'remove_line', lineId: l.id });
        break;
      case 'add_line':
      case 'set_frequency':
      case 'set_shipping_address':
      case 'apply_discount_code':
        // Not about a line: as section 13 has them.
        out.push(o);
        break;
      default:
        return unreachable(o);
    }
  }
  return out;
}

/** Next-order totals before and after, summed per currency (exactly, in minor units). */
export type CurrencyTotals = { currencyCode: string; before: string; after: string };

export function sumTotals(rows: readonly { currencyCode: string; before: string; after: string }[]): CurrencyTotals[] {
  const by = new Map<string, { before: bigint; after: bigint }>();
  for (const r of rows) {
    const scale = currencyDigits(r.currencyCode);
    const t = by.get(r.currencyCode) ?? { before: 0n, after: 0n };
    t.before += toUnits(r.before, scale);
    t.after += toUnits(r.after, scale);
    by.set(r.currencyCode, t);
  }
  return [...by.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([currencyCode, t]) => ({ currencyCode, before: fromUnits(t.before, currencyDigits(currencyCode)), after: fromUnits(t.after, currencyDigits(currencyCode)) }));
}

/** The totals an item records: the next order's total before and after its change. */
export const itemTotals = (before: Totals, after: Totals) => ({ currencyCode: before.currencyCode, before: before.total, after: after.total });

const Timestamp = z.string().meta({ format: 'date-time', example: '2026-12-01T00:00:00.000Z' });
const ItemTotal = z.object({ total: z.string(), currencyCode: z.string() });

/** A bulk job as clients see it (docs/product.md §15). */
export const BulkJobResource = z
  .object({
    id: z.string(),
    status: z.enum(BULK_JOB_STATUSES),
    preview: z.boolean().describe('Made as a preview.'),
    selector: z.unknown().describe('The selector as given; a list of ids shows as { "contractIds": { "count": n } } (the ids are the results).'),
    change: z.unknown().describe('The change as given.'),
    counts: z
      .object({ matched: z.number().int(), pending: z.number().int(), succeeded: z.number().int(), failed: z.number().int(), skipped: z.number().int() })
      .describe('pending + succeeded + failed + skipped = matched, at every moment. In a preview, succeeded means it would.'),
    totals: z
      .array(z.object({ currencyCode: z.string(), before: z.string(), after: z.string() }))
      .describe('Per currency, the next order total of the contracts that succeed (or would), before and after the change.'),
    createdBy: z.object({ type: z.string(), keyId: z.string().optional() }),
    createdAt: Timestamp,
    startedAt: Timestamp.nullable(),
    finishedAt: Timestamp.nullable(),
    expiresAt: Timestamp.nullable().describe('A previewed job not started by then expires.'),
    error: z.object({ code: z.string(), message: z.string() }).nullable().describe('Why a failed job could not go on.'),
  })
  .meta({ id: 'BulkJob' });

export const BulkJobResultResource = z
  .object({
    contractId: z.string(),
    status: z.enum(ITEM_STATUSES),
    error: z.object({ code: z.string(), message: z.string(), details: z.array(z.object({ path: z.string(), message: z.string() })).optional() }).optional(),
    before: ItemTotal.optional().describe('The contract\'s next order total before the change.'),
    after: ItemTotal.optional().describe('… and after it (succeeded, or in a preview would).'),
    eventId: z.string().optional().describe('The event the change recorded (not in a preview).'),
  })
  .meta({ id: 'BulkJobResult' });
