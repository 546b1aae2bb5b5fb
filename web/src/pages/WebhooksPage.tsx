import {
  BlockStack,
  Box,
  Button,
  Card,
  InlineStack,
  Layout,
  Link,
  Page,
  SkeletonBodyText,
  SkeletonDisplayText,
  SkeletonPage,
  Text,
  Toast,
} from '@shopify/polaris';
import { PlusIcon } from '@shopify/polaris-icons';
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'react';
import { ApiError, type WebhookEndpoint, type WebhookEventType } from '../api';
import { ErrorBanner } from '../components/ErrorBanner';
import { useAdminApi } from '../context';
import { ROUTES } from '../router';
import { WebhookEndpointCard } from './WebhookEndpointCard';
import { WebhookEndpointModal } from './WebhookEndpointModal';

const asApiError = (err: unknown) => (err instanceof ApiError ? err : new ApiError(0, 'unexpected', String(err), null));

/** Settings → Webhooks: where svc tells the merchant's backend what changed (docs/product.md §10). */
export function WebhooksPage() {
  const { api } = useAdminApi();
  const [endpoints, setEndpoints] = useState<WebhookEndpoint[] | null>(null);
  // The store's limit, as the server enforces it (the admin API's shop answer).
  const [maxEndpoints, setMaxEndpoints] = useState<number | null>(null);
  const [eventTypes, setEventTypes] = useState<WebhookEventType[] | null>(null);
  const [loadError, setLoadError] = useState<ApiError | null>(null);
  const [modal, setModal] = useState<{ endpoint: WebhookEndpoint | null } | null>(null);
  const [toast, setToast] = useState<string | null>(null);
  // Focus returns from the add dialog to the button, or to the reason it became disabled (the 10th endpoint).
  const addReturn = useRef<HTMLElement | null>(null);
  const buttonWrap = useRef<HTMLDivElement>(null);
  const reasonWrap = useRef<HTMLDivElement>(null);
  useLayoutEffect(() => {
    addReturn.current = reasonWrap.current?.firstElementChild ? reasonWrap.current : buttonWrap.current;
  });

  const load = useCallback(async () => {
    setLoadError(null);
    try {
      const [list, shop, types] = await Promise.all([api.webhookEndpoints(), api.shop(), api.webhookEventTypes()]);
      setEndpoints(list.endpoints);
      setMaxEndpoints(shop.limits.maxWebhookEndpoints);
      setEventTypes(types.eventTypes);
    } catch (err) {
      setLoadError(asApiError(err));
    }
  }, [api]);
  useEffect(() => {
    void load();
  }, [load]);

  if (!endpoints || maxEndpoints === null || !eventTypes) {
    if (loadError) {
      return (
        <Page title="Webhooks" backAction={{ content: 'Settings', url: ROUTES.settings }}>
          <BlockStack gap="400">
            <ErrorBanner error={loadError} title="The webhook endpoints could not be loaded" />
            <InlineStack>
              <Button onClick={() => void load()}>Try again</Button>
            </InlineStack>
          </BlockStack>
        </Page>
      );
    }
    return (
      <SkeletonPage title="Webhooks" backAction>
        <Card>
          <BlockStack gap="400">
            <SkeletonDisplayText size="small" />
            <SkeletonBodyText lines={4} />
          </BlockStack>
        </Card>
      </SkeletonPage>
    );
  }

  const atLimit = endpoints.length >= maxEndpoints;
  const replace = (e: WebhookEndpoint) => setEndpoints((list) => list && list.map((x) => (x.id === e.id ? e : x)));
  const onSaved = (e: WebhookEndpoint) => {
    const adding = !modal?.endpoint;
    setEndpoints((list) => (list ? (adding ? [...list, e] : list.map((x) => (x.id === e.id ? e : x))) : [e]));
    setModal(null);
    setToast(adding ? 'Endpoint added' : 'Endpoint saved');
  };
  const onDeleted = (e: WebhookEndpoint) => {
    setEndpoints((list) => list && list.filter((x) => x.id !== e.id));
    setToast('Endpoint deleted');
    // The deleted card held focus; the Add button is the next sensible place.
    requestAnimationFrame(() => buttonWrap.current?.querySelector('button')?.focus());
  };

  return (
    <Page
      title="Webhooks"
      subtitle="svc POSTs every change of a subscription contract to your server, signed, as it happens."
      backAction={{ content: 'Settings', url: ROUTES.settings }}
    >
      <Layout>
        {loadError && (
          <Layout.Section>
            <ErrorBanner error={loadError} title="The webhook endpoints could not be refreshed" onDismiss={() => setLoadError(null)} />
          </Layout.Section>
        )}
        <Layout.Section>
          <BlockStack gap="400">
            <Card>
              <BlockStack gap="300">
                <InlineStack align="space-between" blockAlign="center" gap="300">
                  <BlockStack gap="100">
                    <Text as="h2" variant="headingMd">
                      Endpoints
                    </Text>
                    <Text as="p" tone={atLimit ? 'caution' : 'subdued'}>
                      <span data-testid="endpoint-count">{`${endpoints.length} of ${maxEndpoints} endpoints`}</span>
                      {' · '}a store can have at most {maxEndpoints}.
                    </Text>
                  </BlockStack>
                  <div ref={buttonWrap}>
                    <Button
                      variant="primary"
                      icon={PlusIcon}
                      disabled={atLimit}
                      ariaDescribedBy={atLimit ? 'add-endpoint-disabled-reason' : undefined}
                      onClick={() => setModal({ endpoint: null })}
                    >
                      Add endpoint
                    </Button>
                  </div>
                </InlineStack>
                <div ref={reasonWrap}>
                  {atLimit && (
                    <div id="add-endpoint-disabled-reason" tabIndex={-1} className="svc-focus-target">
                      <Text as="p" tone="caution">
                        This store has {maxEndpoints} webhook endpoints, the most it can have. Delete one to add another.
                      </Text>
                    </div>
                  )}
                </div>
                {endpoints.length === 0 && (
                  <Box paddingBlockStart="200">
                    <BlockStack gap="200" inlineAlign="center">
                      <Text as="p" variant="headingSm">
                        No webhook endpoints yet
                      </Text>
                      <Text as="p" tone="subdued" alignment="center">
                        Add your server’s URL to be told when a contract is paused, resumed, cancelled, skipped or
                        rescheduled, whoever did it.
                      </Text>
                    </BlockStack>
                  </Box>
                )}
              </BlockStack>
            </Card>
            {endpoints.map((e) => (
              <WebhookEndpointCard
                key={e.id}
                endpoint={e}
                eventTypes={eventTypes}
                onEdit={(x) => setModal({ endpoint: x })}
                onChanged={replace}
                onDeleted={onDeleted}
                onStale={() => void load()}
                notify={setToast}
              />
            ))}
          </BlockStack>
        </Layout.Section>
        <Layout.Section>
          <VerifyCard />
        </Layout.Section>
      </Layout>
      <WebhookEndpointModal
        open={modal !== null}
        endpoint={modal?.endpoint ?? null}
        eventTypes={eventTypes}
        activator={modal?.endpoint ? undefined : addReturn}
        onClose={() => setModal(null)}
        onSaved={onSaved}
        onStale={() => void load()}
      />
      {toast && <Toast content={toast} onDismiss={() => setToast(null)} />}
    </Page>
  );
}

