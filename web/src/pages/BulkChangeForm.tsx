import { BlockStack, InlineGrid, Select, Text, TextField } from '@shopify/polaris';
import type { BulkChange, ErrorDetail } from '../api';

/**
 * What a bulk change does, as the merchant picks it: an action (every one but bill_now: a bulk job never charges
 * customers) or an edit whose lines are named by their variant (docs/bulk-jobs.md). The form's fields become the
 * job's `change`; the server validates it, and its complaints are shown on the fields they name.
 */
export type ChangeKind =
  | 'pause'
  | 'resume'
  | 'cancel'
  | 'skip'
  | 'reschedule'
  | 'set_price'
  | 'set_quantity'
  | 'swap_variant'
  | 'remove_variant'
  | 'add_line'
  | 'set_frequency'
  | 'set_shipping_address'
  | 'apply_discount_code';

export type ChangeFields = Record<string, string>;

export const KIND_OPTIONS = [
  {
    title: 'Actions',
    options: [
      { label: 'Pause', value: 'pause' },
      { label: 'Resume', value: 'resume' },
      { label: 'Cancel', value: 'cancel' },
      { label: 'Skip the next order', value: 'skip' },
      { label: 'Reschedule the next billing date', value: 'reschedule' },
    ],
  },
  {
    title: 'Edits',
    options: [
      { label: 'Set the price of a variant', value: 'set_price' },
      { label: 'Set the quantity of a variant', value: 'set_quantity' },
      { label: 'Swap a variant for another', value: 'swap_variant' },
      { label: 'Remove a variant', value: 'remove_variant' },
      { label: 'Add a product', value: 'add_line' },
      { label: 'Change the billing frequency', value: 'set_frequency' },
      { label: 'Set the shipping address', value: 'set_shipping_address' },
      { label: 'Apply a discount code', value: 'apply_discount_code' },
    ],
  },
];

const ACTIONS = ['pause', 'resume', 'cancel', 'skip', 'reschedule'] as const;

