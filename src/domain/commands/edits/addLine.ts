import { z } from 'zod';
import { currencyOf } from '../../contract.js';
import { normalizeAmount } from '../../money.js';
import { clientPrice, defineEditOperation, EditRejected } from './operation.js';
import { Quantity, UnitPrice, VariantId } from './fields.js';

/** A contract holds at most this many lines (the platform's mirror reads this many per contract). */
export const MAX_LINES = 40;

export const addLine = defineEditOperation({
  op: 'add_line',
  input: z
    .strictObject({ op: z.literal('add_line'), variantId: VariantId, quantity: Quantity, price: UnitPrice.optional() })
    .meta({ title: 'AddLine', description: 'Add a line: a variant delivered each cycle; the price is the variant\'s unless given.' }),
  apply(contract, input, { catalog, newId }) {
    if (contract.lines.length >= MAX_LINES) throw new EditRejected(`a contract has at most ${MAX_LINES} lines`);
    const variant = catalog?.variant(input.variantId);
    if (catalog && !variant) throw new EditRejected(`unknown variant "${input.variantId}"`);
    const currencyCode = currencyOf(contract);
    const amount = input.price !== undefined ? clientPrice(input.price, currencyCode) : normalizeAmount(variant?.price.amount ?? '0', currencyCode);
    const line = { id: newId(), title: variant?.title ?? '', variantId: input.variantId, quantity: input.quantity, price: { amount, currencyCode } };
    return { contract: { ...contract, lines: [...contract.lines, line] }, change: { op: 'add_line', lineId: line.id, before: null, after: line } };
  },
});
