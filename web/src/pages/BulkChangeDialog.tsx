import { BlockStack, Box, Button, InlineStack, Link, Modal, Select, Spinner, Text } from '@shopify/polaris';
import { useEffect, useRef, useState } from 'react';
import { ApiError, type BulkJob, type ContractFilter } from '../api';
import { contractsCount } from '../bulkText';
import { ErrorBanner } from '../components/ErrorBanner';
import { useAdminApi } from '../context';
import { bulkJobUrl } from '../router';
import { ChangeFieldsForm, changeOf, fieldOf, FormProblem, isAction, KIND_OPTIONS, type ChangeFields, type ChangeKind } from './BulkChangeForm';
import { BulkJobView, useBulkJob } from './BulkJobView';

const asApiError = (err: unknown) => (err instanceof ApiError ? err : new ApiError(0, 'unexpected', String(err), null));

/**
 * Under the Contracts page's filters: how many contracts they match (what a bulk job made with them would take) and
 * "Change N contracts…", which opens the bulk change dialog. A text search is not a bulk job's filter, so while one
 * narrows the list (`blockedBy` says why) the button waits for it to be cleared.
 */
export function BulkChangeBar({
  filter,
  summary,
  blockedBy,
  onChanged,
}: {
  filter: ContractFilter;
  /** The filter in words, as the dialog names the contracts. */
  summary: string;
  blockedBy: string | null;
  /** Contracts were (or may have been) changed: the list reads them again. */
  onChanged: () => void;
}) {
  const { api } = useAdminApi();
  const key = JSON.stringify(filter);
  const [count, setCount] = useState<{ key: string; count: number; more: boolean } | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [open, setOpen] = useState(false);
  const [version, setVersion] = useState(0);
  const activator = useRef<HTMLDivElement>(null);

  useEffect(() => {
    let stopped = false;
    setError(null);
    api.contractCount(JSON.parse(key) as ContractFilter).then(
      (res) => !stopped && setCount({ key, ...res }),
      (err) => !stopped && setError(asApiError(err)),
    );
    return () => {
      stopped = true;
    };
  }, [api, key, version]);

  const n = count?.key === key ? count : null;
  // Asked for while counting, and the count came in with nothing to change: the dialog is not waiting any more.
  const nothing = n !== null && (n.count === 0 || n.more);
  useEffect(() => {
    if (open && nothing) setOpen(false);
  }, [open, nothing]);

  const label = n ? (n.more ? 'Change contracts…' : `Change ${contractsCount(n.count)}…`) : 'Change contracts…';
  return (
    <BlockStack gap="200">
      <ErrorBanner error={error} title="The contracts could not be counted" />
      <InlineStack align="space-between" blockAlign="center" gap="300" wrap>
        <Text as="p" tone="subdued">
          {!n ? (
            <Spinner size="small" accessibilityLabel="Counting contracts" />
          ) : n.more ? (
            'More than 100,000 contracts match: narrow the filters to change them in bulk.'
          ) : (
            `${contractsCount(n.count)} ${n.count === 1 ? 'matches' : 'match'} the filters.`
          )}
        </Text>
        <div ref={activator}>
          {/* Enabled while counting: a filter field commits as it loses focus, so the click that takes the focus
              away starts a new count; the dialog opens once that count is in. */}
          <Button onClick={() => setOpen(true)} disabled={nothing || blockedBy !== null}>
            {label}
          </Button>
        </div>
      </InlineStack>
      {blockedBy && (
        <Text as="p" variant="bodySm" tone="subdued">
          {blockedBy}
        </Text>
      )}
      {open && n && !nothing && blockedBy === null && (
        <BulkChangeDialog
          activator={activator}
          filter={JSON.parse(key) as ContractFilter}
          count={n.count}
          summary={summary}
          onChanged={onChanged}
          onClose={() => {
            setOpen(false);
            setVersion((v) => v + 1);
            onChanged();
          }}
        />
      )}
    </BlockStack>
  );
}

/**
 * The bulk change: choose an action or an edit → a preview job over the filter's contracts (nothing changes) → its
 * counts, totals and problems → Start → its progress → its results. Closing the dialog leaves the job where it is (a
 * preview waits 24 hours on the Bulk jobs page).
 */
