import { Badge, Banner, BlockStack, Box, Button, ButtonGroup, Card, IndexTable, InlineGrid, InlineStack, Link, ProgressBar, Select, SkeletonBodyText, Text, useBreakpoints } from '@shopify/polaris';
import { useCallback, useEffect, useId, useRef, useState } from 'react';
import { ApiError, type BulkJob, type BulkJobResult, type BulkJobResultStatus } from '../api';
import { changeText, contractsCount, isActive, isUnfinished, JOB_STATUS_LABEL, JOB_STATUS_TONE, progressOf, RESULT_TONE, resultLabel } from '../bulkText';
import { ErrorBanner } from '../components/ErrorBanner';
import { CondensedCell } from '../components/TableCells';
import { useAdminApi } from '../context';
import { formatDateTime } from '../format';
import { formatMoney } from '../money';
import { contractUrl } from '../router';

/** How often a job under way is read again: its progress bar moves at this pace. */
const POLL_MS = 700;
const RESULTS_PAGE = 20;
/** After a failed read of a job under way. */
const RETRY_MS = 3_000;

const asApiError = (err: unknown) => (err instanceof ApiError ? err : new ApiError(0, 'unexpected', String(err), null));

/**
 * A bulk job, read again while it is under way (previewing, queued, running) and left alone once it has an outcome.
 * `setJob` takes the job a start or a cancel answered with, so the page follows it at once.
 */
export function useBulkJob(id: string, initial?: BulkJob) {
  const { api } = useAdminApi();
  const [job, setJob] = useState<BulkJob | null>(initial ?? null);
  const [error, setError] = useState<ApiError | null>(null);
  // Bumped to read again after a failed read of a job under way (a missing job is not read again).
  const [retry, setRetry] = useState(0);

  useEffect(() => {
    if (job && !isActive(job.status)) return;
    let stopped = false;
    const timer = setTimeout(
      async () => {
        try {
          const res = await api.bulkJob(id);
          if (stopped) return;
          setJob(res.bulkJob);
          setError(null);
        } catch (err) {
          if (stopped) return;
          setError(asApiError(err));
          if (job) setTimeout(() => !stopped && setRetry((n) => n + 1), RETRY_MS);
        }
      },
      job ? POLL_MS : 0,
    );
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
    // Each answer (a new object) schedules the next read while the job is under way.
  }, [api, id, job, retry]);

  return { job, error, setJob };
}

type Filter = BulkJobResultStatus | 'all';

/**
 * One bulk job as the merchant follows it: what it changes and on how many contracts; while it is decided a progress
 * bar; then its counts (will change, unchanged, problems), its next-order totals per currency before and after, and
 * its results contract by contract, the problems first, with the whole list as a CSV download. A previewed job is
 * started (or discarded) here; one under way can be cancelled.
 */
