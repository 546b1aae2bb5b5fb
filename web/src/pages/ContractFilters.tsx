import { BlockStack, Checkbox, InlineGrid, InlineStack, Select, Text, TextField } from '@shopify/polaris';
import { useEffect, useRef, useState } from 'react';
import type { ContractFilter, ContractStatus } from '../api';
import { BILLING_FILTERS } from '../billingText';
import { STATUS_LABEL } from '../format';

/**
 * The Contracts page's filters: the ones a bulk job's selector takes (statuses, the customer's exact email, a variant,
 * a window of next billing dates), so what the list shows is what "Change N contracts…" changes. They live in the
 * address (status repeated; the dates as days of the merchant's calendar).
 */
/** `billing`: one of BILLING_FILTERS' values (payment trouble, say), '' for any. */
export type FilterState = { statuses: ContractStatus[]; billing: string; customerEmail: string; variantId: string; billingFrom: string; billingTo: string };

const STATUSES = Object.keys(STATUS_LABEL) as ContractStatus[];
const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;
/** How long typing may pause before the list follows an email or a variant. */
const TYPING_MS = 400;

export const EMPTY_FILTERS: FilterState = { statuses: [], billing: '', customerEmail: '', variantId: '', billingFrom: '', billingTo: '' };

export function readFilters(search: URLSearchParams): FilterState {
  const day = (v: string | null) => (v && DAY.test(v) ? v : '');
  return {
    statuses: STATUSES.filter((s) => search.getAll('status').includes(s)),
    billing: BILLING_FILTERS.some((f) => f.value === search.get('billing')) ? search.get('billing')! : '',
    customerEmail: search.get('customerEmail') ?? '',
    variantId: search.get('variantId') ?? '',
    billingFrom: day(search.get('billingFrom')),
    billingTo: day(search.get('billingTo')),
  };
}

export function writeFilters(f: FilterState, params: URLSearchParams): void {
  for (const s of f.statuses) params.append('status', s);
  if (f.billing) params.set('billing', f.billing);
  if (f.customerEmail) params.set('customerEmail', f.customerEmail);
  if (f.variantId) params.set('variantId', f.variantId);
  if (f.billingFrom) params.set('billingFrom', f.billingFrom);
  if (f.billingTo) params.set('billingTo', f.billingTo);
}

export const hasFilters = (f: FilterState) => f.statuses.length > 0 || Boolean(f.billing || f.customerEmail || f.variantId || f.billingFrom || f.billingTo);

const isVariantId = (v: string) => /^\d{1,19}$/.test(v);

/** A day of the merchant's calendar, from its first or to its last millisecond, as the UTC instant the API takes. */
function dayBound(value: string, end: boolean): string | undefined {
  const m = DAY.exec(value);
  if (!m) return undefined;
  const d = end ? new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]), 23, 59, 59, 999) : new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}

/** The filter as the API takes it (the contract list, the count, a bulk job's selector). */
export function toContractFilter(f: FilterState): ContractFilter {
  const out: ContractFilter = {};
  if (f.statuses.length) out.status = [...f.statuses];
  const billing = BILLING_FILTERS.find((b) => b.value === f.billing && b.value);
  if (billing) out.billingStatus = [...billing.statuses];
  if (f.customerEmail.trim()) out.customerEmail = f.customerEmail.trim();
  if (isVariantId(f.variantId)) out.variantId = f.variantId;
  const from = dayBound(f.billingFrom, false);
  const to = dayBound(f.billingTo, true);
  if (from) out.nextBillingDateFrom = from;
  if (to) out.nextBillingDateTo = to;
  return out;
}

const dayText = (value: string) => {
  const m = DAY.exec(value)!;
  return new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'short', day: 'numeric' }).format(new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
};

