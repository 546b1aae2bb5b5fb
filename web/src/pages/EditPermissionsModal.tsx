import { BlockStack, Form, Modal, Text } from '@shopify/polaris';
import { useEffect, useState, type RefObject } from 'react';
import { ApiError, type ApiKey } from '../api';
import { ErrorBanner } from '../components/ErrorBanner';
import { useAdminApi } from '../context';
import { keyLabel } from './keyLabel';
import { PermissionsPicker } from './PermissionsPicker';
import { choiceOf, permissionsOf, PRESETS, RESOURCES, type PermissionChoice } from './permissions';

type Props = {
  target: ApiKey | null;
  activator: RefObject<HTMLElement>;
  onClose: (updated: ApiKey | null) => void;
};

/**
 * A key's permissions, changed with the same choices as at generation. The change holds from the key's very next
 * request, on every server, so the dialog says so; nothing about the key itself (its secret) changes.
 */
export function EditPermissionsModal({ target, activator, onClose }: Props) {
  const { api } = useAdminApi();
  const [choice, setChoice] = useState<PermissionChoice>(choiceOf(PRESETS.read_write));
  const [saving, setSaving] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  useEffect(() => {
    if (target) setChoice(choiceOf(target.permissions));
    setSaving(false);
    setError(null);
  }, [target]);

  const next = permissionsOf(choice);
  const unchanged = target !== null && RESOURCES.every((r) => target.permissions[r] === next[r]);
  const save = async () => {
    if (!target || saving) return;
    if (unchanged) return onClose(null);
    setSaving(true);
    setError(null);
    try {
      const { key } = await api.updateKeyPermissions(target.id, next);
      onClose(key);
    } catch (err) {
      setError(err instanceof ApiError ? err : new ApiError(0, 'unexpected', String(err), null));
      setSaving(false);
    }
  };
  const close = () => {
    if (!saving) onClose(null);
  };

  const label = target ? keyLabel(target) : '';
  return (
    <Modal
      open={target !== null}
      activator={activator}
      onClose={close}
      title={`Permissions of ${label}`}
      primaryAction={{ content: 'Save permissions', onAction: save, loading: saving, disabled: unchanged }}
      secondaryActions={[{ content: 'Cancel', onAction: close, disabled: saving }]}
    >
      <Modal.Section>
        <Form onSubmit={save}>
          <BlockStack gap="400">
            <ErrorBanner error={error} title="The permissions were not changed" takeFocus />
            <Text as="p">
              <strong>{label}</strong> (fingerprint <span className="svc-mono">{target?.fingerprint}</span>) keeps its
              secret. New permissions apply from its very next request: anything outside them is refused with 403
              insufficient_scope, and MCP clients see only the tools it may call.
            </Text>
            <PermissionsPicker value={choice} onChange={setChoice} />
          </BlockStack>
        </Form>
      </Modal.Section>
    </Modal>
  );
}
