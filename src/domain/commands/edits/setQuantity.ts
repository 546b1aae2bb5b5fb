import { z } from 'zod';
import { defineEditOperation, lineIndex } from './operation.js';
import { LineId, Quantity } from './fields.js';

export const setQuantity = defineEditOperation({
  op: 'set_quantity',
  input: z.strictObject({ op: z.literal('set_quantity'), lineId: LineId, quantity: Quantity }).meta({ title: 'SetQuantity', description: 'Set how many of a line are delivered each cycle.' }),
  apply(contract, input) {
    const i = lineIndex(contract, input.lineId);
    const before = contract.lines[i];
    const lines = contract.lines.slice();
    lines[i] = { ...before, quantity: input.quantity };
    return { contract: { ...contract, lines }, change: { op: 'set_quantity', lineId: before.id, before: { quantity: before.quantity }, after: { quantity: input.quantity } } };
  },
});