export function BulkJobView({ job, onJob, headingLevel = 'h2' }: { job: BulkJob; onJob: (job: BulkJob) => void; headingLevel?: 'h2' | 'h3' }) {
  const { api } = useAdminApi();
  const [busy, setBusy] = useState<'start' | 'cancel' | 'csv' | null>(null);
  const [actionError, setActionError] = useState<{ title: string; err: ApiError } | null>(null);
  const progressLabel = useId();
  // What the counts say: what would happen (a preview, or one discarded or expired unstarted), or what did.
  const preview = job.status === 'previewing' || job.status === 'previewed' || (job.preview && !job.startedAt && (job.status === 'expired' || job.status === 'cancelled'));
  const active = isActive(job.status);
  const done = progressOf(job);
  const { matched, pending, succeeded, failed, skipped } = job.counts;

  const act = async (verb: 'start' | 'cancel') => {
    setBusy(verb);
    setActionError(null);
    try {
      const res = verb === 'start' ? await api.startBulkJob(job.id) : await api.cancelBulkJob(job.id);
      onJob(res.bulkJob);
    } catch (err) {
      const title = verb === 'start' ? 'The job was not started' : job.status === 'previewed' ? 'The preview was not discarded' : 'The job was not cancelled';
      setActionError({ title, err: asApiError(err) });
      // The job may have moved on meanwhile (expired, finished): show it as it is.
      api.bulkJob(job.id).then((r) => onJob(r.bulkJob), () => {});
    } finally {
      setBusy(null);
    }
  };

  const download = async () => {
    setBusy('csv');
    setActionError(null);
    try {
      const blob = await api.bulkJobResultsCsv(job.id);
      const url = URL.createObjectURL(blob);
      const a = document.createElement('a');
      a.href = url;
      a.download = `bulk-job-${job.id}.csv`;
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
    } catch (err) {
      setActionError({ title: 'The results could not be downloaded', err: asApiError(err) });
    } finally {
      setBusy(null);
    }
  };

  const H = headingLevel;
  const stat = (label: string, value: number, tone?: 'critical' | 'success') => (
    <Box padding="300" background="bg-surface-secondary" borderRadius="200">
      <BlockStack gap="100">
        <Text as="p" variant="bodySm" tone="subdued">
          {label}
        </Text>
        <Text as="p" variant="headingLg" tone={value > 0 ? tone : undefined}>
          {value.toLocaleString('en-US')}
        </Text>
      </BlockStack>
    </Box>
  );

  return (
    <BlockStack gap="400">
      <BlockStack gap="200">
        <InlineStack gap="200" blockAlign="center" wrap>
          <Badge tone={JOB_STATUS_TONE[job.status]}>{JOB_STATUS_LABEL[job.status]}</Badge>
          <Text as="p" fontWeight="semibold">
            {changeText(job.change)}
          </Text>
        </InlineStack>
        <Text as="p" tone="subdued">
          {contractsCount(matched)}
          {job.status === 'previewed' && job.expiresAt ? ` · start it before ${formatDateTime(job.expiresAt)}, or the preview expires` : ''}
          {job.finishedAt && !preview ? ` · finished ${formatDateTime(job.finishedAt)}` : ''}
        </Text>
      </BlockStack>

      {actionError && <ErrorBanner error={actionError.err} title={actionError.title} onDismiss={() => setActionError(null)} takeFocus />}
      {job.error && (
        <Banner tone="critical" title="The job could not go on">
          <p>{job.error.message}</p>
        </Banner>
      )}

      {active && (
        <BlockStack gap="100">
          <Text as="p" id={progressLabel}>
            {job.status === 'previewing'
              ? `Previewing: ${(matched - pending).toLocaleString('en-US')} of ${contractsCount(matched)} checked. Nothing is changed.`
              : job.status === 'queued'
                ? 'Queued: it starts when the store’s running job ends.'
                : `Running: ${(matched - pending).toLocaleString('en-US')} of ${contractsCount(matched)} done…`}
          </Text>
          <ProgressBar progress={done} size="small" ariaLabelledBy={progressLabel} animated={false} />
        </BlockStack>
      )}

      {(!active || job.status === 'running') && (
        <InlineGrid columns={{ xs: 2, md: 4 }} gap="200">
          {stat('Matched', matched)}
          {stat(preview ? 'Will change' : 'Changed', succeeded, 'success')}
          {stat('Unchanged', skipped)}
          {stat(preview ? 'Problems' : 'Failed', failed, 'critical')}
        </InlineGrid>
      )}

      {!active && job.totals.length > 0 && <Totals job={job} preview={preview} level={H} />}

      <InlineStack gap="200" align="end" blockAlign="center">
        <ButtonGroup>
          {isUnfinished(job.status) && (
            <Button onClick={() => void act('cancel')} loading={busy === 'cancel'} disabled={busy !== null} tone="critical" variant="secondary">
              {job.status === 'previewed' || job.status === 'previewing' ? 'Discard preview' : 'Cancel job'}
            </Button>
          )}
          {!active && (
            <Button onClick={() => void download()} loading={busy === 'csv'} disabled={busy !== null}>
              Download results (CSV)
            </Button>
          )}
          {job.status === 'previewed' && (
            <Button variant="primary" onClick={() => void act('start')} loading={busy === 'start'} disabled={busy !== null || succeeded === 0}>
              {`Start: change ${contractsCount(succeeded)}`}
            </Button>
          )}
        </ButtonGroup>
      </InlineStack>

      {!active && <Results job={job} preview={preview} level={H} />}
    </BlockStack>
  );
}

