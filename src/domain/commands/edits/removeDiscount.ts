import { z } from 'zod';
import { defineEditOperation, EditRejected } from './operation.js';

export const removeDiscount = defineEditOperation({
  op: 'remove_discount',
  input: z
    .strictObject({ op: z.literal('remove_discount'), discountId: z.string().min(1).max(100).describe('The id of a discount of the contract (discounts[].id).') })
    .meta({ title: 'RemoveDiscount', description: 'Remove a discount from every order from the next on.' }),
  apply(contract, input) {
    const before = contract.discounts.find((d) => d.id === input.discountId);
    if (!before) throw new EditRejected(`no discount with id "${input.discountId.slice(0, 64)}" on this contract`);
    return { contract: { ...contract, discounts: contract.discounts.filter((d) => d !== before) }, change: { op: 'remove_discount', discountId: before.id, before, after: null } };
  },
});
