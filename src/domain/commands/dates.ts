/** Rules on the dates commands take and record. */
import type { ContractState } from '../contract.js';
import type { ErrorDetail } from '../errors.js';
import { addYears, iso, parseUtcTimestamp, UtcTimestamp } from '../time.js';

export const FutureTimestamp = (what: string) =>
  UtcTimestamp.describe(`${what}: ISO 8601 in UTC ending in Z, strictly in the future and at most 5 years ahead.`);

/** Timestamps a caller sets must lie strictly in the future and at most 5 years ahead. */
export function futureTimestamps(input: Record<string, unknown>, fields: readonly string[], now: Date): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  const horizon = addYears(now, 5);
  for (const field of fields) {
    const value = input[field];
    if (typeof value !== 'string') continue;
    const at = parseUtcTimestamp(value)!;
    if (at.getTime() <= now.getTime()) details.push({ path: field, message: 'must be in the future' });
    else if (at.getTime() > horizon.getTime()) details.push({ path: field, message: 'must be at most 5 years ahead' });
  }
  return details;
}

export const billingChange = (before: ContractState, after: ContractState) => ({
  previousNextBillingDate: iso(before.nextBillingDate),
  nextBillingDate: iso(after.nextBillingDate),
});

