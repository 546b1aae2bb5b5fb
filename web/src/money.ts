import type { Money } from './api';

/**
 * Money as the merchant reads it, from the decimal string the server sends: Intl formats a numeric string exactly
 * (no float in between), in the merchant's locale. A currency code Intl does not know is shown as sent.
 */
export function formatMoney(amount: string, currencyCode: string): string {
  try {
    return new Intl.NumberFormat(undefined, { style: 'currency', currency: currencyCode }).format(amount as Intl.StringNumericLiteral);
  } catch {
    return `${amount} ${currencyCode}`;
  }
}

export const formatPrice = (m: Money) => formatMoney(m.amount, m.currencyCode);

const DECIMAL = /^(-?)(\d+)(?:\.(\d+))?$/;

/** A decimal string times a whole quantity, as a decimal string with the same places (BigInt: exact). */
export function multiplyAmount(amount: string, quantity: number): string | null {
  const m = DECIMAL.exec(amount.trim());
  if (!m || !Number.isSafeInteger(quantity)) return null;
  const [, sign, whole, fraction = ''] = m;
  const product = BigInt(whole + fraction) * BigInt(quantity);
  const digits = product.toString().padStart(fraction.length + 1, '0');
  const cut = digits.length - fraction.length;
  const negative = sign === '-' && product !== 0n;
  return `${negative ? '-' : ''}${digits.slice(0, cut)}${fraction ? `.${digits.slice(cut)}` : ''}`;
}
