import { Banner, BlockStack, Button, Card, Checkbox, Divider, FormLayout, InlineGrid, InlineStack, Modal, Select, Text, TextField } from '@shopify/polaris';
import { useEffect, useRef, useState } from 'react';
import { ApiError, type CatalogVariant, type ContractView } from '../api';
import { ErrorBanner } from '../components/ErrorBanner';
import { useAdminApi } from '../context';
import { formatPrice, multiplyAmount, formatMoney } from '../money';
import { TotalsList } from './ContractDetails';
import { ADDRESS_FIELDS, explainDetails, formOf, operationsOf, type EditForm, type EditOperation } from './editOperations';

const asApiError = (err: unknown) => (err instanceof ApiError ? err : new ApiError(0, 'unexpected', String(err), null));
const INTERVALS = [
  { label: 'Days', value: 'DAY' },
  { label: 'Weeks', value: 'WEEK' },
  { label: 'Months', value: 'MONTH' },
  { label: 'Years', value: 'YEAR' },
];

type Props = {
  contract: ContractView;
  /** Saved: say so, and show the contract as it is now (with the edit at the top of its history). */
  onDone: (message: string) => Promise<void>;
};

/**
 * Editing a contract: its lines (quantity, another product, removal, new lines), its frequency, its shipping address
 * and its discounts. The form first asks the server for a preview (the API's edit with `preview: true`: the same
 * rules, nothing changed) and shows the totals before and after; only that previewed edit can be saved.
 */
