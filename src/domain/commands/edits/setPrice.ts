import { z } from 'zod';
import { currencyOf } from '../../contract.js';
import { clientPrice, defineEditOperation, lineIndex } from './operation.js';
import { LineId, UnitPrice } from './fields.js';

export const setPrice = defineEditOperation({
  op: 'set_price',
  input: z
    .strictObject({ op: z.literal('set_price'), lineId: LineId, price: UnitPrice.describe('The new unit price in the contract\'s currency, e.g. "26.50".') })
    .meta({ title: 'SetPrice', description: 'Set a line\'s unit price (a price rise, say); what is delivered stays.' }),
  apply(contract, input) {
    const i = lineIndex(contract, input.lineId);
    const before = contract.lines[i];
    const currencyCode = currencyOf(contract);
    const price = { amount: clientPrice(input.price, currencyCode), currencyCode };
    const lines = contract.lines.slice();
    lines[i] = { ...before, price };
    return { contract: { ...contract, lines }, change: { op: 'set_price', lineId: before.id, before: { price: before.price }, after: { price } } };
  },
});
