import { Banner, BlockStack, Modal, Select, Text } from '@shopify/polaris';
import { useEffect, useState } from 'react';
import { ApiError, type WebhookDelivery, type WebhookEndpoint, type WebhookEventType } from '../api';
import { ErrorBanner } from '../components/ErrorBanner';
import { useAdminApi } from '../context';
import { CopyableSecret } from '../components/CopyableSecret';

const asApiError = (err: unknown) => (err instanceof ApiError ? err : new ApiError(0, 'unexpected', String(err), null));

/** Runs one request for a dialog: busy while it runs, the error kept for the dialog's banner. */
function useRequest(open: boolean) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  useEffect(() => {
    setBusy(false);
    setError(null);
  }, [open]);
  const run = async <T,>(fn: () => Promise<T>): Promise<T | null> => {
    if (busy) return null;
    setBusy(true);
    setError(null);
    try {
      return await fn();
    } catch (err) {
      setError(asApiError(err));
      return null;
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run };
}

/** Queues a test event of a chosen type: signed, sent and logged like a real one, marked `test`. */
export function SendTestModal({
  endpoint,
  eventTypes,
  open,
  onClose,
  onSent,
}: {
  endpoint: WebhookEndpoint;
  eventTypes: WebhookEventType[];
  open: boolean;
  onClose: () => void;
  onSent: (d: WebhookDelivery) => void;
}) {
  const { api } = useAdminApi();
  const [type, setType] = useState(eventTypes[0]?.type ?? 'contract.paused');
  const { busy, error, run } = useRequest(open);
  const send = async () => {
    const res = await run(() => api.sendTestWebhook(endpoint.id, type));
    if (res) onSent(res.delivery);
  };
  return (
    <Modal
      open={open}
      onClose={onClose}
      title="Send a test event"
      primaryAction={{ content: 'Send test event', onAction: send, loading: busy }}
      secondaryActions={[{ content: 'Cancel', onAction: onClose }]}
    >
      <Modal.Section>
        <BlockStack gap="400">
          <ErrorBanner error={error} title="The test event was not sent" takeFocus />
          <Select
            label="Event type"
            options={eventTypes.map((e) => ({ label: e.type, value: e.type }))}
            value={type}
            onChange={setType}
            helpText={eventTypes.find((e) => e.type === type)?.description}
          />
          <Text as="p">
            A test delivery carries a sample contract (id 0, test@example.com) and <code>"test": true</code> in its event
            data. It is signed and retried like any other delivery{endpoint.status === 'disabled' ? ', and waits until the endpoint is enabled' : ''}.
          </Text>
        </BlockStack>
      </Modal.Section>
    </Modal>
  );
}

/** Rotation is safe for a receiver that switches within a day, and the dialog says exactly that before it happens. */
export function RotateSecretModal({ endpoint, open, onClose, onRotated }: { endpoint: WebhookEndpoint; open: boolean; onClose: () => void; onRotated: (e: WebhookEndpoint) => void }) {
  const { api } = useAdminApi();
  const [secret, setSecret] = useState<string | null>(null);
  const { busy, error, run } = useRequest(open);
  useEffect(() => {
    if (!open) setSecret(null);
  }, [open]);
  const rotate = async () => {
    const res = await run(() => api.rotateWebhookSecret(endpoint.id));
    if (res) {
      setSecret(res.secret);
      onRotated(res.endpoint);
    }
  };
  if (secret) {
    return (
      <Modal open={open} onClose={onClose} title="New signing secret" primaryAction={{ content: 'Done', onAction: onClose }}>
        <Modal.Section>
          <BlockStack gap="400">
            <Banner tone="info" title="Both secrets sign for the next 24 hours">
              <p>Put the new secret on your server within 24 hours. Until then each delivery carries a signature for each secret.</p>
            </Banner>
            <CopyableSecret label="New signing secret" secret={secret} />
          </BlockStack>
        </Modal.Section>
      </Modal>
    );
  }
  return (
    <Modal
      open={open}
      onClose={onClose}
      title="Rotate the signing secret?"
      primaryAction={{ content: 'Rotate secret', onAction: rotate, loading: busy }}
      secondaryActions={[{ content: 'Cancel', onAction: onClose }]}
    >
      <Modal.Section>
        <BlockStack gap="300">
          <ErrorBanner error={error} title="The secret was not rotated" takeFocus />
          <Text as="p">A new signing secret is made for this endpoint now.</Text>
          <Text as="p">
            The old secret keeps signing every delivery beside the new one for <strong>24 hours</strong> (the{' '}
            <code>webhook-signature</code> header then carries two signatures), so your server keeps verifying while you
            switch it to the new secret. After 24 hours only the new secret signs.
          </Text>
        </BlockStack>
      </Modal.Section>
    </Modal>
  );
}

/** Deleting drops the endpoint and its log at once; the dialog names the URL so the right one goes. */
export function DeleteEndpointModal({ endpoint, open, onClose, onDeleted }: { endpoint: WebhookEndpoint; open: boolean; onClose: () => void; onDeleted: () => void }) {
  const { api } = useAdminApi();
  const { busy, error, run } = useRequest(open);
  const remove = async () => {
    const res = await run(async () => {
      await api.deleteWebhookEndpoint(endpoint.id);
      return true;
    });
    if (res) onDeleted();
  };
  return (
    <Modal
      open={open}
      onClose={onClose}
      title="Delete this webhook endpoint?"
      primaryAction={{ content: 'Delete endpoint', destructive: true, onAction: remove, loading: busy }}
      secondaryActions={[{ content: 'Cancel', onAction: onClose }]}
    >
      <Modal.Section>
        <BlockStack gap="300">
          <ErrorBanner error={error} title="The endpoint was not deleted" takeFocus />
          <Text as="p" breakWord>
            <span className="svc-mono">{endpoint.url}</span>
          </Text>
          <Text as="p">
            Nothing more is sent to it, deliveries still waiting for it are dropped, and its delivery log is deleted. This
            cannot be undone.
          </Text>
        </BlockStack>
      </Modal.Section>
    </Modal>
  );
}
