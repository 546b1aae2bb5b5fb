import type { ContractView, ShippingAddress } from '../api';

/**
 * The contract edit form's state and the operations it sends (the API's edit body, docs/product.md §13): each
 * existing line's quantity, variant or removal, new lines, the frequency, the address and the discounts. Pure, so
 * the form stays a view.
 */

export type EditOperation =
  | { op: 'set_quantity'; lineId: string; quantity: number }
  | { op: 'swap_variant'; lineId: string; variantId: string }
  | { op: 'add_line'; variantId: string; quantity: number }
  | { op: 'remove_line'; lineId: string }
  | { op: 'set_frequency'; interval: string; intervalCount: number }
  | { op: 'set_shipping_address'; address: ShippingAddress }
  | { op: 'apply_discount_code'; code: string }
  | { op: 'remove_discount'; discountId: string };

export type LineForm = { lineId: string; title: string; variantId: string; quantity: string; remove: boolean };
export type NewLineForm = { key: number; variantId: string; quantity: string };
export type AddressForm = Record<keyof ShippingAddress, string>;
export type EditForm = {
  lines: LineForm[];
  newLines: NewLineForm[];
  interval: string;
  intervalCount: string;
  changeAddress: boolean;
  address: AddressForm;
  removeDiscounts: string[];
  discountCode: string;
};

export const ADDRESS_FIELDS: { name: keyof ShippingAddress; label: string; optional?: boolean; autoComplete: string }[] = [
  { name: 'firstName', label: 'First name', autoComplete: 'given-name' },
  { name: 'lastName', label: 'Last name', autoComplete: 'family-name' },
  { name: 'address1', label: 'Address', autoComplete: 'address-line1' },
  { name: 'address2', label: 'Apartment, suite, etc. (optional)', optional: true, autoComplete: 'address-line2' },
  { name: 'city', label: 'City', autoComplete: 'address-level2' },
  { name: 'provinceCode', label: 'State or province code (optional)', optional: true, autoComplete: 'address-level1' },
  { name: 'zip', label: 'Postal code', autoComplete: 'postal-code' },
  { name: 'countryCode', label: 'Country code', autoComplete: 'country' },
  { name: 'phone', label: 'Phone (optional)', optional: true, autoComplete: 'tel' },
];

/** The form as the contract is now: nothing changed yet. */
export function formOf(c: ContractView): EditForm {
  const a = c.shippingAddress;
  const address = Object.fromEntries(ADDRESS_FIELDS.map((f) => [f.name, (a?.[f.name] as string | null | undefined) ?? ''])) as AddressForm;
  return {
    lines: c.lines.filter((l) => l.id).map((l) => ({ lineId: l.id!, title: l.title, variantId: l.variantId, quantity: String(l.quantity), remove: false })),
    newLines: [],
    interval: c.billingPolicy.interval,
    intervalCount: String(c.billingPolicy.intervalCount),
    changeAddress: false,
    address,
    removeDiscounts: [],
    discountCode: '',
  };
}

/** A whole number as typed in a field, or NaN (the server then names the field). */
const whole = (s: string) => (/^\s*\d+\s*$/.test(s) ? Number(s) : Number.NaN);

/**
 * The operations that turn the contract into what the form says, in an order that applies: the lines' own changes,
 * then new lines, then removals (so a contract can swap its only line's product by adding and removing), then the
 * frequency, the address and the discounts.
 */
export function operationsOf(c: ContractView, f: EditForm): EditOperation[] {
  const ops: EditOperation[] = [];
  const removals: EditOperation[] = [];
  for (const l of f.lines) {
    const was = c.lines.find((x) => x.id === l.lineId);
    if (!was) continue;
    if (l.remove) {
      removals.push({ op: 'remove_line', lineId: l.lineId });
      continue;
    }
    if (l.variantId.trim() !== was.variantId) ops.push({ op: 'swap_variant', lineId: l.lineId, variantId: l.variantId.trim() });
    if (whole(l.quantity) !== was.quantity) ops.push({ op: 'set_quantity', lineId: l.lineId, quantity: whole(l.quantity) });
  }
  for (const n of f.newLines) ops.push({ op: 'add_line', variantId: n.variantId.trim(), quantity: whole(n.quantity) });
  ops.push(...removals);
  if (f.interval !== c.billingPolicy.interval || whole(f.intervalCount) !== c.billingPolicy.intervalCount) {
    ops.push({ op: 'set_frequency', interval: f.interval, intervalCount: whole(f.intervalCount) });
  }
  if (f.changeAddress) {
    const address = {} as ShippingAddress;
    for (const field of ADDRESS_FIELDS) {
      const v = f.address[field.name].trim();
      if (v || !field.optional) (address as Record<string, string>)[field.name] = field.name === 'countryCode' || field.name === 'provinceCode' ? v.toUpperCase() : v;
    }
    ops.push({ op: 'set_shipping_address', address });
  }
  for (const discountId of f.removeDiscounts) ops.push({ op: 'remove_discount', discountId });
  if (f.discountCode.trim()) ops.push({ op: 'apply_discount_code', code: f.discountCode.trim() });
  return ops;
}

/** An operation as the form names it, for the server's refusal of it ("operations.2: …"). */
export function describeOperation(c: ContractView, o: EditOperation): string {
  const title = (lineId: string) => c.lines.find((l) => l.id === lineId)?.title ?? 'a line';
  switch (o.op) {
    case 'set_quantity':
      return `The quantity of “${title(o.lineId)}”`;
    case 'swap_variant':
      return `The product of “${title(o.lineId)}”`;
    case 'add_line':
      return `The new line (variant ${o.variantId || 'not chosen'})`;
    case 'remove_line':
      return `Removing “${title(o.lineId)}”`;
    case 'set_frequency':
      return 'The frequency';
    case 'set_shipping_address':
      return 'The shipping address';
    case 'apply_discount_code':
      return `The discount code “${o.code}”`;
    case 'remove_discount':
      return 'Removing the discount';
  }
}

/** The server's details (`operations.<i>…`) in the form's words. */
export function explainDetails(c: ContractView, ops: EditOperation[], details: { path: string; message: string }[]): string[] {
  return details.map((d) => {
    const m = /^operations\.(\d+)(?:\.(.+))?$/.exec(d.path);
    const o = m ? ops[Number(m[1])] : undefined;
    if (!o) return d.message;
    const field = m![2] && !['lineId', 'op'].includes(m![2]) ? ` (${m![2]})` : '';
    return `${describeOperation(c, o)}${field}: ${d.message}`;
  });
}