function Totals({ job, preview, level }: { job: BulkJob; preview: boolean; level: 'h2' | 'h3' }) {
  return (
    <BlockStack gap="200">
      <Text as={level} variant="headingSm">
        Next orders’ totals {preview ? 'of the contracts that will change' : 'of the contracts changed'}
      </Text>
      <BlockStack gap="100" as="ul">
        {job.totals.map((t) => {
          const diff = subtract(t.after, t.before);
          return (
            <li key={t.currencyCode} className="svc-bulk-total">
              <Text as="span" fontWeight="semibold">
                {t.currencyCode}
              </Text>{' '}
              <Text as="span">
                {formatMoney(t.before, t.currencyCode)} → {formatMoney(t.after, t.currencyCode)}
              </Text>{' '}
              {diff !== null && (
                <Text as="span" tone={diff.startsWith('-') ? 'critical' : diff === '0' || /^0(\.0+)?$/.test(diff) ? 'subdued' : 'success'}>
                  ({diff.startsWith('-') ? '' : '+'}
                  {formatMoney(diff, t.currencyCode)})
                </Text>
              )}
            </li>
          );
        })}
      </BlockStack>
    </BlockStack>
  );
}

/** after − before of two decimal strings of the same currency, exactly (BigInt over the same number of places). */
function subtract(after: string, before: string): string | null {
  const parse = (v: string) => /^(-?)(\d+)(?:\.(\d+))?$/.exec(v);
  const a = parse(after);
  const b = parse(before);
  if (!a || !b) return null;
  const places = Math.max((a[3] ?? '').length, (b[3] ?? '').length);
  const units = (m: RegExpExecArray) => BigInt(m[1] + m[2] + (m[3] ?? '').padEnd(places, '0'));
  const d = units(a) - units(b);
  const neg = d < 0n;
  const digits = (neg ? -d : d).toString().padStart(places + 1, '0');
  const cut = digits.length - places;
  return `${neg ? '-' : ''}${digits.slice(0, cut)}${places ? `.${digits.slice(cut)}` : ''}`;
}