/** The filter in one line, as the bulk change dialog names the contracts it changes. */
export function filterSummary(f: FilterState): string {
  const parts: string[] = [];
  if (f.statuses.length) parts.push(`Status: ${f.statuses.map((s) => STATUS_LABEL[s]).join(' or ')}`);
  const billing = BILLING_FILTERS.find((b) => b.value === f.billing && b.value);
  if (billing) parts.push(`Billing: ${billing.label}`);
  if (f.customerEmail.trim()) parts.push(`Customer: ${f.customerEmail.trim()}`);
  if (isVariantId(f.variantId)) parts.push(`With variant ${f.variantId}`);
  if (f.billingFrom && f.billingTo) parts.push(`Next billing ${dayText(f.billingFrom)} – ${dayText(f.billingTo)}`);
  else if (f.billingFrom) parts.push(`Next billing on or after ${dayText(f.billingFrom)}`);
  else if (f.billingTo) parts.push(`Next billing on or before ${dayText(f.billingTo)}`);
  return parts.length ? parts.join(' · ') : 'Every contract of the store';
}

/** A text field that hands its value on once typing pauses (and at once on Enter or leaving it). */
function TypedField({
  label,
  value,
  onCommit,
  error,
  ...rest
}: { label: string; value: string; onCommit: (v: string) => void; error?: string; type?: 'text' | 'email'; helpText?: string; placeholder?: string; inputMode?: 'numeric' | 'email' }) {
  const [draft, setDraft] = useState(value);
  const committed = useRef(value);
  useEffect(() => {
    // Changed elsewhere (back and forward, "Clear filters"): the field follows.
    if (value !== committed.current) {
      committed.current = value;
      setDraft(value);
    }
  }, [value]);
  const commit = (v: string) => {
    if (v === committed.current) return;
    committed.current = v;
    onCommit(v);
  };
  useEffect(() => {
    if (draft === committed.current) return;
    const timer = setTimeout(() => commit(draft), TYPING_MS);
    return () => clearTimeout(timer);
  });
  return (
    <div
      onKeyDown={(e) => {
        if (e.key === 'Enter') commit(draft);
      }}
    >
      <TextField
        label={label}
        value={draft}
        onChange={setDraft}
        onBlur={() => commit(draft)}
        error={error}
        autoComplete="off"
        clearButton
        onClearButtonClick={() => {
          setDraft('');
          commit('');
        }}
        maxLength={254}
        {...rest}
      />
    </div>
  );
}

export function ContractFilters({ value, onChange }: { value: FilterState; onChange: (next: FilterState) => void }) {
  const set = (patch: Partial<FilterState>) => onChange({ ...value, ...patch });
  const toggle = (s: ContractStatus, on: boolean) => set({ statuses: STATUSES.filter((x) => (x === s ? on : value.statuses.includes(x))) });
  const badRange = value.billingFrom && value.billingTo && value.billingFrom > value.billingTo;
  return (
    <BlockStack gap="300">
      <fieldset className="svc-fieldset">
        <legend>
          <Text as="span" variant="bodyMd">
            Status
          </Text>
        </legend>
        <InlineStack gap="400" wrap>
          {STATUSES.map((s) => (
            <Checkbox key={s} label={STATUS_LABEL[s]} checked={value.statuses.includes(s)} onChange={(on) => toggle(s, on)} />
          ))}
        </InlineStack>
      </fieldset>
      <InlineGrid columns={{ xs: 1, sm: 2, lg: 5 }} gap="300">
        <Select label="Billing" options={BILLING_FILTERS.map(({ label, value }) => ({ label, value }))} value={value.billing} onChange={(v) => set({ billing: v })} />
        <TypedField label="Customer email" type="email" inputMode="email" value={value.customerEmail} onCommit={(v) => set({ customerEmail: v.trim() })} helpText="The whole address, any case." />
        <TypedField
          label="Variant ID"
          inputMode="numeric"
          value={value.variantId}
          onCommit={(v) => set({ variantId: v.trim() })}
          error={value.variantId && !isVariantId(value.variantId) ? 'A variant ID is a number.' : undefined}
          helpText="Contracts with a line of this variant."
        />
        <TextField label="Next billing from" type="date" value={value.billingFrom} onChange={(v) => set({ billingFrom: DAY.test(v) ? v : '' })} autoComplete="off" />
        <TextField
          label="Next billing to"
          type="date"
          value={value.billingTo}
          onChange={(v) => set({ billingTo: DAY.test(v) ? v : '' })}
          autoComplete="off"
          error={badRange ? 'The end is before the start.' : undefined}
        />
      </InlineGrid>
    </BlockStack>
  );
}
