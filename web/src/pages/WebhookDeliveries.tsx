import { Badge, BlockStack, Box, Button, IndexTable, InlineStack, SkeletonBodyText, Text, useBreakpoints } from '@shopify/polaris';
import { RefreshIcon } from '@shopify/polaris-icons';
import { Fragment, useCallback, useEffect, useRef, useState } from 'react';
import { ApiError, type WebhookDelivery, type WebhookEndpoint } from '../api';
import { ErrorBanner } from '../components/ErrorBanner';
import { useAdminApi } from '../context';
import { CondensedCell, DateTimeCell } from '../components/TableCells';
import { formatDateTime } from '../format';
import { attemptAnswer, attemptCount, DELIVERY_STATUS, lastAnswer, plural } from './webhookText';

const PAGE_SIZE = 10;
/** While a delivery is about to go out, the log looks again this often, so its outcome shows without a click. */
const POLL_MS = 2_000;
const POLL_LIMIT = 30;

type Props = {
  endpoint: WebhookEndpoint;
  /** Bumped by the card when it queued something (a test event, resends): the log reloads from its first page. */
  reloadKey: number;
  /** Deliveries settled or the merchant asked for fresh data: the endpoint itself may have changed (410 disables it). */
  onActivity: () => void;
  onResent: (d: WebhookDelivery) => void;
};

/** Pending and going out within 10 s: the log keeps looking; later than that, it waits (a retry, or an earlier delivery). */
const dueSoon = (d: WebhookDelivery) => d.status === 'pending' && d.nextAttemptAt !== null && Date.parse(d.nextAttemptAt) <= Date.now() + 10_000;
const inFlight = (d: WebhookDelivery) => d.status === 'delivering' || dueSoon(d);

