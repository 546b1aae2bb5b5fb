import { z } from 'zod';

/**
 * Ids as clients send them: one rule per kind of id, as wide as the column that holds it, so an id that cannot exist
 * is refused by what it looks like and never reaches the database as a value its column cannot take (a range error,
 * a 500). Where a client names a resource in a path, an id that cannot exist is a missing resource (404); as a field
 * of a request (an edit's variant, a filter), it is a bad request (400 invalid_request) saying the rule.
 */

/** The largest bigint (int8): ids of contracts, variants, events, webhook deliveries. */
export const INT8_MAX = 9223372036854775807n;
const DIGITS = /^\d{1,19}$/;
export const NUMERIC_ID_RULE = 'must be a string of 1 to 19 digits';
const NUMERIC_ID_RANGE_RULE = `${NUMERIC_ID_RULE}, at most ${INT8_MAX}`;

/** 1 to 19 digits: the shape of every numeric id (it may still be past int8: see fitsInt8). */
export const isNumericIdShape = (id: string): boolean => DIGITS.test(id);

/** A numeric id a bigint column can hold: 1 to 19 digits, at most 9223372036854775807. */
export const fitsInt8 = (id: string): boolean => DIGITS.test(id) && (id.length < 19 || BigInt(id) <= INT8_MAX);

/** A numeric id in a request's fields (a variant, say): 400 invalid_request past int8, saying so. */
export const NumericId = z
  .string()
  .regex(DIGITS, { message: NUMERIC_ID_RULE })
  .refine((id) => !DIGITS.test(id) || fitsInt8(id), { message: NUMERIC_ID_RANGE_RULE });

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The ids svc makes as UUIDs (keys, webhook endpoints, billing attempts, lines): a uuid column takes nothing else. */
export const isUuid = (id: string): boolean => UUID.test(id);

/** A UUID in a request's fields or query (400 invalid_request with `rule` otherwise). */
export const UuidId = (rule: string) => z.string().regex(UUID, rule);
