import { Badge, BlockStack, Box, Card, InlineGrid, InlineStack, Page, Pagination, Select, SkeletonBodyText, Text } from '@shopify/polaris';
import { useCallback, useEffect, useRef, useState } from 'react';
import { ApiError, type Contract, type ContractStatus } from '../api';
import { ErrorBanner } from '../components/ErrorBanner';
import { useAdminApi } from '../context';
import { formatDateTime, intervalLabel, STATUS_LABEL, STATUS_TONE } from '../format';
import { ContractHistory } from './ContractHistory';
import { ImportBanner, useImportProgress } from './ImportProgress';

const PAGE_SIZE = 20;
const FILTERS: { label: string; value: '' | ContractStatus }[] = [
  { label: 'All statuses', value: '' },
  { label: 'Active', value: 'ACTIVE' },
  { label: 'Paused', value: 'PAUSED' },
  { label: 'Cancelled', value: 'CANCELLED' },
  { label: 'Expired', value: 'EXPIRED' },
  { label: 'Failed', value: 'FAILED' },
];

/**
 * Contracts and what happened to them, so a merchant sees what the API (or MCP, the scheduler, the platform) did.
 * In platform mode the install's import is shown while it runs, and the list follows it.
 */
export function ContractsPage() {
  const { api } = useAdminApi();
  const [status, setStatus] = useState<'' | ContractStatus>('');
  // cursors[i] is the cursor that loads page i; page 0 has none.
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const [page, setPage] = useState(0);
  const [data, setData] = useState<{ contracts: Contract[]; nextCursor: string | null } | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [loading, setLoading] = useState(true);

  const load = useCallback(async () => {
    setLoading(true);
    setError(null);
    try {
      setData(await api.contracts({ status: status || undefined, cursor: cursors[page], limit: PAGE_SIZE }));
    } catch (err) {
      setError(err instanceof ApiError ? err : new ApiError(0, 'unexpected', String(err), null));
    } finally {
      setLoading(false);
    }
  }, [api, status, cursors, page]);
  useEffect(() => {
    void load();
  }, [load]);

  const importState = useImportProgress();
  const [importNoticeDismissed, setImportNoticeDismissed] = useState(false);
  const progress = importState.progress;
  const importing = progress !== null && progress.status !== 'completed';
  // The effects below reload whatever the merchant is looking at (filter, page), without restarting on each change of it.
  const latest = useRef({ load, data, page });
  latest.current = { load, data, page };
  // Once the import completes, the list shows everything it brought in.
  useEffect(() => {
    if (importState.finishedHere) void latest.current.load();
  }, [importState.finishedHere]);
  // While it runs, a first page that is not full yet fills in as contracts arrive; a full page stays put.
  const imported = progress?.imported ?? 0;
  useEffect(() => {
    const { data: shown, page: at, load: reload } = latest.current;
    if (importing && imported > 0 && at === 0 && shown && shown.contracts.length < PAGE_SIZE) void reload();
  }, [importing, imported]);

  const changeStatus = (v: string) => {
    setStatus(v as '' | ContractStatus);
    setCursors([undefined]);
    setPage(0);
  };
  const next = () => {
    if (!data?.nextCursor) return;
    setCursors((c) => [...c.slice(0, page + 1), data.nextCursor!]);
    setPage((p) => p + 1);
  };

  return (
    <Page title="Contracts" subtitle="Subscription contracts of this store and every change made to them.">
      <BlockStack gap="400">
        <Card>
          <Box maxWidth="20rem">
            <Select label="Status" options={FILTERS} value={status} onChange={changeStatus} />
          </Box>
        </Card>
        {!importNoticeDismissed && <ImportBanner state={importState} onDismiss={() => setImportNoticeDismissed(true)} />}
        <ErrorBanner error={error} title="The contracts could not be loaded" />
        {loading && !data ? (
          <Card>
            <SkeletonBodyText lines={6} />
          </Card>
        ) : data && data.contracts.length === 0 ? (
          <Card>
            <BlockStack gap="200" inlineAlign="center">
              <Text as="p" variant="headingSm">
                {status ? `No ${STATUS_LABEL[status].toLowerCase()} contracts` : importing ? 'No contracts imported yet' : 'No contracts yet'}
              </Text>
              <Text as="p" tone="subdued" alignment="center">
                {status
                  ? 'Choose another status to see more contracts.'
                  : importing
                    ? 'Contracts appear here as the import brings them in from Shopify.'
                    : 'Contracts appear here when customers subscribe.'}
              </Text>
            </BlockStack>
          </Card>
        ) : (
          <div aria-busy={loading}>
            <BlockStack gap="300">
              {data?.contracts.map((c) => <ContractCard key={c.id} contract={c} />)}
            </BlockStack>
          </div>
        )}
        {data && (page > 0 || data.nextCursor) && (
          <InlineStack align="center">
            <Pagination
              hasPrevious={page > 0}
              onPrevious={() => setPage((p) => Math.max(0, p - 1))}
              hasNext={Boolean(data.nextCursor)}
              onNext={next}
              label={`Page ${page + 1}`}
            />
          </InlineStack>
        )}
      </BlockStack>
    </Page>
  );
}

function ContractCard({ contract: c }: { contract: Contract }) {
  const titleId = `contract-${c.id}-title`;
  const lines = c.lines.map((l) => `${l.quantity} × ${l.title}`).join(', ');
  return (
    <section aria-labelledby={titleId}>
      <Card>
        <BlockStack gap="300">
          <InlineStack align="space-between" blockAlign="center" gap="200">
            <Text as="h2" variant="headingMd" id={titleId}>
              Contract #{c.id}
            </Text>
            <Badge tone={STATUS_TONE[c.status]}>{STATUS_LABEL[c.status]}</Badge>
          </InlineStack>
          <Text as="p" tone="subdued">
            {c.customer.email} · {intervalLabel(c.billingPolicy.interval, c.billingPolicy.intervalCount)}
            {lines ? ` · ${lines}` : ''}
          </Text>
          <InlineGrid columns={{ xs: 1, sm: 3 }} gap="300">
            <Field label="Next billing date" value={formatDateTime(c.nextBillingDate)} />
            <Field
              label="Resume date"
              value={c.status === 'PAUSED' ? formatDateTime(c.resumeAt, 'Paused until resumed') : '—'}
            />
            {c.status === 'PAUSED' && <Field label="Paused since" value={formatDateTime(c.pausedAt)} />}
            {c.status === 'CANCELLED' && <Field label="Cancelled" value={formatDateTime(c.cancelledAt)} />}
          </InlineGrid>
          {c.cancellationReason && <Text as="p">Cancellation reason: {c.cancellationReason}</Text>}
          <ContractHistory contractId={c.id} updatedAt={c.updatedAt} />
        </BlockStack>
      </Card>
    </section>
  );
}

function Field({ label, value }: { label: string; value: string }) {
  return (
    <BlockStack gap="050">
      <Text as="p" variant="bodySm" tone="subdued">
        {label}
      </Text>
      <Text as="p">{value}</Text>
    </BlockStack>
  );
}
