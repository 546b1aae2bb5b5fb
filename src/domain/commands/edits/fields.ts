import { z } from 'zod';
import { NumericId } from '../../ids.js';
import { DecimalAmount } from '../../money.js';

/** Fields edit operations share. */
export const LineId = z.string().min(1).max(100).describe('The id of a line of the contract (lines[].id).');
export const VariantId = NumericId.describe('The product variant id: 1 to 19 digits, at most 9223372036854775807.');
export const Quantity = z.number().int().min(1).max(999).describe('How many, 1 to 999.');
export const UnitPrice = DecimalAmount.describe('The unit price in the contract\'s currency, e.g. "19.90"; omit to take the variant\'s price.');