/** An endpoint's delivery log, newest first: each delivery's outcome, its attempts on request, and Resend. */
export function WebhookDeliveries({ endpoint, reloadKey, onActivity, onResent }: Props) {
  const { api } = useAdminApi();
  const { smDown } = useBreakpoints();
  // cursors[i] loads page i; page 0 has none.
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const [page, setPage] = useState(0);
  const [data, setData] = useState<{ deliveries: WebhookDelivery[]; nextCursor: string | null } | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [loading, setLoading] = useState(false);
  const [expanded, setExpanded] = useState<Set<string>>(new Set());
  const [resending, setResending] = useState<string | null>(null);
  const polls = useRef(0);
  const wasInFlight = useRef(false);
  // The card's callback changes with every render of the card; the log must not reload for that.
  const activity = useRef(onActivity);
  activity.current = onActivity;

  // A reload asked by the card starts again from the newest deliveries.
  const [seenReload, setSeenReload] = useState(reloadKey);
  if (seenReload !== reloadKey) {
    setSeenReload(reloadKey);
    setCursors([undefined]);
    setPage(0);
  }

  const load = useCallback(async () => {
    setLoading(true);
    setError(null);
    try {
      const res = await api.webhookDeliveries(endpoint.id, { cursor: cursors[page], limit: PAGE_SIZE });
      setData(res);
      const busy = res.deliveries.some(inFlight);
      if (wasInFlight.current && !busy) activity.current();
      wasInFlight.current = busy;
    } catch (err) {
      setError(err instanceof ApiError ? err : new ApiError(0, 'unexpected', String(err), null));
    } finally {
      setLoading(false);
    }
  }, [api, endpoint.id, cursors, page]);

  useEffect(() => {
    polls.current = 0;
    void load();
  }, [load, reloadKey]);

  useEffect(() => {
    if (!data || loading || error || !data.deliveries.some(inFlight) || polls.current >= POLL_LIMIT) return;
    const timer = setTimeout(() => {
      polls.current++;
      void load();
    }, POLL_MS);
    return () => clearTimeout(timer);
  }, [data, loading, error, load]);

  const refresh = () => {
    polls.current = 0;
    activity.current();
    void load();
  };
  const next = () => {
    if (!data?.nextCursor) return;
    setCursors((c) => [...c.slice(0, page + 1), data.nextCursor!]);
    setPage((p) => p + 1);
  };
  const toggle = (id: string) =>
    setExpanded((s) => {
      const n = new Set(s);
      if (!n.delete(id)) n.add(id);
      return n;
    });
  const resend = async (d: WebhookDelivery) => {
    setResending(d.id);
    setError(null);
    try {
      const res = await api.resendWebhookDelivery(endpoint.id, d.id);
      onResent(res.delivery);
      polls.current = 0;
      await load();
    } catch (err) {
      setError(err instanceof ApiError ? err : new ApiError(0, 'unexpected', String(err), null));
    } finally {
      setResending(null);
    }
  };

  const status = (d: WebhookDelivery) => (
    <BlockStack gap="050" inlineAlign="start">
      <Badge tone={DELIVERY_STATUS[d.status].tone}>{DELIVERY_STATUS[d.status].label}</Badge>
      {d.status === 'pending' && d.nextAttemptAt && attemptCount(d) > 0 && (
        <Text as="span" variant="bodySm" tone="subdued">
          Next try {formatDateTime(d.nextAttemptAt)}
        </Text>
      )}
      {d.status === 'pending' && d.nextAttemptAt && attemptCount(d) === 0 && !dueSoon(d) && (
        <Text as="span" variant="bodySm" tone="subdued">
          After an earlier delivery of its contract, {formatDateTime(d.nextAttemptAt)}
        </Text>
      )}
      {d.status === 'pending' && !d.nextAttemptAt && (
        <Text as="span" variant="bodySm" tone="subdued">
          Held while the endpoint is disabled
        </Text>
      )}
    </BlockStack>
  );
  const event = (d: WebhookDelivery) => (
    <BlockStack gap="050" inlineAlign="start">
      <InlineStack gap="100" blockAlign="center">
        <span className="svc-mono">{d.type}</span>
        {d.test && <Badge>Test</Badge>}
      </InlineStack>
      {d.contractId && (
        <Text as="span" variant="bodySm" tone="subdued">
          Contract #{d.contractId}
          {d.version !== null ? ` · version ${d.version}` : ''}
        </Text>
      )}
    </BlockStack>
  );
  const actions = (d: WebhookDelivery) => {
    const open = expanded.has(d.id);
    const busy = d.status === 'pending' || d.status === 'delivering';
    return (
      <InlineStack gap="200" wrap={false} align="end">
        {d.attemptLog.length > 0 && (
          <Button
            variant="plain"
            disclosure={open ? 'up' : 'down'}
            ariaExpanded={open}
            ariaControls={`delivery-${d.id}-attempts`}
            onClick={() => toggle(d.id)}
            accessibilityLabel={`${open ? 'Hide' : 'Show'} the attempts of delivery ${d.id}`}
          >
            Attempts
          </Button>
        )}
        {/* A delivery still queued or being sent is not sent a second time alongside. */}
        <Button size="slim" disabled={busy} loading={resending === d.id} onClick={() => void resend(d)} accessibilityLabel={`Resend delivery ${d.id}`}>
          Resend
        </Button>
      </InlineStack>
    );
  };
  const attempts = (d: WebhookDelivery) => (
    <div id={`delivery-${d.id}-attempts`}>
      <ol aria-label={`Attempts of delivery ${d.id}`} style={{ listStyle: 'none', margin: 0, padding: 0 }}>
        {d.attemptLog.map((a, i) => (
          <li key={i}>
            <Box paddingBlock="100">
              <BlockStack gap="100">
                <Text as="p" variant="bodySm">
                  <Text as="span" fontWeight="semibold">{`Attempt ${i + 1}`}</Text>
                  {` · ${formatDateTime(a.at)} · ${attemptAnswer(a)} · ${a.durationMs} ms`}
                </Text>
                {a.responseBody && (
                  <pre className="svc-code" style={{ maxHeight: '8rem', overflow: 'auto' }} aria-label={`Response to attempt ${i + 1}`}>
                    {a.responseBody}
                  </pre>
                )}
              </BlockStack>
            </Box>
          </li>
        ))}
      </ol>
      <Text as="p" variant="bodySm" tone="subdued">
        webhook-id <span className="svc-mono">{d.webhookId}</span>, the same on every attempt and resend.
      </Text>
    </div>
  );

  const rows = (data?.deliveries ?? []).map((d, i) => (
    <Fragment key={d.id}>
      {smDown ? (
        <IndexTable.Row id={`delivery-${d.id}`} position={i}>
          <CondensedCell>
            <BlockStack gap="100">
              <InlineStack align="space-between" blockAlign="start" gap="200">
                {event(d)}
                {status(d)}
              </InlineStack>
              <Text as="p" variant="bodySm" tone="subdued">
                {formatDateTime(d.createdAt)} · {plural(attemptCount(d), 'attempt')} · {lastAnswer(d)}
              </Text>
              {actions(d)}
            </BlockStack>
          </CondensedCell>
        </IndexTable.Row>
      ) : (
        <IndexTable.Row id={`delivery-${d.id}`} position={i}>
          <DateTimeCell iso={d.createdAt} />
          <IndexTable.Cell>{event(d)}</IndexTable.Cell>
          <IndexTable.Cell>{status(d)}</IndexTable.Cell>
          <IndexTable.Cell>{attemptCount(d)}</IndexTable.Cell>
          <IndexTable.Cell>
            <div style={{ whiteSpace: 'normal', maxWidth: '18rem', overflowWrap: 'anywhere' }}>{lastAnswer(d)}</div>
          </IndexTable.Cell>
          <IndexTable.Cell>{actions(d)}</IndexTable.Cell>
        </IndexTable.Row>
      )}
      {expanded.has(d.id) && (
        <IndexTable.Row id={`delivery-${d.id}-detail`} position={i} rowType="child">
          <IndexTable.Cell colSpan={smDown ? 1 : 6}>
            <div style={{ whiteSpace: 'normal' }}>{attempts(d)}</div>
          </IndexTable.Cell>
        </IndexTable.Row>
      )}
    </Fragment>
  ));

  return (
    <BlockStack gap="200">
      <InlineStack align="space-between" blockAlign="center" gap="200">
        <Text as="h3" variant="headingSm">
          Delivery log
        </Text>
        <Button variant="tertiary" icon={RefreshIcon} onClick={refresh} loading={loading && data !== null} accessibilityLabel="Refresh the delivery log">
          Refresh
        </Button>
      </InlineStack>
      <ErrorBanner error={error} title="The delivery log could not be loaded" onDismiss={() => setError(null)} />
      {data === null ? (
        loading && <SkeletonBodyText lines={3} />
      ) : data.deliveries.length === 0 && page === 0 ? (
        <Text as="p" tone="subdued">
          Nothing has been sent to this endpoint yet. Send a test event to try it.
        </Text>
      ) : (
        <div aria-busy={loading} aria-label={`Deliveries to ${endpoint.url}`} role="region">
          <IndexTable
            condensed={smDown}
            selectable={false}
            resourceName={{ singular: 'delivery', plural: 'deliveries' }}
            itemCount={data.deliveries.length}
            headings={[{ title: 'Time' }, { title: 'Event' }, { title: 'Status' }, { title: 'Attempts' }, { title: 'Last answer' }, { title: 'Actions', hidden: true }]}
            pagination={
              page > 0 || data.nextCursor
                ? {
                    hasPrevious: page > 0,
                    onPrevious: () => setPage((p) => Math.max(0, p - 1)),
                    hasNext: Boolean(data.nextCursor),
                    onNext: next,
                    label: `Page ${page + 1}`,
                  }
                : undefined
            }
          >
            {rows}
          </IndexTable>
        </div>
      )}
      <Text as="p" variant="bodySm" tone="subdued">
        Deliveries are kept for 30 days. A failed delivery is tried again at once, then after 5 s, 5 min, 30 min, 2 h, 5 h,
        10 h, 14 h, 20 h and 24 h.
      </Text>
    </BlockStack>
  );
}