function BulkChangeDialog({
  activator,
  filter,
  count,
  summary,
  onChanged,
  onClose,
}: {
  activator: React.RefObject<HTMLDivElement>;
  filter: ContractFilter;
  count: number;
  summary: string;
  onChanged: () => void;
  onClose: () => void;
}) {
  const { api } = useAdminApi();
  const [kind, setKind] = useState<ChangeKind>('pause');
  // A variant filter names the variant the merchant most likely means to change.
  const [fields, setFields] = useState<ChangeFields>(() => (filter.variantId ? { variantId: filter.variantId, fromVariantId: filter.variantId } : ({} as ChangeFields)));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const [created, setCreated] = useState<BulkJob | null>(null);

  const preview = async () => {
    setErrors({});
    setError(null);
    let change;
    try {
      change = changeOf(kind, fields);
    } catch (err) {
      if (err instanceof FormProblem) return setErrors({ [err.field]: err.message });
      throw err;
    }
    setBusy(true);
    try {
      const res = await api.createBulkJob({ selector: { filter }, change, preview: true });
      setCreated(res.bulkJob);
    } catch (err) {
      const e = asApiError(err);
      const onFields: Record<string, string> = {};
      for (const d of e.details) {
        const f = fieldOf(kind, d);
        if (f && !onFields[f]) onFields[f] = `${d.message[0]?.toUpperCase() ?? ''}${d.message.slice(1)}.`;
      }
      setErrors(onFields);
      setError(e);
    } finally {
      setBusy(false);
    }
  };

  if (created) return <JobStep activator={activator} initial={created} onChanged={onChanged} onClose={onClose} />;
  return (
    <Modal
      open
      activator={activator}
      onClose={onClose}
      title={`Change ${contractsCount(count)}`}
      primaryAction={{ content: 'Preview changes', onAction: () => void preview(), loading: busy }}
      secondaryActions={[{ content: 'Cancel', onAction: onClose }]}
    >
      <Modal.Section>
        <BlockStack gap="400">
          <Text as="p" tone="subdued">
            {summary}. The contracts are fixed when the preview is made; nothing changes until you start it.
          </Text>
          <ErrorBanner error={error} title="The preview was not made" takeFocus />
          <Select
            label="Change"
            options={KIND_OPTIONS}
            value={kind}
            onChange={(v) => {
              setKind(v as ChangeKind);
              setErrors({});
              setError(null);
            }}
            helpText={isAction(kind) ? 'An action, as on a contract’s page.' : 'Applies to every line of the variant in each contract.'}
          />
          <ChangeFieldsForm kind={kind} fields={fields} onChange={setFields} errors={errors} />
        </BlockStack>
      </Modal.Section>
    </Modal>
  );
}

/** The job made: followed in the dialog through its preview, its start, its run, to its results. */
function JobStep({ activator, initial, onChanged, onClose }: { activator: React.RefObject<HTMLDivElement>; initial: BulkJob; onChanged: () => void; onClose: () => void }) {
  const { job, error, setJob } = useBulkJob(initial.id, initial);
  const status = job?.status;
  // Once the run is over the list behind the dialog shows the contracts as they are now.
  useEffect(() => {
    if (status === 'completed' || status === 'failed' || status === 'cancelled') onChanged();
  }, [status, onChanged]);
  const title = !job ? 'Bulk change' : status === 'previewing' || status === 'previewed' ? 'Preview of the change' : 'Bulk change';
  return (
    <Modal open activator={activator} onClose={onClose} title={title} size="large" secondaryActions={[{ content: 'Close', onAction: onClose }]}>
      <Modal.Section>
        <BlockStack gap="400">
          <ErrorBanner error={error} title="The job could not be read" />
          {job && <BulkJobView job={job} onJob={setJob} headingLevel="h3" />}
          <Box>
            <Text as="p" variant="bodySm" tone="subdued">
              This job is also on the <Link url={bulkJobUrl(initial.id)}>Bulk jobs page</Link>
              {status === 'previewed' ? ', where the preview waits for 24 hours if you close this dialog.' : '.'}
            </Text>
          </Box>
        </BlockStack>
      </Modal.Section>
    </Modal>
  );
}
