import { Badge, BlockStack, Box, Button, Card, IndexTable, InlineStack, Link, Page, ProgressBar, SkeletonBodyText, Text, useBreakpoints } from '@shopify/polaris';
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { ApiError, type ApiKey, type BulkJob } from '../api';
import { changeText, contractsCount, createdByText, isActive, JOB_STATUS_LABEL, JOB_STATUS_TONE, progressOf } from '../bulkText';
import { ErrorBanner } from '../components/ErrorBanner';
import { CondensedCell, DateTimeCell, WrappingCell } from '../components/TableCells';
import { useAdminApi } from '../context';
import { formatDateTime } from '../format';
import { bulkJobUrl, ROUTES } from '../router';
import { BulkJobView, useBulkJob } from './BulkJobView';

const PAGE_SIZE = 20;
/** While a job of the page is under way, the list is read again at this pace. */
const POLL_MS = 2_000;
const asApiError = (err: unknown) => (err instanceof ApiError ? err : new ApiError(0, 'unexpected', String(err), null));

/** The store's keys by id, to name the key that made a job (a failure leaves keys unnamed, nothing more). */
function useKeys(): Map<string, ApiKey> {
  const { api } = useAdminApi();
  const [keys, setKeys] = useState<ApiKey[]>([]);
  useEffect(() => {
    api.keys().then(
      (res) => setKeys(res.keys),
      () => {},
    );
  }, [api]);
  return useMemo(() => new Map(keys.map((k) => [k.id, k])), [keys]);
}

/**
 * Every bulk job of the store, newest first, whoever made it (the admin, an API key, an assistant): its status, what it
 * changes, on how many contracts, how far it got, who made it and when. A row opens the job.
 */
