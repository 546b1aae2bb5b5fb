import { Badge, Banner, BlockStack, Button, Card, Collapsible, Divider, InlineStack, Text } from '@shopify/polaris';
import { DeleteIcon, EditIcon, RefreshIcon, SendIcon } from '@shopify/polaris-icons';
import { useState } from 'react';
import { ApiError, type WebhookEndpoint, type WebhookEventType, type WebhookResendable } from '../api';
import { ErrorBanner } from '../components/ErrorBanner';
import { useAdminApi } from '../context';
import { formatDateTime } from '../format';
import { WebhookDeliveries } from './WebhookDeliveries';
import { DeleteEndpointModal, RotateSecretModal, SendTestModal } from './WebhookDialogs';
import { WebhookSecret } from './WebhookSecret';
import { ALL_EVENTS, disabledReasonText, plural } from './webhookText';

type Props = {
  endpoint: WebhookEndpoint;
  /** Every event type, for the test event's choice. */
  eventTypes: WebhookEventType[];
  onEdit: (e: WebhookEndpoint) => void;
  onChanged: (e: WebhookEndpoint) => void;
  onDeleted: (e: WebhookEndpoint) => void;
  /** The endpoint may have changed on the server (deliveries settled): reload the list. */
  onStale: () => void;
  notify: (message: string) => void;
};

type Dialog = 'test' | 'rotate' | 'delete' | null;