export function ContractEditCard({ contract: c, onDone }: Props) {
  const { api } = useAdminApi();
  const [open, setOpen] = useState(false);
  const [form, setForm] = useState<EditForm>(() => formOf(c));
  const [variants, setVariants] = useState<CatalogVariant[] | null>(null);
  const [preview, setPreview] = useState<{ ops: EditOperation[]; after: ContractView } | null>(null);
  const [error, setError] = useState<{ err: ApiError; lines: string[] } | null>(null);
  const [busy, setBusy] = useState<'preview' | 'save' | null>(null);
  const activator = useRef<HTMLDivElement>(null);
  const nextKey = useRef(1);

  useEffect(() => {
    if (!open || variants) return;
    api.catalogVariants().then(
      (r) => setVariants(r.variants),
      () => setVariants([]),
    );
  }, [open, variants, api]);

  const start = () => {
    setForm(formOf(c));
    setPreview(null);
    setError(null);
    setOpen(true);
  };
  // Any change to the form makes the preview stale: it must be previewed again before it can be saved.
  const update = (change: (f: EditForm) => EditForm) => {
    setForm((f) => change(f));
    setPreview(null);
  };
  const ops = operationsOf(c, form);

  const send = async (mode: 'preview' | 'save') => {
    setBusy(mode);
    setError(null);
    try {
      const res = await api.edit(c.id, { operations: ops, ...(mode === 'preview' ? { preview: true } : {}) });
      if (mode === 'preview') setPreview({ ops, after: res.contract });
      else {
        setOpen(false);
        await onDone('Contract updated');
      }
    } catch (err) {
      const e = asApiError(err);
      setPreview(null);
      setError({ err: e, lines: explainDetails(c, ops, e.details) });
    } finally {
      setBusy(null);
    }
  };

  const variantChoice = (value: string, onChange: (v: string) => void, label: string, labelHidden = false) => {
    const known = variants?.length ? variants : null;
    if (known) {
      const options = known.map((v) => ({ label: `${v.title} · ${formatPrice(v.price)}`, value: v.id }));
      if (!known.some((v) => v.id === value)) options.unshift({ label: value ? `Variant ${value}` : 'Choose a product', value });
      return <Select label={label} labelHidden={labelHidden} options={options} value={value} onChange={onChange} />;
    }
    return <TextField label={label} labelHidden={labelHidden} value={value} onChange={onChange} autoComplete="off" inputMode="numeric" helpText="The product variant's id." />;
  };

  const setLine = (i: number, patch: Partial<EditForm['lines'][number]>) => update((f) => ({ ...f, lines: f.lines.map((l, k) => (k === i ? { ...l, ...patch } : l)) }));
  const setNewLine = (key: number, patch: Partial<EditForm['newLines'][number]>) =>
    update((f) => ({ ...f, newLines: f.newLines.map((l) => (l.key === key ? { ...l, ...patch } : l)) }));

  const body = (
    <BlockStack gap="500">
      {error && (
        <ErrorBanner error={error.err} title="The edit cannot be made" takeFocus onDismiss={() => setError(null)}>
          {error.lines.length > 0 && (
            <ul style={{ margin: 0, paddingInlineStart: '1.25rem' }}>
              {error.lines.map((l, i) => (
                <li key={i}>{l}</li>
              ))}
            </ul>
          )}
        </ErrorBanner>
      )}
      <BlockStack gap="300">
        <Text as="h3" variant="headingSm">
          Products
        </Text>
        {form.lines.map((l, i) => (
          <div key={l.lineId} role="group" aria-label={`Line ${l.title}`}>
            <BlockStack gap="200">
              <Text as="p" fontWeight="semibold" tone={l.remove ? 'subdued' : undefined} textDecorationLine={l.remove ? 'line-through' : undefined}>
                {l.title}
              </Text>
              {!l.remove && (
                <InlineGrid columns={{ xs: 1, sm: ['oneThird', 'twoThirds'] }} gap="300">
                  <TextField label={`Quantity of ${l.title}`} type="number" min={1} max={999} value={l.quantity} onChange={(v) => setLine(i, { quantity: v })} autoComplete="off" />
                  {variantChoice(l.variantId, (v) => setLine(i, { variantId: v }), `Product of ${l.title}`)}
                </InlineGrid>
              )}
              <Checkbox label={`Remove ${l.title}`} checked={l.remove} onChange={(v) => setLine(i, { remove: v })} />
            </BlockStack>
          </div>
        ))}
        {form.newLines.map((n) => (
          <div key={n.key} role="group" aria-label="New line">
            <InlineGrid columns={{ xs: 1, sm: ['oneThird', 'twoThirds'] }} gap="300">
              <TextField label="Quantity of the new line" type="number" min={1} max={999} value={n.quantity} onChange={(v) => setNewLine(n.key, { quantity: v })} autoComplete="off" />
              <BlockStack gap="100">
                {variantChoice(n.variantId, (v) => setNewLine(n.key, { variantId: v }), 'Product of the new line')}
                <InlineStack>
                  <Button variant="plain" tone="critical" onClick={() => update((f) => ({ ...f, newLines: f.newLines.filter((x) => x.key !== n.key) }))}>
                    Do not add this line
                  </Button>
                </InlineStack>
              </BlockStack>
            </InlineGrid>
          </div>
        ))}
        <InlineStack>
          <Button onClick={() => update((f) => ({ ...f, newLines: [...f.newLines, { key: nextKey.current++, variantId: variants?.[0]?.id ?? '', quantity: '1' }] }))}>Add a line</Button>
        </InlineStack>
      </BlockStack>
      <Divider />
      <BlockStack gap="300">
        <Text as="h3" variant="headingSm">
          Frequency
        </Text>
        <Text as="p" tone="subdued" variant="bodySm">
          Billing and delivery together. The next billing date stays as it is.
        </Text>
        <InlineGrid columns={{ xs: 1, sm: 2 }} gap="300">
          <TextField label="Every" type="number" min={1} value={form.intervalCount} onChange={(v) => update((f) => ({ ...f, intervalCount: v }))} autoComplete="off" />
          <Select label="Interval" options={INTERVALS} value={form.interval} onChange={(v) => update((f) => ({ ...f, interval: v }))} />
        </InlineGrid>
      </BlockStack>
      <Divider />
      <BlockStack gap="300">
        <Text as="h3" variant="headingSm">
          Shipping address
        </Text>
        <Checkbox label="Change the shipping address" checked={form.changeAddress} onChange={(v) => update((f) => ({ ...f, changeAddress: v }))} />
        {form.changeAddress && (
          <FormLayout>
            <FormLayout.Group>
              {ADDRESS_FIELDS.map((field) => (
                <TextField
                  key={field.name}
                  label={field.label}
                  value={form.address[field.name]}
                  onChange={(v) => update((f) => ({ ...f, address: { ...f.address, [field.name]: v } }))}
                  autoComplete={field.autoComplete}
                />
              ))}
            </FormLayout.Group>
          </FormLayout>
        )}
      </BlockStack>
      <Divider />
      <BlockStack gap="300">
        <Text as="h3" variant="headingSm">
          Discounts
        </Text>
        {(c.discounts ?? []).map((d) => (
          <Checkbox
            key={d.id}
            label={`Remove ${d.code ? `code ${d.code}` : d.title}`}
            checked={form.removeDiscounts.includes(d.id)}
            onChange={(v) => update((f) => ({ ...f, removeDiscounts: v ? [...f.removeDiscounts, d.id] : f.removeDiscounts.filter((x) => x !== d.id) }))}
          />
        ))}
        <TextField label="Apply a discount code" value={form.discountCode} onChange={(v) => update((f) => ({ ...f, discountCode: v }))} autoComplete="off" />
      </BlockStack>
      {preview && <PreviewResult before={c} after={preview.after} />}
    </BlockStack>
  );

  const nothing = ops.length === 0;
  return (
    <Card>
      <BlockStack gap="300">
        <Text as="h2" variant="headingMd">
          Edit
        </Text>
        <Text as="p" tone="subdued">
          Products, frequency, shipping address and discounts. You see the new totals before anything is saved.
        </Text>
        <div ref={activator}>
          <InlineStack>
            <Button onClick={start}>Edit contract</Button>
          </InlineStack>
        </div>
      </BlockStack>
      <Modal
        open={open}
        size="large"
        activator={activator}
        onClose={() => setOpen(false)}
        title={`Edit contract #${c.id}`}
        primaryAction={
          preview
            ? { content: 'Save changes', onAction: () => void send('save'), loading: busy === 'save' }
            : { content: 'Preview changes', onAction: () => void send('preview'), loading: busy === 'preview', disabled: nothing }
        }
        secondaryActions={[{ content: 'Cancel', onAction: () => setOpen(false) }]}
        footer={
          <Text as="p" tone="subdued" variant="bodySm">
            {nothing ? 'Change something to preview it.' : preview ? 'Previewed: nothing is changed until you save.' : `${ops.length} change${ops.length === 1 ? '' : 's'} to preview.`}
          </Text>
        }
      >
        <Modal.Section>{body}</Modal.Section>
      </Modal>
    </Card>
  );
}

