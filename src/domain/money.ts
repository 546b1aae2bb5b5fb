import { z } from 'zod';

/**
 * Money, exactly: amounts travel as decimal strings ("24.00") and are computed in integer minor units (BigInt), so no
 * amount ever passes through a float. A currency's minor unit is ISO 4217's, as the runtime's Intl data has it
 * (EUR 2, JPY 0, KWD 3).
 */

export const DecimalAmount = z
  .string()
  .regex(/^\d{1,13}(\.\d{1,4})?$/, { message: 'must be a decimal amount such as "24.00" (no sign, at most 4 decimals)' })
  .meta({ example: '24.00' });

export const CurrencyCode = z.string().regex(/^[A-Z]{3}$/, { message: 'must be an ISO 4217 currency code such as "EUR"' });

export const Money = z.object({ amount: DecimalAmount, currencyCode: CurrencyCode }).meta({ id: 'Money' });
export type Money = z.infer<typeof Money>;

const digitsCache = new Map<string, number>();

/** The number of decimals of a currency's minor unit (2 when the runtime does not know the code). */
export function currencyDigits(currencyCode: string): number {
  let digits = digitsCache.get(currencyCode);
  if (digits === undefined) {
    try {
      digits = new Intl.NumberFormat('en', { style: 'currency', currency: currencyCode }).resolvedOptions().maximumFractionDigits ?? 2;
    } catch {
      digits = 2;
    }
    digitsCache.set(currencyCode, digits);
  }
  return digits;
}

/** A decimal string as an integer count of 10^-scale units (extra decimals must be zero to be exact: rounded half up). */
export function toUnits(amount: string, scale: number): bigint {
  const [whole, frac = ''] = amount.split('.');
  const kept = frac.slice(0, scale).padEnd(scale, '0');
  let units = BigInt(whole + kept);
  const rest = frac.slice(scale);
  if (rest && rest[0] >= '5') units += 1n;
  return units;
}

/** Integer units of 10^-scale as a decimal string with exactly `scale` decimals. */
export function fromUnits(units: bigint, scale: number): string {
  const negative = units < 0n;
  const digits = (negative ? -units : units).toString().padStart(scale + 1, '0');
  const text = scale ? `${digits.slice(0, -scale)}.${digits.slice(-scale)}` : digits;
  return negative ? `-${text}` : text;
}

/** Integer digits an amount may have (DecimalAmount): every amount svc answers stays within them too. */
export const MAX_AMOUNT_INTEGER_DIGITS = 13;

/** The largest amount in a currency, in its units: 13 nines and its decimals' ("9999999999999.99" EUR). */
export const maxAmountUnits = (scale: number): bigint => 10n ** BigInt(MAX_AMOUNT_INTEGER_DIGITS + scale) - 1n;

/**
 * The amount written with its currency's decimals ("24.5" EUR → "24.50"), or null when it has more decimals than the
 * currency (its minor unit) can hold and they are not zeros ("24.999" EUR): such a price would be rounded, a value
 * changed silently.
 */
export function exactAmount(amount: string, currencyCode: string): string | null {
  const scale = currencyDigits(currencyCode);
  const frac = amount.split('.')[1] ?? '';
  if (/[^0]/.test(frac.slice(scale))) return null;
  return fromUnits(toUnits(amount, scale), scale);
}

/** An amount written with its currency's decimals ("24" EUR → "24.00"). */
export const normalizeAmount = (amount: string, currencyCode: string): string => {
  const scale = currencyDigits(currencyCode);
  return fromUnits(toUnits(amount, scale), scale);
};

/** amount × percent / 100, rounded half up to the currency's minor unit, in units. */
export function percentOf(units: bigint, percent: number): bigint {
  // Percent as an integer of hundredths (12.5 % → 1250) keeps the product exact.
  const hundredths = BigInt(Math.round(percent * 100));
  return (units * hundredths + 5_000n) / 10_000n;
}
