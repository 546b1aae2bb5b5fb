import { Badge, BlockStack, Box, Button, Card, InlineGrid, InlineStack, Page, Select, SkeletonBodyText, Text, TextField } from '@shopify/polaris';
import { RefreshIcon } from '@shopify/polaris-icons';
import { useCallback, useEffect, useState } from 'react';
import { ApiError, type ApiKey, type Connection, type RequestLogEntry } from '../api';
import { ErrorBanner } from '../components/ErrorBanner';
import { useAdminApi } from '../context';
import { ROUTES } from '../router';
import { keyLabel } from './keyLabel';
import { RequestLogTable } from './RequestLogTable';

const PAGE_SIZE = 25;
/** The path filter applies once typing pauses this long. */
const TYPING_MS = 400;

const STATUS_FILTERS = [
  { label: 'All statuses', value: '' },
  { label: 'Succeeded (2xx)', value: '2xx' },
  // A refused MCP tool call counts with the status the API gives its refusal (the server filters so).
  { label: 'Client errors (4xx)', value: '4xx' },
  { label: 'Server errors (5xx)', value: '5xx' },
];

const asApiError = (err: unknown) => (err instanceof ApiError ? err : new ApiError(0, 'unexpected', String(err), null));

/** A datetime-local field's value (the merchant's own time) as an ISO UTC timestamp; '' when empty or unreadable. */
const isoOfLocal = (value: string) => {
  if (!value) return '';
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? '' : d.toISOString();
};

/**
 * Settings → API → a key (or a connected app) → its requests: every API and MCP request made with the key, or by the
 * app, in the last 14 days, newest first, filtered by status, path and time; each opens to what the log kept of it.
 * What a merchant looks at when an integration misbehaves: what the integrator's backend sent, and what it got back.
 */