/** The previewed edit: the lines after it, and the totals now and after, side by side. */
function PreviewResult({ before, after }: { before: ContractView; after: ContractView }) {
  return (
    <section aria-label="Preview of the edit">
      <Banner tone="info" title="Preview: nothing has changed yet">
        <BlockStack gap="300">
          <ul aria-label="Products after the edit" style={{ margin: 0, paddingInlineStart: '1.25rem' }}>
            {after.lines.map((l, i) => {
              const total = multiplyAmount(l.price.amount, l.quantity);
              return (
                <li key={l.id ?? i}>
                  {l.quantity} × {l.title} · {total !== null ? formatMoney(total, l.price.currencyCode) : formatPrice(l.price)}
                </li>
              );
            })}
          </ul>
          <InlineGrid columns={2} gap="400">
            <BlockStack gap="100">
              <Text as="h4" variant="headingSm">
                Now
              </Text>
              {before.totals && <TotalsList totals={before.totals} label="Totals now" />}
            </BlockStack>
            <BlockStack gap="100">
              <Text as="h4" variant="headingSm">
                After the edit
              </Text>
              {after.totals && <TotalsList totals={after.totals} label="Totals after the edit" />}
            </BlockStack>
          </InlineGrid>
        </BlockStack>
      </Banner>
    </section>
  );
}