export function BulkJobsPage() {
  const { api } = useAdminApi();
  const { smDown } = useBreakpoints();
  const keys = useKeys();
  const [cursors, setCursors] = useState<string[]>([]);
  const [cursor, setCursor] = useState<string | undefined>(undefined);
  const [data, setData] = useState<{ bulkJobs: BulkJob[]; nextCursor: string | null } | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const request = useRef(0);

  const load = useCallback(async () => {
    const mine = ++request.current;
    try {
      const res = await api.bulkJobs({ cursor, limit: PAGE_SIZE });
      if (mine === request.current) {
        setData(res);
        setError(null);
      }
    } catch (err) {
      if (mine === request.current) setError(asApiError(err));
    }
  }, [api, cursor]);
  useEffect(() => {
    void load();
  }, [load]);
  const anyActive = data?.bulkJobs.some((j) => isActive(j.status)) ?? false;
  useEffect(() => {
    if (!anyActive) return;
    const timer = setTimeout(() => void load(), POLL_MS);
    return () => clearTimeout(timer);
  }, [anyActive, data, load]);

  const opener = (j: BulkJob) => (
    <Link url={bulkJobUrl(j.id)} dataPrimaryLink monochrome removeUnderline accessibilityLabel={`Bulk job of ${formatDateTime(j.createdAt)}: ${changeText(j.change)}`}>
      <Text as="span" fontWeight="semibold">
        {changeText(j.change)}
      </Text>
    </Link>
  );
  const status = (j: BulkJob) => <Badge tone={JOB_STATUS_TONE[j.status]}>{JOB_STATUS_LABEL[j.status]}</Badge>;
  const progress = (j: BulkJob) => (
    <div style={{ minWidth: '7rem' }}>
      <BlockStack gap="050">
        <ProgressBar
          progress={progressOf(j)}
          size="small"
          animated={false}
          tone={j.status === 'completed' ? 'success' : j.status === 'failed' ? 'critical' : 'highlight'}
          ariaLabelledBy={`progress-${j.id}`}
        />
        <Text as="span" variant="bodySm" tone="subdued" id={`progress-${j.id}`}>
          {progressOf(j)}% · {j.counts.succeeded.toLocaleString('en-US')} {j.status === 'previewed' || j.status === 'previewing' ? 'would change' : 'changed'}
          {j.counts.failed ? `, ${j.counts.failed.toLocaleString('en-US')} ${j.status === 'previewed' || j.status === 'previewing' ? 'problems' : 'failed'}` : ''}
        </Text>
      </BlockStack>
    </div>
  );

  return (
    <Page title="Bulk jobs" subtitle="Changes made to many contracts at once, from the Contracts page, the API or an assistant. Kept 30 days.">
      <BlockStack gap="400">
        <ErrorBanner error={error} title="The bulk jobs could not be loaded" />
        <Card padding="0">
          {!data ? (
            <Box padding="400">
              <SkeletonBodyText lines={5} />
            </Box>
          ) : data.bulkJobs.length === 0 && !cursor ? (
            <Box padding="400">
              <BlockStack gap="200" inlineAlign="center">
                <Text as="p" variant="headingSm">
                  No bulk jobs yet
                </Text>
                <Text as="p" tone="subdued" alignment="center">
                  Filter the contracts on the Contracts page, then choose “Change N contracts…”: you see a preview before anything changes.
                </Text>
                <Button url={ROUTES.contracts}>Go to Contracts</Button>
              </BlockStack>
            </Box>
          ) : (
            <IndexTable
              condensed={smDown}
              selectable={false}
              resourceName={{ singular: 'bulk job', plural: 'bulk jobs' }}
              itemCount={data.bulkJobs.length}
              headings={[{ title: 'Change' }, { title: 'Status' }, { title: 'Matched' }, { title: 'Progress' }, { title: 'Created by' }, { title: 'Created' }]}
              pagination={
                cursors.length > 0 || data.nextCursor
                  ? {
                      hasPrevious: cursors.length > 0,
                      onPrevious: () => {
                        setCursor(cursors[cursors.length - 1] || undefined);
                        setCursors(cursors.slice(0, -1));
                      },
                      hasNext: Boolean(data.nextCursor),
                      onNext: () => {
                        setCursors([...cursors, cursor ?? '']);
                        setCursor(data.nextCursor!);
                      },
                      label: `Page ${cursors.length + 1}`,
                    }
                  : undefined
              }
            >
              {data.bulkJobs.map((j, i) =>
                smDown ? (
                  <IndexTable.Row id={j.id} key={j.id} position={i}>
                    <CondensedCell>
                      <BlockStack gap="100">
                        <InlineStack align="space-between" blockAlign="center" gap="200" wrap={false}>
                          {opener(j)}
                          {status(j)}
                        </InlineStack>
                        <Text as="p" variant="bodySm" tone="subdued">
                          {contractsCount(j.counts.matched)} · {createdByText(j.createdBy, keys)} · {formatDateTime(j.createdAt)}
                        </Text>
                        {progress(j)}
                      </BlockStack>
                    </CondensedCell>
                  </IndexTable.Row>
                ) : (
                  <IndexTable.Row id={j.id} key={j.id} position={i}>
                    <WrappingCell maxWidth="20rem">{opener(j)}</WrappingCell>
                    <IndexTable.Cell>{status(j)}</IndexTable.Cell>
                    <IndexTable.Cell>{j.counts.matched.toLocaleString('en-US')}</IndexTable.Cell>
                    <IndexTable.Cell>{progress(j)}</IndexTable.Cell>
                    <WrappingCell maxWidth="12rem">{createdByText(j.createdBy, keys)}</WrappingCell>
                    <DateTimeCell iso={j.createdAt} />
                  </IndexTable.Row>
                ),
              )}
            </IndexTable>
          )}
        </Card>
      </BlockStack>
    </Page>
  );
}

/** One bulk job: the same view as the Contracts page's dialog, to start a preview, follow a run, read its results. */
export function BulkJobPage({ jobId }: { jobId: string }) {
  const { job, error, setJob } = useBulkJob(jobId);
  const keys = useKeys();
  const back = { content: 'Bulk jobs', url: ROUTES.bulkJobs };
  if (!job) {
    return (
      <Page title="Bulk job" backAction={back}>
        {error?.code === 'not_found' ? (
          <Card>
            <BlockStack gap="200">
              <Text as="h2" variant="headingMd">
                This bulk job does not exist
              </Text>
              <Text as="p">No bulk job with this id belongs to this store. Jobs are kept 30 days after they end.</Text>
            </BlockStack>
          </Card>
        ) : error ? (
          <ErrorBanner error={error} title="The bulk job could not be loaded" />
        ) : (
          <Card>
            <SkeletonBodyText lines={6} />
          </Card>
        )}
      </Page>
    );
  }
  return (
    <Page title="Bulk job" subtitle={`Created ${formatDateTime(job.createdAt)} by ${createdByText(job.createdBy, keys)}`} backAction={back}>
      <Card>
        <BulkJobView job={job} onJob={setJob} />
      </Card>
    </Page>
  );
}
