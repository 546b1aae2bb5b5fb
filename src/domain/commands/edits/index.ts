import { z } from 'zod';
import { addLine } from './addLine.js';
import { applyDiscountCode } from './applyDiscountCode.js';
import { removeDiscount } from './removeDiscount.js';
import { removeLine } from './removeLine.js';
import { setFrequency } from './setFrequency.js';
import { setQuantity } from './setQuantity.js';
import { setPrice } from './setPrice.js';
import { setShippingAddress } from './setShippingAddress.js';
import { swapVariant } from './swapVariant.js';

/**
 * Every kind of edit, by its `op`. An operation's schema, the API's and MCP's, the OpenAPI document and the platform
 * port's switch all come from here: a new kind is one module and one line below (and its platform implementation,
 * which the compiler then asks for).
 */
export const EDIT_OPERATIONS = {
  set_quantity: setQuantity,
  set_price: setPrice,
  swap_variant: swapVariant,
  add_line: addLine,
  remove_line: removeLine,
  set_frequency: setFrequency,
  set_shipping_address: setShippingAddress,
  apply_discount_code: applyDiscountCode,
  remove_discount: removeDiscount,
} as const;

export type EditOperations = typeof EDIT_OPERATIONS;
export type EditOperationName = keyof EditOperations;
export const EDIT_OPERATION_NAMES = Object.keys(EDIT_OPERATIONS) as EditOperationName[];

/**
 * The kind of edit a client named, or undefined. Only the table's own entries count: `__proto__`, `constructor` or
 * `toString` would otherwise be found on Object.prototype and taken for an operation.
 */
export function editOperationNamed(op: unknown): EditOperations[EditOperationName] | undefined {
  return typeof op === 'string' && Object.hasOwn(EDIT_OPERATIONS, op) ? EDIT_OPERATIONS[op as EditOperationName] : undefined;
}

/** One operation as a caller sends it, whichever kind. */
export type EditOperation = { [K in EditOperationName]: z.infer<EditOperations[K]['input']> }[EditOperationName];

const schemas = Object.values(EDIT_OPERATIONS).map((o) => o.input) as unknown as [z.ZodObject, ...z.ZodObject[]];
export const EditOperationSchema = z.discriminatedUnion('op', schemas).meta({ id: 'EditOperation' });
