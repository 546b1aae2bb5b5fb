import { BlockStack, ChoiceList, Form, Modal, Text, TextField } from '@shopify/polaris';
import { useEffect, useState, type RefObject } from 'react';
import { ApiError, type WebhookEndpoint, type WebhookEndpointPatch, type WebhookEventType, type WebhookResendable } from '../api';
import { ErrorBanner } from '../components/ErrorBanner';
import { useAdminApi } from '../context';
import { ALL_EVENTS } from './webhookText';

type Props = {
  open: boolean;
  /** The endpoint to edit; null adds one. */
  endpoint: WebhookEndpoint | null;
  /** Every event type an endpoint may subscribe to, as the server lists them. */
  eventTypes: WebhookEventType[];
  activator?: RefObject<HTMLElement>;
  onClose: () => void;
  onSaved: (endpoint: WebhookEndpoint, resendable?: WebhookResendable) => void;
  /** The list was out of date (the limit was reached in another tab): reload it. */
  onStale: () => void;
};

type Field = 'url' | 'description' | 'events';

/** The server's validation `details` by field: `events.2` belongs to the events choice, unknown paths to the banner. */
function fieldErrors(err: ApiError | null): Partial<Record<Field, string>> {
  const out: Partial<Record<Field, string>> = {};
  for (const d of err?.details ?? []) {
    const field = d.path.split('.')[0] as Field;
    if ((field === 'url' || field === 'description' || field === 'events') && !out[field]) out[field] = d.message;
  }
  return out;
}

const sameEvents = (a: string[], b: string[]) => a.length === b.length && a.every((e) => b.includes(e));

/** Add an endpoint, or change one: its URL, what it is for, and which events it gets. */
export function WebhookEndpointModal({ open, endpoint, eventTypes, activator, onClose, onSaved, onStale }: Props) {
  const { api } = useAdminApi();
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [scope, setScope] = useState<'all' | 'some'>('all');
  const [chosen, setChosen] = useState<string[]>([]);
  const [saving, setSaving] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const [localError, setLocalError] = useState<Partial<Record<Field, string>>>({});

  useEffect(() => {
    if (!open) return;
    const all = !endpoint || endpoint.events.includes(ALL_EVENTS);
    setUrl(endpoint?.url ?? '');
    setDescription(endpoint?.description ?? '');
    setScope(all ? 'all' : 'some');
    setChosen(all ? [] : endpoint.events);
    setSaving(false);
    setError(null);
    setLocalError({});
  }, [open, endpoint]);

  const save = async () => {
    if (saving) return;
    const events = scope === 'all' ? [ALL_EVENTS] : eventTypes.map((e) => e.type).filter((t) => chosen.includes(t));
    const local: Partial<Record<Field, string>> = {};
    if (!url.trim()) local.url = 'Enter the URL your server receives webhooks at.';
    if (events.length === 0) local.events = 'Choose at least one event type, or all events.';
    setLocalError(local);
    if (Object.keys(local).length) return;
    setSaving(true);
    setError(null);
    try {
      if (endpoint) {
        // Only what changed is sent: an unchanged URL is not checked (and resolved) again.
        const patch: WebhookEndpointPatch = {};
        if (url.trim() !== endpoint.url) patch.url = url.trim();
        if ((description.trim() || null) !== endpoint.description) patch.description = description.trim() || null;
        if (!sameEvents(events, endpoint.events)) patch.events = events;
        if (Object.keys(patch).length === 0) return onClose();
        const res = await api.updateWebhookEndpoint(endpoint.id, patch);
        onSaved(res.endpoint, res.resendable);
      } else {
        const res = await api.createWebhookEndpoint({ url: url.trim(), description: description.trim() || null, events });
        onSaved(res.endpoint);
      }
    } catch (err) {
      const e = err instanceof ApiError ? err : new ApiError(0, 'unexpected', String(err), null);
      setError(e);
      if (e.code === 'endpoint_limit_reached') onStale();
    } finally {
      setSaving(false);
    }
  };

  const serverErrors = fieldErrors(error);
  const errorOf = (f: Field) => localError[f] ?? serverErrors[f];
  const closeUnlessSaving = () => {
    if (!saving) onClose();
  };
  return (
    <Modal
      open={open}
      activator={activator}
      onClose={closeUnlessSaving}
      title={endpoint ? 'Edit webhook endpoint' : 'Add webhook endpoint'}
      primaryAction={{ content: endpoint ? 'Save' : 'Add endpoint', onAction: save, loading: saving }}
      secondaryActions={[{ content: 'Cancel', onAction: closeUnlessSaving, disabled: saving }]}
    >
      <Modal.Section>
        <Form onSubmit={save}>
          <BlockStack gap="400">
            <ErrorBanner error={error} title={endpoint ? 'The endpoint was not saved' : 'The endpoint was not added'} takeFocus />
            <TextField
              label="Endpoint URL"
              type="url"
              value={url}
              onChange={setUrl}
              autoComplete="off"
              placeholder="https://erp.example.com/hooks/svc"
              maxLength={2048}
              autoFocus
              error={errorOf('url')}
              helpText="An https:// address on the public internet. Every delivery is a signed POST of JSON."
            />
            <TextField
              label="Description (optional)"
              value={description}
              onChange={setDescription}
              autoComplete="off"
              maxLength={500}
              error={errorOf('description')}
              helpText="What the endpoint is for, for example “ERP sync”."
            />
            <ChoiceList
              title="Events"
              selected={[scope]}
              onChange={(v) => setScope(v[0] as 'all' | 'some')}
              error={errorOf('events')}
              choices={[
                { label: 'All events', value: 'all', helpText: 'Every contract event, including types added later.' },
                {
                  label: 'Only the events I choose',
                  value: 'some',
                  renderChildren: (selected) =>
                    selected && (
                      <ChoiceList
                        title="Event types"
                        titleHidden
                        allowMultiple
                        selected={chosen}
                        onChange={setChosen}
                        choices={eventTypes.map((e) => ({ label: e.type, value: e.type, helpText: e.description }))}
                      />
                    ),
                },
              ]}
            />
            {!endpoint && (
              <Text as="p" tone="subdued">
                The endpoint gets its own signing secret, which you can reveal on this page at any time.
              </Text>
            )}
          </BlockStack>
        </Form>
      </Modal.Section>
    </Modal>
  );
}
