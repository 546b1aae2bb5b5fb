import { z } from 'zod';
import { currencyOf } from '../../contract.js';
import { normalizeAmount } from '../../money.js';
import { clientPrice, defineEditOperation, EditRejected, lineIndex } from './operation.js';
import { LineId, UnitPrice, VariantId } from './fields.js';

export const swapVariant = defineEditOperation({
  op: 'swap_variant',
  input: z
    .strictObject({ op: z.literal('swap_variant'), lineId: LineId, variantId: VariantId, price: UnitPrice.optional() })
    .meta({ title: 'SwapVariant', description: 'Deliver another variant on a line (its quantity stays); the price is the variant\'s unless given.' }),
  apply(contract, input, { catalog }) {
    const i = lineIndex(contract, input.lineId);
    const before = contract.lines[i];
    const variant = catalog?.variant(input.variantId);
    if (catalog && !variant) throw new EditRejected(`unknown variant "${input.variantId}"`);
    const currencyCode = currencyOf(contract);
    const amount = input.price !== undefined ? clientPrice(input.price, currencyCode) : normalizeAmount(variant?.price.amount ?? before.price.amount, currencyCode);
    const after = { ...before, variantId: input.variantId, title: variant?.title ?? before.title, price: { amount, currencyCode } };
    const lines = contract.lines.slice();
    lines[i] = after;
    return {
      contract: { ...contract, lines },
      change: { op: 'swap_variant', lineId: before.id, before: { variantId: before.variantId, title: before.title, price: before.price }, after: { variantId: after.variantId, title: after.title, price: after.price } },
    };
  },
});