/** How a receiver checks a delivery: the three headers and one line of code; the README has the rest. */
function VerifyCard() {
  return (
    <Card>
      <BlockStack gap="300">
        <Text as="h2" variant="headingMd">
          Verify signatures
        </Text>
        <Text as="p">
          Deliveries follow{' '}
          <Link url="https://www.standardwebhooks.com/" external>
            Standard Webhooks
          </Link>
          . Each carries <code>webhook-id</code> (the same on every retry: drop duplicates by it),{' '}
          <code>webhook-timestamp</code> and <code>webhook-signature</code>, an HMAC-SHA256 of{' '}
          <code>id.timestamp.body</code> under the endpoint’s signing secret. Check it against the raw body, and refuse a
          timestamp more than 5 minutes old.
        </Text>
        <pre className="svc-code">{`import { Webhook } from 'standardwebhooks';
const event = new Webhook(process.env.SVC_WEBHOOK_SECRET).verify(rawBody, headers); // throws if forged or stale`}</pre>
        <Text as="p" tone="subdued">
          Other languages, rotation and delivery guarantees: the README, section “Webhooks: svc tells your backend what
          changed”, and the{' '}
          <Link url="/docs" external>
            API reference
          </Link>
          .
        </Text>
      </BlockStack>
    </Card>
  );
}
