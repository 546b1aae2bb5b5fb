import { BlockStack, Button, InlineStack, Text } from '@shopify/polaris';
import { ViewIcon } from '@shopify/polaris-icons';
import { useState } from 'react';
import { ApiError, type WebhookEndpoint } from '../api';
import { CopyableSecret } from '../components/CopyableSecret';
import { ErrorBanner } from '../components/ErrorBanner';
import { useAdminApi } from '../context';
import { formatDateTime } from '../format';

/**
 * The endpoint's signing secret, fetched only when the merchant asks for it and dropped when hidden: it is not in the
 * endpoint list, so it is on screen only on request.
 */
export function WebhookSecret({ endpoint }: { endpoint: WebhookEndpoint }) {
  const { api } = useAdminApi();
  const [revealed, setRevealed] = useState<{ secret: string; previousSecretExpiresAt: string | null } | null>(null);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);

  const reveal = async () => {
    setLoading(true);
    setError(null);
    try {
      setRevealed(await api.revealWebhookSecret(endpoint.id));
    } catch (err) {
      setError(err instanceof ApiError ? err : new ApiError(0, 'unexpected', String(err), null));
    } finally {
      setLoading(false);
    }
  };

  if (!revealed) {
    return (
      <BlockStack gap="200">
        <ErrorBanner error={error} title="The signing secret could not be shown" onDismiss={() => setError(null)} />
        <InlineStack gap="200" blockAlign="center">
          <Button icon={ViewIcon} onClick={() => void reveal()} loading={loading}>
            Reveal signing secret
          </Button>
          <Text as="span" tone="subdued" variant="bodySm">
            Your server verifies each delivery with it.
          </Text>
        </InlineStack>
      </BlockStack>
    );
  }
  return (
    <BlockStack gap="200">
      <CopyableSecret
        label="Signing secret"
        secret={revealed.secret}
        helpText="Keep it on your server, like a password. Anyone with it can forge deliveries."
      />
      {revealed.previousSecretExpiresAt && (
        <Text as="p" tone="subdued">
          The previous secret also signs every delivery until {formatDateTime(revealed.previousSecretExpiresAt)}.
        </Text>
      )}
      <InlineStack>
        <Button variant="plain" onClick={() => setRevealed(null)}>
          Hide secret
        </Button>
      </InlineStack>
    </BlockStack>
  );
}