export function KeyRequestsPage({ keyId, connectionId }: { keyId?: string; connectionId?: string }) {
  const { api } = useAdminApi();
  const [key, setKey] = useState<ApiKey | null | undefined>(undefined);
  const [connection, setConnection] = useState<Connection | null | undefined>(undefined);
  const [status, setStatus] = useState('');
  const [pathDraft, setPathDraft] = useState('');
  const [path, setPath] = useState('');
  const [beforeLocal, setBeforeLocal] = useState('');
  // cursors[i] loads page i; page 0 has none.
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const [page, setPage] = useState(0);
  const [data, setData] = useState<{ requests: RequestLogEntry[]; nextCursor: string | null } | null>(null);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const before = isoOfLocal(beforeLocal);

  useEffect(() => {
    let live = true;
    if (keyId) {
      api.keys().then(
        (list) => live && setKey(list.keys.find((k) => k.id === keyId) ?? null),
        (err) => live && setError(asApiError(err)),
      );
    } else {
      // A disconnected app is no longer listed; its requests stay in the log for 14 days.
      api.connections().then(
        (list) => live && setConnection(list.connections.find((c) => c.id === connectionId) ?? null),
        (err) => live && setError(asApiError(err)),
      );
    }
    return () => {
      live = false;
    };
  }, [api, keyId, connectionId]);

  // A filter changed: back to the newest requests.
  const restart = () => {
    setCursors([undefined]);
    setPage(0);
  };
  useEffect(() => {
    if (pathDraft.trim() === path) return;
    const timer = setTimeout(() => {
      setPath(pathDraft.trim());
      restart();
    }, TYPING_MS);
    return () => clearTimeout(timer);
  }, [pathDraft, path]);

  const load = useCallback(async () => {
    setLoading(true);
    setError(null);
    try {
      setData(await api.requestLog({ keyId, connectionId, status: status || undefined, path: path || undefined, before: before || undefined, cursor: cursors[page], limit: PAGE_SIZE }));
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setLoading(false);
    }
  }, [api, keyId, connectionId, status, path, before, cursors, page]);
  useEffect(() => {
    void load();
  }, [load]);

  const filtered = Boolean(status || path || before);
  const title = key ? `Requests: ${keyLabel(key)}` : connection ? `Requests: ${connection.clientName}` : 'Requests';
  const pagination =
    data && (page > 0 || data.nextCursor)
      ? {
          hasPrevious: page > 0,
          onPrevious: () => setPage((p) => Math.max(0, p - 1)),
          hasNext: Boolean(data.nextCursor),
          onNext: () => {
            setCursors((c) => [...c.slice(0, page + 1), data.nextCursor!]);
            setPage((p) => p + 1);
          },
          label: `Page ${page + 1}`,
        }
      : undefined;

  return (
    <Page
      title={title}
      titleMetadata={key?.status === 'revoked' ? <Badge tone="critical">Revoked</Badge> : undefined}
      subtitle={
        connectionId ? 'Every MCP request this connected app made in the last 14 days, newest first.' : 'Every API and MCP request made with this key in the last 14 days, newest first.'
      }
      backAction={{ content: 'API', url: ROUTES.api }}
      secondaryActions={[{ content: 'Refresh', icon: RefreshIcon, onAction: () => void load(), loading: loading && data !== null, accessibilityLabel: 'Refresh the requests' }]}
    >
      <BlockStack gap="400">
        {connection === null && (
          <Text as="p" tone="subdued">
            This app is no longer connected; its requests stay here for 14 days.
          </Text>
        )}
        {key === null && (
          <ErrorBanner error={new ApiError(404, 'not_found', 'This store has no API key with this id.', null)} title="Unknown key" />
        )}
        <Card padding="0">
          <Box padding="400">
            <form role="search" aria-label="Filter the requests" onSubmit={(e) => e.preventDefault()}>
              <InlineGrid columns={{ xs: 1, md: '1fr 2fr 1fr' }} gap="300">
                <Select
                  label="Status"
                  options={STATUS_FILTERS}
                  value={status}
                  onChange={(v) => {
                    setStatus(v);
                    restart();
                  }}
                />
                <TextField
                  label="Path contains"
                  placeholder="/actions, ?status=PAUSED, /mcp"
                  value={pathDraft}
                  onChange={setPathDraft}
                  clearButton
                  onClearButtonClick={() => setPathDraft('')}
                  autoComplete="off"
                  maxLength={200}
                />
                <TextField
                  label="Before"
                  type="datetime-local"
                  value={beforeLocal}
                  onChange={(v) => {
                    setBeforeLocal(v);
                    restart();
                  }}
                  clearButton
                  onClearButtonClick={() => {
                    setBeforeLocal('');
                    restart();
                  }}
                  autoComplete="off"
                />
              </InlineGrid>
            </form>
          </Box>
          <Box paddingInline="400" paddingBlockEnd={error ? '400' : '0'}>
            <ErrorBanner error={error} title="The requests could not be loaded" onDismiss={() => setError(null)} />
          </Box>
          {data === null ? (
            loading && (
              <Box padding="400">
                <SkeletonBodyText lines={5} />
              </Box>
            )
          ) : data.requests.length === 0 && page === 0 ? (
            <Box padding="400" borderBlockStartWidth="025" borderColor="border">
              <BlockStack gap="200" inlineAlign="center">
                <Text as="p" variant="headingSm">
                  {filtered ? 'No requests match these filters' : 'No requests in the last 14 days'}
                </Text>
                <Text as="p" tone="subdued" alignment="center">
                  {filtered
                    ? 'Change or clear the filters to see more.'
                    : 'Requests made with this key to the API or the MCP server appear here within a few seconds.'}
                </Text>
                {filtered && (
                  <InlineStack>
                    <Button
                      onClick={() => {
                        setStatus('');
                        setPathDraft('');
                        setPath('');
                        setBeforeLocal('');
                        restart();
                      }}
                    >
                      Clear filters
                    </Button>
                  </InlineStack>
                )}
              </BlockStack>
            </Box>
          ) : (
            <div aria-busy={loading} aria-label={`Requests of ${key ? keyLabel(key) : connection ? connection.clientName : connectionId ? 'this app' : 'this key'}`} role="region">
              <RequestLogTable requests={data.requests} pagination={pagination} />
            </div>
          )}
        </Card>
        <Text as="p" variant="bodySm" tone="subdued">
          Requests are kept for 14 days. Bodies are never recorded, and anything in a path that looks like a key or a token
          is replaced.
        </Text>
      </BlockStack>
    </Page>
  );
}
