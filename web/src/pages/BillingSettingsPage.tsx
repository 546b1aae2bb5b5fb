import { Badge, BlockStack, Box, Button, Card, FormLayout, InlineStack, Layout, Page, Select, SkeletonBodyText, Text, TextField, Toast } from '@shopify/polaris';
import { DeleteIcon, PlusIcon } from '@shopify/polaris-icons';
import { useCallback, useEffect, useState, type FormEvent } from 'react';
import { ApiError, type BillingPolicy, type FinalAction } from '../api';
import { durationLabel, FINAL_ACTION_LABEL } from '../billingText';
import { ErrorBanner } from '../components/ErrorBanner';
import { useAdminApi } from '../context';
import { formatDateTime } from '../format';
import { ROUTES } from '../router';

const MAX_RETRIES = 10;
/** The policy of a store that never changed it (the server's default). */
const DEFAULT_POLICY: BillingPolicy = { paymentRetries: ['P1D', 'P3D', 'P7D'], inventoryRetries: { every: 'P1D', max: 5 }, finalAction: 'fail' };
const FINAL_ACTIONS = Object.keys(FINAL_ACTION_LABEL) as FinalAction[];

/** The form's fields as typed (the count of inventory retries is text until it is sent). */
type Draft = { paymentRetries: string[]; every: string; max: string; finalAction: FinalAction };
const draftOf = (p: BillingPolicy): Draft => ({ paymentRetries: [...p.paymentRetries], every: p.inventoryRetries.every, max: String(p.inventoryRetries.max), finalAction: p.finalAction });
/** What is sent: the text as typed (trimmed), a count that is a whole number as a number; the server judges the rest. */
const policyOf = (d: Draft): BillingPolicy => ({
  paymentRetries: d.paymentRetries.map((r) => r.trim()),
  inventoryRetries: { every: d.every.trim(), max: /^\d+$/.test(d.max.trim()) ? Number(d.max.trim()) : (d.max as unknown as number) },
  finalAction: d.finalAction,
});
const same = (a: Draft, b: Draft) => JSON.stringify(a) === JSON.stringify(b);

const hint = (value: string, after: string) => {
  const words = durationLabel(value);
  return words ? `${words} ${after}` : 'An ISO 8601 duration from PT1S to P30D: P1D is a day, PT12H twelve hours.';
};

/**
 * Settings → Billing: the shop's dunning policy. How long to wait before each retry of a failed payment, how an
 * out-of-stock failure is retried, and what happens to the contract when the last retry fails. The server checks the
 * policy; a field it refuses shows the server's reason on that field, and nothing is saved.
 */
