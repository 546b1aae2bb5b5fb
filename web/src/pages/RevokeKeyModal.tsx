import { BlockStack, Modal, Text } from '@shopify/polaris';
import { useEffect, useState, type RefObject } from 'react';
import { ApiError, type ApiKey } from '../api';
import { ErrorBanner } from '../components/ErrorBanner';
import { useAdminApi } from '../context';
import { keyLabel } from './keyLabel';

type Props = {
  target: ApiKey | null;
  activator: RefObject<HTMLElement>;
  onClose: (revoked: ApiKey | null) => void;
};

/** Revocation is immediate and final (docs/product.md §1), so the dialog names the key and says what stops working. */
export function RevokeKeyModal({ target, activator, onClose }: Props) {
  const { api } = useAdminApi();
  const [saving, setSaving] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  useEffect(() => {
    setSaving(false);
    setError(null);
  }, [target]);

  const revoke = async () => {
    if (!target || saving) return;
    setSaving(true);
    setError(null);
    try {
      const { key } = await api.revokeKey(target.id);
      onClose(key);
    } catch (err) {
      setError(err instanceof ApiError ? err : new ApiError(0, 'unexpected', String(err), null));
      setSaving(false);
    }
  };

  const label = target ? keyLabel(target) : '';
  return (
    <Modal
      open={target !== null}
      activator={activator}
      onClose={() => onClose(null)}
      title={`Revoke ${label}?`}
      primaryAction={{ content: 'Revoke key', destructive: true, onAction: revoke, loading: saving }}
      secondaryActions={[{ content: 'Cancel', onAction: () => onClose(null) }]}
    >
      <Modal.Section>
        <BlockStack gap="300">
          <ErrorBanner error={error} title="The key was not revoked" takeFocus />
          <Text as="p">
            <strong>{label}</strong> (fingerprint <span className="svc-mono">{target?.fingerprint}</span>) stops working
            at once: every API and MCP request that uses it is refused with 401.
          </Text>
          <Text as="p">This cannot be undone. The key stays listed as revoked.</Text>
        </BlockStack>
      </Modal.Section>
    </Modal>
  );
}