/** One endpoint: where it sends, what, whether it is on (and if not, why), its secret, its actions and its log. */
export function WebhookEndpointCard({ endpoint: e, eventTypes, onEdit, onChanged, onDeleted, onStale, notify }: Props) {
  const { api } = useAdminApi();
  const [dialog, setDialog] = useState<Dialog>(null);
  const [logOpen, setLogOpen] = useState(false);
  const [reloadKey, setReloadKey] = useState(0);
  const [toggling, setToggling] = useState(false);
  const [resending, setResending] = useState(false);
  const [error, setError] = useState<{ title: string; err: ApiError } | null>(null);
  // What failed while the endpoint was off, as the enabling answer counted it: offered until resent or declined.
  const [resendable, setResendable] = useState<WebhookResendable | null>(null);
  const titleId = `endpoint-${e.id}-title`;
  const logId = `endpoint-${e.id}-log`;
  const showLog = () => {
    setLogOpen(true);
    setReloadKey((k) => k + 1);
  };
  const fail = (title: string, err: unknown) => setError({ title, err: err instanceof ApiError ? err : new ApiError(0, 'unexpected', String(err), null) });

  const setStatus = async (status: 'enabled' | 'disabled') => {
    setToggling(true);
    setError(null);
    try {
      const res = await api.updateWebhookEndpoint(e.id, { status });
      onChanged(res.endpoint);
      setResendable(res.resendable && res.resendable.count > 0 ? res.resendable : null);
      notify(status === 'enabled' ? 'Endpoint enabled' : 'Endpoint disabled');
    } catch (err) {
      fail(status === 'enabled' ? 'The endpoint was not enabled' : 'The endpoint was not disabled', err);
    } finally {
      setToggling(false);
    }
  };
  const resendFailed = async (r: WebhookResendable) => {
    setResending(true);
    setError(null);
    try {
      const { resent } = await api.resendFailedWebhookDeliveries(e.id, r.since);
      setResendable(null);
      notify(`${plural(resent, 'failed delivery', 'failed deliveries')} queued again`);
      showLog();
    } catch (err) {
      fail('The failed deliveries were not resent', err);
    } finally {
      setResending(false);
    }
  };

  const disabled = e.status === 'disabled';
  const reason = disabled ? disabledReasonText(e) : null;
  return (
    <section aria-labelledby={titleId}>
      <Card>
        <BlockStack gap="400">
          <BlockStack gap="200">
            <InlineStack align="space-between" blockAlign="start" gap="200" wrap={false}>
              <div style={{ minWidth: 0 }}>
                <Text as="h2" variant="headingMd" id={titleId} breakWord>
                  {e.url}
                </Text>
              </div>
              {disabled ? <Badge tone="critical">Disabled</Badge> : <Badge tone="success">Enabled</Badge>}
            </InlineStack>
            {e.description && <Text as="p">{e.description}</Text>}
            <InlineStack gap="100" blockAlign="center">
              <Text as="span" tone="subdued">
                Events:
              </Text>
              {e.events.includes(ALL_EVENTS) ? (
                <Badge tone="info">All events</Badge>
              ) : (
                e.events.map((t) => (
                  <Badge key={t}>
                    {t}
                  </Badge>
                ))
              )}
            </InlineStack>
            <Text as="p" variant="bodySm" tone="subdued">
              Added {formatDateTime(e.createdAt)}
            </Text>
          </BlockStack>

          {reason && (
            <Banner
              tone={e.disabledReason === 'manual' ? 'warning' : 'critical'}
              title={reason.title}
              action={{ content: 'Enable endpoint', onAction: () => void setStatus('enabled'), loading: toggling }}
            >
              <p>{reason.body}</p>
              {e.disabledAt && <p>Disabled {formatDateTime(e.disabledAt)}.</p>}
            </Banner>
          )}
          {!disabled && e.failingSince && (
            <Banner tone="warning" title={`Failing since ${formatDateTime(e.failingSince)}`}>
              <p>
                Deliveries to this URL are failing and are being retried. If none succeeds for 5 days, the endpoint is disabled. The
                delivery log says why each attempt failed.
              </p>
            </Banner>
          )}
          {resendable && (
            <Banner
              tone="info"
              title={`${plural(resendable.count, 'delivery', 'deliveries')} failed while this endpoint was off`}
              action={{ content: `Resend ${plural(resendable.count, 'failed delivery', 'failed deliveries')}`, onAction: () => void resendFailed(resendable), loading: resending }}
              secondaryAction={{ content: 'Don’t resend', onAction: () => setResendable(null) }}
              onDismiss={() => setResendable(null)}
            >
              <p>
                Since {formatDateTime(resendable.since)}, {resendable.count === 1 ? 'one delivery' : `${resendable.count} deliveries`} to this endpoint
                could not be delivered. Resending sends {resendable.count === 1 ? 'it' : 'them'} again now, with the original webhook-id,
                so your server can drop any it already has.
              </p>
            </Banner>
          )}
          {error && <ErrorBanner error={error.err} title={error.title} onDismiss={() => setError(null)} />}

          <InlineStack gap="200">
            <Button icon={SendIcon} onClick={() => setDialog('test')}>
              Send test event
            </Button>
            <Button icon={EditIcon} onClick={() => onEdit(e)}>
              Edit
            </Button>
            {disabled ? (
              <Button onClick={() => void setStatus('enabled')} loading={toggling}>
                Enable
              </Button>
            ) : (
              <Button onClick={() => void setStatus('disabled')} loading={toggling}>
                Disable
              </Button>
            )}
            <Button icon={RefreshIcon} onClick={() => setDialog('rotate')}>
              Rotate secret
            </Button>
            <Button icon={DeleteIcon} tone="critical" variant="plain" onClick={() => setDialog('delete')}>
              Delete
            </Button>
          </InlineStack>

          <WebhookSecret key={e.updatedAt} endpoint={e} />

          <Divider />
          <BlockStack gap="200">
            <InlineStack>
              <Button variant="plain" disclosure={logOpen ? 'up' : 'down'} ariaExpanded={logOpen} ariaControls={logId} onClick={() => setLogOpen((o) => !o)}>
                {logOpen ? 'Hide delivery log' : 'Show delivery log'}
              </Button>
            </InlineStack>
            <Collapsible id={logId} open={logOpen} transition={{ duration: '150ms', timingFunction: 'ease-in-out' }}>
              {logOpen && (
                <WebhookDeliveries
                  endpoint={e}
                  reloadKey={reloadKey}
                  onActivity={onStale}
                  onResent={() => notify(disabled ? 'Delivery queued; it is sent once the endpoint is enabled' : 'Delivery queued to be sent again')}
                />
              )}
            </Collapsible>
          </BlockStack>
        </BlockStack>
      </Card>
      <SendTestModal
        endpoint={e}
        eventTypes={eventTypes}
        open={dialog === 'test'}
        onClose={() => setDialog(null)}
        onSent={() => {
          setDialog(null);
          notify('Test event queued');
          showLog();
        }}
      />
      <RotateSecretModal endpoint={e} open={dialog === 'rotate'} onClose={() => setDialog(null)} onRotated={onChanged} />
      <DeleteEndpointModal
        endpoint={e}
        open={dialog === 'delete'}
        onClose={() => setDialog(null)}
        onDeleted={() => {
          setDialog(null);
          onDeleted(e);
        }}
      />
    </section>
  );
}
