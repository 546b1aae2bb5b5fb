import { z } from 'zod';
import { MESSAGES, ServiceError } from './errors.js';

/** docs/product.md §3: a contract id in a path is a string of 1 to 19 digits; anything else is 400 invalid_request. */
const DIGITS = /^\d{1,19}$/;
const RULE = 'must be a string of 1 to 19 digits';
const INT8_MAX = 9223372036854775807n;

/** The contract id as every surface validates and documents it (API path, MCP arguments). */
export const ContractId = z.string().regex(DIGITS, RULE);

export const isContractId = (id: string): boolean => DIGITS.test(id);

/**
 * Checks a contract id from a caller: invalid_request when it is not 1 to 19 digits; not_found when it is past int8
 * (no contract can have it).
 */
export function assertContractId(id: string): void {
  if (!DIGITS.test(id)) throw new ServiceError('invalid_request', `contract_id ${RULE}.`, { details: [{ path: 'contract_id', message: RULE }] });
  if (id.length === 19 && BigInt(id) > INT8_MAX) throw new ServiceError('not_found', MESSAGES.contractNotFound);
}

/** An id that fits int8 (a cursor's last id, say). */
export const fitsInt8 = (id: string): boolean => DIGITS.test(id) && (id.length < 19 || BigInt(id) <= INT8_MAX);
