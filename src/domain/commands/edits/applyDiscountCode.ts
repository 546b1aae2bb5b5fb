import { z } from 'zod';
import { StoredText } from '../../text.js';
import { defineEditOperation, EditRejected } from './operation.js';

export const applyDiscountCode = defineEditOperation({
  op: 'apply_discount_code',
  input: z
    .strictObject({ op: z.literal('apply_discount_code'), code: StoredText(100).min(1).describe('The discount code, as the customer would type it.') })
    .meta({ title: 'ApplyDiscountCode', description: 'Apply a discount code to every order from the next on.' }),
  apply(contract, input, { catalog, newId }) {
    const code = input.code.trim();
    if (contract.discounts.some((d) => d.code !== null && d.code.toLowerCase() === code.toLowerCase())) throw new EditRejected(`the code "${code.slice(0, 40)}" is already applied`);
    const found = catalog ? catalog.discount(code) : { title: code, code, value: { type: 'percentage' as const, percentage: 0 } };
    if (!found) throw new EditRejected(`the code "${code.slice(0, 40)}" does not exist or does not apply to this contract`);
    const discount = { id: newId(), ...found };
    return { contract: { ...contract, discounts: [...contract.discounts, discount] }, change: { op: 'apply_discount_code', discountId: discount.id, before: null, after: discount } };
  },
});