const pad = (n: number) => String(n).padStart(2, '0');
export const toDateField = (d: Date) => `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
const inDays = (days: number) => {
  const d = new Date();
  d.setDate(d.getDate() + days);
  return d;
};
/** A date field's day at the start of the merchant's day, as the UTC instant the API takes. */
function dayStart(value: string): string | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!m) return null;
  const d = new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}

export class FormProblem extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

const required = (fields: ChangeFields, name: string, what: string) => {
  const v = (fields[name] ?? '').trim();
  if (!v) throw new FormProblem(name, `Enter ${what}.`);
  return v;
};
const optional = (fields: ChangeFields, name: string) => (fields[name] ?? '').trim() || undefined;
const whole = (fields: ChangeFields, name: string, what: string) => {
  const v = required(fields, name, what);
  if (!/^\d+$/.test(v)) throw new FormProblem(name, `${what[0].toUpperCase()}${what.slice(1)} is a whole number.`);
  return Number(v);
};

/** The job's change from the form; throws FormProblem naming the field to fix. */
export function changeOf(kind: ChangeKind, f: ChangeFields): BulkChange {
  switch (kind) {
    case 'pause': {
      if (!f.resumeOn) return { action: 'pause' };
      const resumeAt = dayStart(f.resumeOn);
      if (!resumeAt) throw new FormProblem('resumeOn', 'Enter the resume date as a day of the calendar.');
      return { action: 'pause', resumeAt };
    }
    case 'resume':
    case 'skip':
      return { action: kind };
    case 'cancel':
      return optional(f, 'reason') ? { action: 'cancel', reason: optional(f, 'reason') } : { action: 'cancel' };
    case 'reschedule': {
      const nextBillingDate = dayStart(f.billOn ?? '');
      if (!nextBillingDate) throw new FormProblem('billOn', 'Choose the new next billing date.');
      return { action: 'reschedule', nextBillingDate };
    }
    case 'set_price':
      return { operations: [{ op: 'set_price', variantId: required(f, 'variantId', 'the variant ID'), price: required(f, 'price', 'the new price') }] };
    case 'set_quantity':
      return { operations: [{ op: 'set_quantity', variantId: required(f, 'variantId', 'the variant ID'), quantity: whole(f, 'quantity', 'the quantity') }] };
    case 'swap_variant': {
      const price = optional(f, 'price');
      return {
        operations: [
          { op: 'swap_variant', fromVariantId: required(f, 'fromVariantId', 'the variant to replace'), variantId: required(f, 'toVariantId', 'the new variant'), ...(price ? { price } : {}) },
        ],
      };
    }
    case 'remove_variant':
      return { operations: [{ op: 'remove_variant', variantId: required(f, 'variantId', 'the variant ID') }] };
    case 'add_line': {
      const price = optional(f, 'price');
      return { operations: [{ op: 'add_line', variantId: required(f, 'toVariantId', 'the variant ID'), quantity: whole(f, 'quantity', 'the quantity'), ...(price ? { price } : {}) }] };
    }
    case 'set_frequency':
      return {
        operations: [
          {
            op: 'set_frequency',
            interval: (f.interval || 'MONTH') as 'DAY' | 'WEEK' | 'MONTH' | 'YEAR',
            intervalCount: whole(f, 'intervalCount', 'how many'),
          },
        ],
      };
    case 'set_shipping_address': {
      const address = {
        firstName: required(f, 'firstName', 'the first name'),
        lastName: required(f, 'lastName', 'the last name'),
        address1: required(f, 'address1', 'the address'),
        ...(optional(f, 'address2') ? { address2: optional(f, 'address2') } : {}),
        city: required(f, 'city', 'the city'),
        ...(optional(f, 'provinceCode') ? { provinceCode: optional(f, 'provinceCode') } : {}),
        zip: required(f, 'zip', 'the postal code'),
        countryCode: required(f, 'countryCode', 'the country code').toUpperCase(),
        ...(optional(f, 'phone') ? { phone: optional(f, 'phone') } : {}),
      };
      return { operations: [{ op: 'set_shipping_address', address }] };
    }
    case 'apply_discount_code':
      return { operations: [{ op: 'apply_discount_code', code: required(f, 'code', 'the discount code') }] };
  }
}

export const isAction = (kind: ChangeKind) => (ACTIONS as readonly string[]).includes(kind);

/** The form's field a server complaint names (`change.resumeAt`, `change.operations.0.address.zip`), or null. */
export function fieldOf(kind: ChangeKind, detail: ErrorDetail): string | null {
  const last = detail.path.split('.').pop() ?? '';
  const byName: Record<string, string> = { resumeAt: 'resumeOn', nextBillingDate: 'billOn' };
  if (last === 'variantId' && (kind === 'swap_variant' || kind === 'add_line')) return 'toVariantId';
  return byName[last] ?? (last && !/^\d+$/.test(last) ? last : null);
}

/** The fields of the chosen change, with the server's complaints (`errors`) on the fields they name. */
export function ChangeFieldsForm({ kind, fields, onChange, errors }: { kind: ChangeKind; fields: ChangeFields; onChange: (f: ChangeFields) => void; errors: Record<string, string> }) {
  const field = (name: string, label: string, extra: Partial<Parameters<typeof TextField>[0]> = {}) => (
    <TextField label={label} value={fields[name] ?? ''} onChange={(v) => onChange({ ...fields, [name]: v })} error={errors[name]} autoComplete="off" {...extra} />
  );
  switch (kind) {
    case 'pause':
      return (
        <BlockStack gap="200">
          <Text as="p">A paused contract is not billed. It resumes on the resume date, or when it is resumed.</Text>
          {field('resumeOn', 'Resume date (optional)', {
            type: 'date',
            min: toDateField(inDays(1)),
            max: toDateField(inDays(5 * 365)),
            helpText: 'Leave it empty to keep the contracts paused until they are resumed.',
          })}
        </BlockStack>
      );
    case 'resume':
      return <Text as="p">Paused and failed contracts become active again; a next billing date in the past moves to the next one ahead.</Text>;
    case 'skip':
      return <Text as="p">Each active contract’s next billing date moves one billing interval later.</Text>;
    case 'cancel':
      return (
        <BlockStack gap="200">
          <Text as="p">Cancelled contracts are not billed again. Cancelling is final: a cancelled contract cannot be resumed.</Text>
          {field('reason', 'Reason (optional)', { multiline: 2, maxLength: 500, showCharacterCount: true })}
        </BlockStack>
      );
    case 'reschedule':
      return field('billOn', 'New next billing date', { type: 'date', min: toDateField(inDays(1)), max: toDateField(inDays(5 * 365)), helpText: 'At the start of that day.' });
    case 'set_price':
      return (
        <InlineGrid columns={{ xs: 1, sm: 2 }} gap="300">
          {field('variantId', 'Variant ID', { inputMode: 'numeric' })}
          {field('price', 'New unit price', { inputMode: 'decimal', placeholder: '26.50', helpText: 'In each contract’s currency.' })}
        </InlineGrid>
      );
    case 'set_quantity':
      return (
        <InlineGrid columns={{ xs: 1, sm: 2 }} gap="300">
          {field('variantId', 'Variant ID', { inputMode: 'numeric' })}
          {field('quantity', 'Quantity', { type: 'number', min: 1, max: 999 })}
        </InlineGrid>
      );
    case 'swap_variant':
      return (
        <InlineGrid columns={{ xs: 1, sm: 3 }} gap="300">
          {field('fromVariantId', 'Replace variant ID', { inputMode: 'numeric' })}
          {field('toVariantId', 'With variant ID', { inputMode: 'numeric' })}
          {field('price', 'Unit price (optional)', { inputMode: 'decimal', helpText: 'Empty: the variant’s price.' })}
        </InlineGrid>
      );
    case 'remove_variant':
      return (
        <BlockStack gap="200">
          {field('variantId', 'Variant ID', { inputMode: 'numeric' })}
          <Text as="p" tone="subdued">
            A contract whose only line is this variant is not changed (cancel it instead).
          </Text>
        </BlockStack>
      );
    case 'add_line':
      return (
        <InlineGrid columns={{ xs: 1, sm: 3 }} gap="300">
          {field('toVariantId', 'Variant ID', { inputMode: 'numeric' })}
          {field('quantity', 'Quantity', { type: 'number', min: 1, max: 999 })}
          {field('price', 'Unit price (optional)', { inputMode: 'decimal', helpText: 'Empty: the variant’s price.' })}
        </InlineGrid>
      );
    case 'set_frequency':
      return (
        <InlineGrid columns={{ xs: 1, sm: 2 }} gap="300">
          {field('intervalCount', 'Every', { type: 'number', min: 1 })}
          <Select
            label="Interval"
            options={[
              { label: 'Days', value: 'DAY' },
              { label: 'Weeks', value: 'WEEK' },
              { label: 'Months', value: 'MONTH' },
              { label: 'Years', value: 'YEAR' },
            ]}
            value={fields.interval || 'MONTH'}
            onChange={(v) => onChange({ ...fields, interval: v })}
          />
        </InlineGrid>
      );
    case 'set_shipping_address':
      return (
        <InlineGrid columns={{ xs: 1, sm: 2 }} gap="300">
          {field('firstName', 'First name')}
          {field('lastName', 'Last name')}
          {field('address1', 'Address')}
          {field('address2', 'Apartment, suite (optional)')}
          {field('city', 'City')}
          {field('provinceCode', 'Province code (optional)')}
          {field('zip', 'Postal code')}
          {field('countryCode', 'Country code', { placeholder: 'DE', maxLength: 2 })}
          {field('phone', 'Phone (optional)', { type: 'tel' })}
        </InlineGrid>
      );
    case 'apply_discount_code':
      return field('code', 'Discount code');
  }
}
