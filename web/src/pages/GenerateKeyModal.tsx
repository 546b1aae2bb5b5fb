import { Banner, BlockStack, Form, Modal, Text, TextField } from '@shopify/polaris';
import { useEffect, useState, type RefObject } from 'react';
import { ApiError, type ApiKey } from '../api';
import { CopyableSecret } from '../components/CopyableSecret';
import { ErrorBanner } from '../components/ErrorBanner';
import { useAdminApi } from '../context';
import { PermissionsPicker } from './PermissionsPicker';
import { choiceOf, PRESETS, type PermissionChoice } from './permissions';

const DEFAULT_CHOICE: PermissionChoice = choiceOf(PRESETS.read_write);

type Props = {
  open: boolean;
  activator: RefObject<HTMLElement>;
  onClose: () => void;
  onGenerated: (key: ApiKey) => void;
  /** The page's counts or access state were out of date (another tab, a plan change): reload them. */
  onStale: () => void;
};

/**
 * Generate → show the secret once → gone. The secret lives only in this component's state while the dialog is open;
 * closing the dialog drops it, and nothing else (storage, URL, list) ever holds it.
 */
export function GenerateKeyModal({ open, activator, onClose, onGenerated, onStale }: Props) {
  const { api } = useAdminApi();
  const [name, setName] = useState('');
  const [choice, setChoice] = useState<PermissionChoice>(DEFAULT_CHOICE);
  const [saving, setSaving] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const [created, setCreated] = useState<{ key: ApiKey; secret: string } | null>(null);

  useEffect(() => {
    if (!open) {
      setName('');
      setChoice(DEFAULT_CHOICE);
      setSaving(false);
      setError(null);
      setCreated(null);
    }
  }, [open]);

  const generate = async () => {
    if (saving) return;
    setSaving(true);
    setError(null);
    try {
      // A preset goes as itself (the key lists as that preset); Custom as its levels.
      const grant = choice.mode === 'custom' ? { permissions: choice.custom } : { access: choice.mode };
      const result = await api.generateKey(name.trim() || null, grant);
      setCreated(result);
      onGenerated(result.key);
    } catch (err) {
      const e = err instanceof ApiError ? err : new ApiError(0, 'unexpected', String(err), null);
      setError(e);
      if (e.code === 'key_limit_reached' || e.code === 'plan_required') onStale();
    } finally {
      setSaving(false);
    }
  };

  if (created) {
    return (
      <Modal
        open={open}
        activator={activator}
        onClose={onClose}
        title="Copy your new API key"
        primaryAction={{ content: 'Done', onAction: onClose }}
      >
        <Modal.Section>
          <BlockStack gap="400">
            <Banner tone="warning" title="This key will not be shown again">
              <p>
                Copy it now and keep it in your server's secret store. Once you close this dialog it cannot be shown
                again; if it is lost, revoke it and generate a new one. Never put it in a browser, an app or a URL.
              </p>
            </Banner>
            <CopyableSecret
              label={`API key${created.key.name ? ` “${created.key.name}”` : ''}`}
              secret={created.secret}
              noun="key"
              rows={2}
              focusCopy
              helpText={`Fingerprint ${created.key.fingerprint}: the first 12 characters of the key's SHA-256 digest, shown in the keys table.`}
            />
          </BlockStack>
        </Modal.Section>
      </Modal>
    );
  }

  // While the request runs the dialog stays open: closing it then would create a key whose secret nobody saw.
  const closeUnlessSaving = () => {
    if (!saving) onClose();
  };
  return (
    <Modal
      open={open}
      activator={activator}
      onClose={closeUnlessSaving}
      title="Generate API key"
      primaryAction={{ content: 'Generate key', onAction: generate, loading: saving }}
      secondaryActions={[{ content: 'Cancel', onAction: closeUnlessSaving, disabled: saving }]}
    >
      <Modal.Section>
        <Form onSubmit={generate}>
          <BlockStack gap="400">
            <ErrorBanner error={error} title="The key was not generated" takeFocus />
            <TextField
              label="Key name (optional)"
              value={name}
              onChange={setName}
              autoComplete="off"
              maxLength={100}
              showCharacterCount
              autoFocus
              helpText="A name helps you tell keys apart later, for example “ERP sync”."
            />
            <PermissionsPicker value={choice} onChange={setChoice} />
            <Text as="p" tone="subdued">
              The key works for this store only. Its permissions can be changed later, with effect at once. It is
              shown once, right after it is generated.
            </Text>
          </BlockStack>
        </Form>
      </Modal.Section>
    </Modal>
  );
}
