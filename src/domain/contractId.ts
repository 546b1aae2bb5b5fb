import { z } from 'zod';
import { MESSAGES, ServiceError } from './errors.js';
import { fitsInt8, isNumericIdShape, NUMERIC_ID_RULE } from './ids.js';

/**
 * docs/product.md §3: a contract id in a path is a string of 1 to 19 digits; anything else is 400 invalid_request.
 * One of that shape past int8 cannot exist: like another shop's contract, it is not found (404).
 */

/** The contract id as every surface validates and documents it (API path, MCP arguments). */
export const ContractId = z.string().regex(/^\d{1,19}$/, NUMERIC_ID_RULE);

/** Checks a contract id from a caller: invalid_request when it is not 1 to 19 digits; not_found when it is past int8. */
export function assertContractId(id: string): void {
  if (!isNumericIdShape(id)) throw new ServiceError('invalid_request', `contract_id ${NUMERIC_ID_RULE}.`, { details: [{ path: 'contract_id', message: NUMERIC_ID_RULE }] });
  if (!fitsInt8(id)) throw new ServiceError('not_found', MESSAGES.contractNotFound);
}
