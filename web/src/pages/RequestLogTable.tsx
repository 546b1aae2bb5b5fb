import { Badge, BlockStack, Button, IndexTable, InlineStack, Text, useBreakpoints } from '@shopify/polaris';
import { Fragment, useState, type ReactNode } from 'react';
import type { RequestLogEntry } from '../api';
import { CondensedCell, DateTimeCell } from '../components/TableCells';
import { formatDateTime } from '../format';

type Tone = 'success' | 'attention' | 'critical' | 'info';
const statusTone = (status: number): Tone => (status < 300 ? 'success' : status < 400 ? 'info' : status < 500 ? 'attention' : 'critical');

/** Milliseconds as a person reads them: 0.4 ms, 12 ms, 1.2 s. */
export const formatDuration = (ms: number) => (ms < 10 ? `${ms.toFixed(1)} ms` : ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`);

/**
 * The answer's status. An MCP exchange answers 200 even when the tool call in it was refused (the protocol carries
 * the refusal in its result): such a row shows the status the API gives that refusal, marked as a tool error, never
 * a green 200.
 */
function StatusBadge({ r }: { r: RequestLogEntry }) {
  return (
    <BlockStack gap="050" inlineAlign="start">
      {r.mcpStatus !== null ? (
        <Badge tone={statusTone(r.mcpStatus)}>{`Tool error ${r.mcpStatus}`}</Badge>
      ) : (
        <Badge tone={statusTone(r.status)}>{String(r.status)}</Badge>
      )}
      {r.errorCode && (
        <Text as="span" variant="bodySm" tone="subdued">
          <span className="svc-mono">{r.errorCode}</span>
        </Text>
      )}
    </BlockStack>
  );
}

function RequestLine({ r }: { r: RequestLogEntry }) {
  return (
    <BlockStack gap="050">
      <div className="svc-wrap">
        <Text as="span" fontWeight="semibold">
          {r.method}
        </Text>{' '}
        <span className="svc-mono">{r.path}</span>
      </div>
      {r.mcpTool && (
        <Text as="span" variant="bodySm" tone="subdued">
          MCP tool <span className="svc-mono">{r.mcpTool}</span>
        </Text>
      )}
    </BlockStack>
  );
}

/** Everything the log kept of one request, label by label. */
function Details({ r }: { r: RequestLogEntry }) {
  const item = (label: string, value: ReactNode) => (
    <Fragment key={label}>
      <dt>
        <Text as="span" variant="bodySm" tone="subdued">
          {label}
        </Text>
      </dt>
      <dd className="svc-wrap">{value ?? <Text as="span" tone="subdued">—</Text>}</dd>
    </Fragment>
  );
  const mono = (v: string | null) => (v === null ? null : <span className="svc-mono">{v}</span>);
  return (
    <div id={`request-${r.id}-details`} role="region" aria-label={`Details of request ${r.requestId}`}>
      <dl className="svc-details">
        {item('Time', formatDateTime(r.at))}
        {item('Request', <><Text as="span" fontWeight="semibold">{r.method}</Text> {mono(r.path)}</>)}
        {item('MCP tool', mono(r.mcpTool))}
        {item('Status', r.mcpStatus !== null ? `${r.status} (the MCP answer); the tool call was refused with ${r.mcpStatus}, as the API refuses ${r.errorCode ?? 'it'}` : String(r.status))}
        {item('Error code', mono(r.errorCode))}
        {item('Duration', formatDuration(r.durationMs))}
        {item('Request ID', mono(r.requestId))}
        {item('Idempotency key', mono(r.idempotencyKey))}
        {item('IP address', mono(r.ip))}
        {item('User agent', r.userAgent)}
        {r.connectionId ? item('Connected app', r.connectionName) : item('Key fingerprint', mono(r.fingerprint))}
      </dl>
      <Text as="p" variant="bodySm" tone="subdued">
        Request and response bodies are never recorded. Search your own logs for the request ID: it is the X-Request-Id
        header of the response, and the requestId of an error.
      </Text>
    </div>
  );
}

/** A key's requests, newest first: what was asked and what it got; each row opens to everything the log kept. */
export function RequestLogTable({ requests, pagination }: { requests: RequestLogEntry[]; pagination?: Parameters<typeof IndexTable>[0]['pagination'] }) {
  const { smDown } = useBreakpoints();
  const [open, setOpen] = useState<Set<string>>(new Set());
  const toggle = (id: string) =>
    setOpen((s) => {
      const n = new Set(s);
      if (!n.delete(id)) n.add(id);
      return n;
    });
  const detailsButton = (r: RequestLogEntry) => {
    const expanded = open.has(r.id);
    return (
      <Button
        variant="plain"
        disclosure={expanded ? 'up' : 'down'}
        ariaExpanded={expanded}
        ariaControls={`request-${r.id}-details`}
        onClick={() => toggle(r.id)}
        accessibilityLabel={`${expanded ? 'Hide' : 'Show'} the details of ${r.method} ${r.path} at ${formatDateTime(r.at)}`}
      >
        Details
      </Button>
    );
  };

  const rows = requests.map((r, i) => (
    <Fragment key={r.id}>
      {smDown ? (
        <IndexTable.Row id={`request-${r.id}`} position={i}>
          <CondensedCell>
            <BlockStack gap="100">
              <InlineStack align="space-between" blockAlign="start" gap="200" wrap={false}>
                {/* The request's line wraps; the status keeps its width. */}
                <div style={{ flex: '1 1 auto', minWidth: 0 }}>
                  <RequestLine r={r} />
                </div>
                <div style={{ flex: '0 0 auto', whiteSpace: 'nowrap' }}>
                  <StatusBadge r={r} />
                </div>
              </InlineStack>
              <Text as="p" variant="bodySm" tone="subdued">
                {formatDateTime(r.at)} · {formatDuration(r.durationMs)}
              </Text>
              {detailsButton(r)}
            </BlockStack>
          </CondensedCell>
        </IndexTable.Row>
      ) : (
        <IndexTable.Row id={`request-${r.id}`} position={i}>
          <DateTimeCell iso={r.at} />
          <IndexTable.Cell>
            <div style={{ maxWidth: '28rem' }}>
              <RequestLine r={r} />
            </div>
          </IndexTable.Cell>
          <IndexTable.Cell>
            <StatusBadge r={r} />
          </IndexTable.Cell>
          <IndexTable.Cell>{formatDuration(r.durationMs)}</IndexTable.Cell>
          <IndexTable.Cell>{detailsButton(r)}</IndexTable.Cell>
        </IndexTable.Row>
      )}
      {open.has(r.id) && (
        <IndexTable.Row id={`request-${r.id}-detail`} position={i} rowType="child">
          <IndexTable.Cell colSpan={smDown ? 1 : 5}>
            <div className="svc-wrap">
              <Details r={r} />
            </div>
          </IndexTable.Cell>
        </IndexTable.Row>
      )}
    </Fragment>
  ));

  return (
    <IndexTable
      condensed={smDown}
      selectable={false}
      resourceName={{ singular: 'request', plural: 'requests' }}
      itemCount={requests.length}
      headings={[{ title: 'Time' }, { title: 'Request' }, { title: 'Status' }, { title: 'Duration' }, { title: 'Details', hidden: true }]}
      pagination={pagination}
    >
      {rows}
    </IndexTable>
  );
}
