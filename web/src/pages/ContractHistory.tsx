import { Badge, BlockStack, Box, Button, Divider, InlineStack, Text } from '@shopify/polaris';
import { useState } from 'react';
import { ApiError, type ContractEvent } from '../api';
import { ErrorBanner } from '../components/ErrorBanner';
import { useAdminApi } from '../context';
import { actorLabel, eventChanges, eventDetails, eventLabel, formatDateTime } from '../format';

/**
 * A contract's event history, newest first: what happened, when, and who did it (which key by fingerprint, MCP, the
 * scheduler, the merchant in this admin, or the platform). The newest page comes with the contract; older ones load
 * on request. A new `events` (the contract changed) starts the list again from it. An edit lists what it changed,
 * naming a line by its title (`lineTitle`, from the contract as it is now).
 */
export function ContractHistory({
  contractId,
  events,
  nextCursor,
  lineTitle,
}: {
  contractId: string;
  events: ContractEvent[];
  nextCursor: string | null;
  lineTitle?: (lineId: string) => string | undefined;
}) {
  const { api } = useAdminApi();
  const [shown, setShown] = useState({ from: events, events, nextCursor });
  const [error, setError] = useState<ApiError | null>(null);
  const [loading, setLoading] = useState(false);
  if (shown.from !== events) setShown({ from: events, events, nextCursor });

  const loadOlder = async () => {
    if (!shown.nextCursor) return;
    setLoading(true);
    setError(null);
    try {
      const res = await api.events(contractId, shown.nextCursor);
      setShown((s) => ({ ...s, events: [...s.events, ...res.events], nextCursor: res.nextCursor ?? null }));
    } catch (err) {
      setError(err instanceof ApiError ? err : new ApiError(0, 'unexpected', String(err), null));
    } finally {
      setLoading(false);
    }
  };

  return (
    <BlockStack gap="200">
      {shown.events.length === 0 && (
        <Text as="p" tone="subdued">
          Nothing has happened to this contract yet.
        </Text>
      )}
      {shown.events.length > 0 && (
        <ol aria-label={`History of contract ${contractId}`} style={{ listStyle: 'none', margin: 0, padding: 0 }}>
          {shown.events.map((e, i) => {
            const changes = eventChanges(e, lineTitle);
            const details = eventDetails(e);
            return (
              <li key={e.id}>
                {i > 0 && <Divider />}
                <Box paddingBlock="200">
                  <BlockStack gap="050">
                    <InlineStack gap="200" align="space-between" blockAlign="baseline">
                      <InlineStack gap="200" blockAlign="center">
                        <Text as="span" fontWeight="semibold">
                          {changes.length > 0 ? 'Edited' : eventLabel(e.type)}
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
                    {changes.length > 0 && (
                      <ul aria-label="What changed" className="svc-changes">
                        {changes.map((c, k) => (
                          <li key={k}>
                            <Text as="span" variant="bodySm">
                              {c}
                            </Text>
                          </li>
                        ))}
                      </ul>
                    )}
                    {details.length > 0 && (
                      <Text as="p" variant="bodySm" tone="subdued">
                        {details.join(' · ')}
                      </Text>
                    )}
                  </BlockStack>
                </Box>
              </li>
            );
          })}
        </ol>
      )}
      <ErrorBanner error={error} title="Older events could not be loaded" onDismiss={() => setError(null)} />
      {shown.nextCursor && (
        <InlineStack>
          <Button onClick={() => void loadOlder()} loading={loading}>
            Load older events
          </Button>
        </InlineStack>
      )}
    </BlockStack>
  );
}
