import { Badge, BlockStack, Box, Button, Collapsible, Divider, InlineStack, SkeletonBodyText, Text } from '@shopify/polaris';
import { useCallback, useEffect, useState } from 'react';
import { ApiError, type ContractEvent } from '../api';
import { ErrorBanner } from '../components/ErrorBanner';
import { useAdminApi } from '../context';
import { actorLabel, eventDetails, eventLabel, formatDateTime } from '../format';

/**
 * A contract's event history: what happened, when, and who did it (which key by fingerprint, MCP, the scheduler,
 * admin, or the platform). Loaded when opened, so the list of contracts costs one request, not one per contract.
 */
export function ContractHistory({ contractId, updatedAt }: { contractId: string; updatedAt: string }) {
  const { api } = useAdminApi();
  const [open, setOpen] = useState(false);
  const [events, setEvents] = useState<ContractEvent[] | null>(null);
  const [nextCursor, setNextCursor] = useState<string | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [loading, setLoading] = useState(false);
  const regionId = `contract-${contractId}-history`;

  const load = useCallback(
    async (cursor?: string) => {
      setLoading(true);
      setError(null);
      try {
        const res = await api.events(contractId, cursor);
        setEvents((prev) => (cursor && prev ? [...prev, ...res.events] : res.events));
        setNextCursor(res.nextCursor ?? null);
      } catch (err) {
        setError(err instanceof ApiError ? err : new ApiError(0, 'unexpected', String(err), null));
      } finally {
        setLoading(false);
      }
    },
    [api, contractId],
  );
  // A contract that changed since the history was loaded shows its new events when opened again.
  useEffect(() => {
    setEvents(null);
  }, [updatedAt]);
  useEffect(() => {
    if (open && events === null && !loading && !error) void load();
  }, [open, events, loading, error, load]);

  return (
    <BlockStack gap="200">
      <InlineStack>
        <Button variant="plain" disclosure={open ? 'up' : 'down'} ariaExpanded={open} ariaControls={regionId} onClick={() => setOpen((o) => !o)}>
          {open ? 'Hide history' : 'Show history'}
        </Button>
      </InlineStack>
      <Collapsible id={regionId} open={open} transition={{ duration: '150ms', timingFunction: 'ease-in-out' }}>
        <BlockStack gap="200">
          <ErrorBanner error={error} title="The history could not be loaded" />
          {error && (
            <InlineStack>
              <Button onClick={() => void load()}>Try again</Button>
            </InlineStack>
          )}
          {events === null && loading && <SkeletonBodyText lines={3} />}
          {events && events.length === 0 && <Text as="p" tone="subdued">Nothing has happened to this contract yet.</Text>}
          {events && events.length > 0 && (
            <ol aria-label={`History of contract ${contractId}`} style={{ listStyle: 'none', margin: 0, padding: 0 }}>
              {events.map((e, i) => (
                <li key={e.id}>
                  {i > 0 && <Divider />}
                  <Box paddingBlock="200">
                    <BlockStack gap="050">
                      <InlineStack gap="200" align="space-between" blockAlign="baseline">
                        <InlineStack gap="200" blockAlign="center">
                          <Text as="span" fontWeight="semibold">
                            {eventLabel(e.type)}
                          </Text>
                          {/* A change svc did not make stands out: the merchant did not do it here, nor did a key. */}
                          {e.actor.type === 'platform' && <Badge tone="info">Platform</Badge>}
                        </InlineStack>
                        <Text as="span" tone="subdued" variant="bodySm">
                          <time dateTime={e.at}>{formatDateTime(e.at)}</time>
                        </Text>
                      </InlineStack>
                      <Text as="p" variant="bodySm">
                        By {actorLabel(e.actor)}
                      </Text>
                      {eventDetails(e).length > 0 && (
                        <Text as="p" variant="bodySm" tone="subdued">
                          {eventDetails(e).join(' · ')}
                        </Text>
                      )}
                    </BlockStack>
                  </Box>
                </li>
              ))}
            </ol>
          )}
          {nextCursor && (
            <InlineStack>
              <Button onClick={() => void load(nextCursor)} loading={loading}>
                Load older events
              </Button>
            </InlineStack>
          )}
        </BlockStack>
      </Collapsible>
    </BlockStack>
  );
}