export function BillingSettingsPage() {
  const { api } = useAdminApi();
  const [saved, setSaved] = useState<BillingPolicy | null>(null);
  /** When this page saved the policy (the server keeps no date to show). */
  const [savedAt, setSavedAt] = useState<Date | null>(null);
  const [draft, setDraft] = useState<Draft | null>(null);
  const [loadError, setLoadError] = useState<ApiError | null>(null);
  const [saveError, setSaveError] = useState<ApiError | null>(null);
  const [saving, setSaving] = useState(false);
  const [toast, setToast] = useState<string | null>(null);

  const load = useCallback(async () => {
    try {
      const res = await api.billingPolicy();
      setSaved(res);
      setDraft(draftOf(res));
      setLoadError(null);
    } catch (err) {
      setLoadError(err instanceof ApiError ? err : new ApiError(0, 'unexpected', String(err), null));
    }
  }, [api]);
  useEffect(() => {
    void load();
  }, [load]);

  const back = { content: 'Settings', url: ROUTES.settings };
  const title = 'Billing';
  if (!saved || !draft) {
    return (
      <Page title={title} backAction={back}>
        {loadError ? (
          <BlockStack gap="300">
            <ErrorBanner error={loadError} title="The billing policy could not be loaded" />
            <InlineStack>
              <Button onClick={() => void load()}>Try again</Button>
            </InlineStack>
          </BlockStack>
        ) : (
          <Card>
            <SkeletonBodyText lines={8} />
          </Card>
        )}
      </Page>
    );
  }

  const fieldError = (path: string) => {
    const d = saveError?.details.find((x) => x.path === path);
    return d ? `${d.message.charAt(0).toUpperCase()}${d.message.slice(1)}` : undefined;
  };
  const change = (patch: Partial<Draft>) => setDraft({ ...draft, ...patch });
  const setRetry = (i: number, value: string) => change({ paymentRetries: draft.paymentRetries.map((r, j) => (j === i ? value : r)) });
  const dirty = !same(draft, draftOf(saved));

  const save = async (e?: FormEvent) => {
    e?.preventDefault();
    setSaving(true);
    setSaveError(null);
    try {
      const res = await api.saveBillingPolicy(policyOf(draft));
      setSaved(res);
      setDraft(draftOf(res));
      setSavedAt(new Date());
      setToast('Billing policy saved');
    } catch (err) {
      setSaveError(err instanceof ApiError ? err : new ApiError(0, 'unexpected', String(err), null));
    } finally {
      setSaving(false);
    }
  };

  return (
    <Page
      title={title}
      backAction={back}
      subtitle="What happens when a renewal's payment fails."
      titleMetadata={dirty ? <Badge tone="attention">Unsaved changes</Badge> : undefined}
      primaryAction={{ content: 'Save', onAction: () => void save(), loading: saving, disabled: !dirty }}
    >
      <form onSubmit={(e) => void save(e)} aria-label="Billing policy">
        <Layout>
          <Layout.Section>
            <BlockStack gap="400">
              {saveError && <ErrorBanner error={saveError} title="The billing policy was not saved" onDismiss={() => setSaveError(null)} takeFocus />}
              <Card>
                <BlockStack gap="300">
                  <Text as="h2" variant="headingMd">
                    Failed payments
                  </Text>
                  <Text as="p" tone="subdued">
                    A declined payment is tried again after each wait below, each counted from the previous attempt. A hard decline (an expired
                    card, a revoked payment method, fraud) is tried at most once more.
                  </Text>
                  <ol aria-label="Payment retries" className="svc-list">
                    {draft.paymentRetries.map((r, i) => (
                      <li key={i}>
                        <InlineStack gap="200" blockAlign="start" wrap={false}>
                          <Box width="100%">
                            <TextField
                              label={`Retry ${i + 1}: wait`}
                              value={r}
                              onChange={(v) => setRetry(i, v)}
                              autoComplete="off"
                              monospaced
                              helpText={hint(r, i === 0 ? 'after the failed attempt' : `after retry ${i}`)}
                              error={fieldError(`paymentRetries.${i}`)}
                            />
                          </Box>
                          <Box paddingBlockStart="600">
                            <Button
                              icon={DeleteIcon}
                              accessibilityLabel={`Remove retry ${i + 1}`}
                              onClick={() => change({ paymentRetries: draft.paymentRetries.filter((_, j) => j !== i) })}
                            />
                          </Box>
                        </InlineStack>
                      </li>
                    ))}
                  </ol>
                  {draft.paymentRetries.length === 0 && (
                    <Text as="p" tone="caution">
                      No retries: the final action runs after the first failed payment.
                    </Text>
                  )}
                  {fieldError('paymentRetries') && (
                    <Text as="p" tone="critical">
                      Payment retries: {fieldError('paymentRetries')}
                    </Text>
                  )}
                  <InlineStack>
                    <Button icon={PlusIcon} disabled={draft.paymentRetries.length >= MAX_RETRIES} onClick={() => change({ paymentRetries: [...draft.paymentRetries, 'P1D'] })}>
                      Add retry
                    </Button>
                  </InlineStack>
                  <Text as="p" variant="bodySm" tone="subdued">
                    At most {MAX_RETRIES} retries.
                  </Text>
                </BlockStack>
              </Card>
              <Card>
                <BlockStack gap="300">
                  <Text as="h2" variant="headingMd">
                    Out of stock
                  </Text>
                  <Text as="p" tone="subdued">
                    When a product is out of stock the order is tried again on its own schedule; after the last try that order is skipped.
                  </Text>
                  <FormLayout>
                    <FormLayout.Group>
                      <TextField
                        label="Try again every"
                        value={draft.every}
                        onChange={(v) => change({ every: v })}
                        autoComplete="off"
                        monospaced
                        helpText={hint(draft.every, 'between tries')}
                        error={fieldError('inventoryRetries.every')}
                      />
                      <TextField
                        label="Tries at most"
                        type="number"
                        min={0}
                        max={MAX_RETRIES}
                        value={draft.max}
                        onChange={(v) => change({ max: v })}
                        autoComplete="off"
                        error={fieldError('inventoryRetries.max')}
                      />
                    </FormLayout.Group>
                  </FormLayout>
                </BlockStack>
              </Card>
              <Card>
                <BlockStack gap="300">
                  <Text as="h2" variant="headingMd">
                    After the last failed retry
                  </Text>
                  <Select
                    label="Final action"
                    options={FINAL_ACTIONS.map((a) => ({ value: a, label: FINAL_ACTION_LABEL[a] }))}
                    value={draft.finalAction}
                    onChange={(v) => change({ finalAction: v as FinalAction })}
                    error={fieldError('finalAction')}
                    helpText="A failed contract is billed again when you resume it."
                  />
                </BlockStack>
              </Card>
              <InlineStack align="end" gap="200">
                <Button disabled={!dirty || saving} onClick={() => setDraft(draftOf(saved))}>
                  Discard changes
                </Button>
                <Button variant="primary" submit loading={saving} disabled={!dirty}>
                  Save
                </Button>
              </InlineStack>
            </BlockStack>
          </Layout.Section>
          <Layout.Section variant="oneThird">
            <Card>
              <BlockStack gap="200">
                <Text as="h2" variant="headingMd">
                  Saved policy
                </Text>
                <div role="status" aria-label="Saved state">
                  <Text as="p">
                    {savedAt
                      ? `Saved ${formatDateTime(savedAt.toISOString())}`
                      : same(draftOf(saved), draftOf(DEFAULT_POLICY))
                        ? 'The default policy'
                        : 'This store’s own policy'}
                  </Text>
                </div>
                <Text as="p" variant="bodySm" tone="subdued">
                  Changes apply to the next retry each contract schedules.
                </Text>
              </BlockStack>
            </Card>
          </Layout.Section>
        </Layout>
      </form>
      {toast && <Toast content={toast} onDismiss={() => setToast(null)} />}
    </Page>
  );
}