/** The job's results contract by contract, of one outcome at a time (the problems first), a page at a time. */
function Results({ job, preview, level }: { job: BulkJob; preview: boolean; level: 'h2' | 'h3' }) {
  const { api } = useAdminApi();
  const { smDown } = useBreakpoints();
  const initial: Filter = job.counts.failed > 0 ? 'failed' : job.counts.skipped > 0 ? 'skipped' : 'all';
  const [filter, setFilter] = useState<Filter>(initial);
  // The cursors of the pages before the one shown (a stack: Previous pops it).
  const [cursors, setCursors] = useState<string[]>([]);
  const [cursor, setCursor] = useState<string | undefined>(undefined);
  const [page, setPage] = useState<{ results: BulkJobResult[]; nextCursor: string | null } | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const request = useRef(0);

  const load = useCallback(async () => {
    const mine = ++request.current;
    setError(null);
    try {
      const res = await api.bulkJobResults(job.id, { status: filter === 'all' ? undefined : filter, cursor, limit: RESULTS_PAGE });
      if (mine === request.current) setPage(res);
    } catch (err) {
      if (mine === request.current) setError(asApiError(err));
    }
  }, [api, job.id, filter, cursor]);
  useEffect(() => {
    void load();
    // Read again when the job reaches another outcome (a preview started and run).
  }, [load, job.status]);

  const choose = (f: Filter) => {
    setFilter(f);
    setCursors([]);
    setCursor(undefined);
  };
  const options = [
    { label: `Problems (${job.counts.failed.toLocaleString('en-US')})`, value: 'failed' },
    { label: `Unchanged (${job.counts.skipped.toLocaleString('en-US')})`, value: 'skipped' },
    { label: `${preview ? 'Will change' : 'Changed'} (${job.counts.succeeded.toLocaleString('en-US')})`, value: 'succeeded' },
    ...(job.counts.pending > 0 ? [{ label: `Pending (${job.counts.pending.toLocaleString('en-US')})`, value: 'pending' }] : []),
    { label: `All (${job.counts.matched.toLocaleString('en-US')})`, value: 'all' },
  ];
  const total = (r: BulkJobResult) =>
    r.before && r.after ? (
      r.before.total === r.after.total ? (
        formatMoney(r.after.total, r.after.currencyCode)
      ) : (
        `${formatMoney(r.before.total, r.before.currencyCode)} → ${formatMoney(r.after.total, r.after.currencyCode)}`
      )
    ) : (
      '—'
    );
  const number = (r: BulkJobResult) => (
    <Link url={contractUrl(r.contractId)} removeUnderline>
      #{r.contractId}
    </Link>
  );
  const status = (r: BulkJobResult) => <Badge tone={RESULT_TONE[r.status]}>{resultLabel(r.status, preview)}</Badge>;
  const why = (r: BulkJobResult) => r.error?.message ?? (r.status === 'succeeded' ? (preview ? 'Would change as asked.' : 'Changed as asked.') : '');

  return (
    <Card padding="0">
      <Box padding="400">
        <InlineStack align="space-between" blockAlign="end" gap="300" wrap>
          <Text as={level} variant="headingSm">
            Contract by contract
          </Text>
          <Select label="Show" labelInline options={options} value={filter} onChange={(v) => choose(v as Filter)} />
        </InlineStack>
        {job.counts.failed === 0 && job.counts.pending === 0 && (
          <Box paddingBlockStart="200">
            <Text as="p" tone="subdued">
              {job.counts.skipped === 0 ? `No problems: every contract ${preview ? 'can be' : 'was'} changed as asked.` : 'No problems.'}
            </Text>
          </Box>
        )}
      </Box>
      <Box paddingInline="400" paddingBlockEnd={error ? '400' : '0'}>
        <ErrorBanner error={error} title="The results could not be loaded" />
      </Box>
      {!page ? (
        <Box padding="400">
          <SkeletonBodyText lines={3} />
        </Box>
      ) : page.results.length === 0 ? (
        <Box padding="400" borderBlockStartWidth="025" borderColor="border">
          <Text as="p" tone="subdued">
            {filter === 'failed' ? 'No problems: every contract can be changed as asked.' : 'No contracts here.'}
          </Text>
        </Box>
      ) : (
        <IndexTable
          condensed={smDown}
          selectable={false}
          resourceName={{ singular: 'result', plural: 'results' }}
          itemCount={page.results.length}
          headings={[{ title: 'Contract' }, { title: 'Outcome' }, { title: 'Why' }, { title: 'Next order' }]}
          pagination={
            cursors.length > 0 || page.nextCursor
              ? {
                  hasPrevious: cursors.length > 0,
                  onPrevious: () => {
                    const before = cursors.slice(0, -1);
                    setCursor(cursors[cursors.length - 1] || undefined);
                    setCursors(before);
                  },
                  hasNext: Boolean(page.nextCursor),
                  onNext: () => {
                    setCursors([...cursors, cursor ?? '']);
                    setCursor(page.nextCursor!);
                  },
                  label: `Page ${cursors.length + 1}`,
                }
              : undefined
          }
        >
          {page.results.map((r, i) =>
            smDown ? (
              <IndexTable.Row id={r.contractId} key={r.contractId} position={i}>
                <CondensedCell>
                  <BlockStack gap="100">
                    <InlineStack align="space-between" blockAlign="center" gap="200">
                      {number(r)}
                      {status(r)}
                    </InlineStack>
                    {why(r) && <Text as="p">{why(r)}</Text>}
                    <Text as="p" variant="bodySm" tone="subdued">
                      Next order: {total(r)}
                    </Text>
                  </BlockStack>
                </CondensedCell>
              </IndexTable.Row>
            ) : (
              <IndexTable.Row id={r.contractId} key={r.contractId} position={i}>
                <IndexTable.Cell>{number(r)}</IndexTable.Cell>
                <IndexTable.Cell>{status(r)}</IndexTable.Cell>
                <IndexTable.Cell>
                  <div className="svc-wrap" style={{ maxWidth: '28rem' }}>
                    {why(r)}
                  </div>
                </IndexTable.Cell>
                <IndexTable.Cell>{total(r)}</IndexTable.Cell>
              </IndexTable.Row>
            ),
          )}
        </IndexTable>
      )}
    </Card>
  );
}
