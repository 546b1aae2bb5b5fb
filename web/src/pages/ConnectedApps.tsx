import { BlockStack, Box, Button, Card, IndexTable, InlineStack, Modal, Text, useBreakpoints } from '@shopify/polaris';
import { useCallback, useEffect, useRef, useState } from 'react';
import { ApiError, type Connection } from '../api';
import { ErrorBanner } from '../components/ErrorBanner';
import { DateTime } from '../components/TableCells';
import { useAdminApi } from '../context';
import { formatDateTime } from '../format';
import { connectionRequestsUrl } from '../router';
import { LEVEL_LABEL, RESOURCE_LABEL, RESOURCES } from './permissions';

const asApiError = (err: unknown) => (err instanceof ApiError ? err : new ApiError(0, 'unexpected', String(err), null));

/** A connection's permissions in a few words: `Contracts: Read · Billing: Write`. */
export const connectionPermissions = (c: Pick<Connection, 'permissions'>) => {
  const held = RESOURCES.filter((r) => c.permissions[r] !== 'none').map((r) => `${RESOURCE_LABEL[r]}: ${LEVEL_LABEL[c.permissions[r]]}`);
  return held.length ? held.join(' · ') : 'No permissions';
};

/**
 * Settings → API → Connected apps: the AI assistants the merchant approved through OAuth (docs/mcp-assistants.md),
 * each with what it may do, when it was connected and last used, its requests, and Disconnect (at once).
 */
export function ConnectedAppsCard() {
  const { api } = useAdminApi();
  const { smDown } = useBreakpoints();
  const [list, setList] = useState<Connection[] | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [target, setTarget] = useState<Connection | null>(null);
  const [saving, setSaving] = useState(false);
  const [saveError, setSaveError] = useState<ApiError | null>(null);
  const activator = useRef<HTMLElement | null>(null);

  const load = useCallback(async () => {
    try {
      setList((await api.connections()).connections);
    } catch (err) {
      setError(asApiError(err));
    }
  }, [api]);
  useEffect(() => {
    void load();
  }, [load]);

  const open = (c: Connection) => {
    activator.current = document.getElementById(`connection-disconnect-${c.id}`);
    setSaveError(null);
    setTarget(c);
  };
  const disconnect = async () => {
    if (!target || saving) return;
    setSaving(true);
    try {
      await api.disconnect(target.id);
      setList((l) => l?.filter((c) => c.id !== target.id) ?? null);
      // The row is gone: focus goes to the card's heading.
      activator.current = document.getElementById('connected-apps-heading');
      setTarget(null);
    } catch (err) {
      setSaveError(asApiError(err));
    } finally {
      setSaving(false);
    }
  };

  const actions = (c: Connection) => (
    <InlineStack gap="300" wrap={false}>
      <Button variant="plain" url={connectionRequestsUrl(c.id)} accessibilityLabel={`Requests of ${c.clientName}`}>
        Requests
      </Button>
      <span id={`connection-disconnect-${c.id}`}>
        <Button variant="plain" tone="critical" onClick={() => open(c)} accessibilityLabel={`Disconnect ${c.clientName}`}>
          Disconnect
        </Button>
      </span>
    </InlineStack>
  );

  return (
    <Card padding="0">
      <Box padding="400">
        <BlockStack gap="200">
          <h2 id="connected-apps-heading" tabIndex={-1} className="svc-focus-target">
            <Text as="span" variant="headingMd">
              Connected apps
            </Text>
          </h2>
          <Text as="p" tone="subdued">
            AI assistants you connected to this store through the MCP server. Each does only what you approved; disconnecting one stops it at once.
          </Text>
          <ErrorBanner error={error} title="The connected apps could not be loaded" onDismiss={() => setError(null)} />
        </BlockStack>
      </Box>
      {list !== null && list.length === 0 && (
        <Box padding="400" borderBlockStartWidth="025" borderColor="border">
          <Text as="p" tone="subdued">
            No apps connected. An assistant that supports MCP connects with this store's MCP URL, <span className="svc-mono">{`${window.location.origin}/mcp`}</span>, and asks you to approve it here.
          </Text>
        </Box>
      )}
      {list !== null && list.length > 0 && (
        <IndexTable
          resourceName={{ singular: 'connected app', plural: 'connected apps' }}
          itemCount={list.length}
          selectable={false}
          condensed={smDown}
          headings={smDown ? [{ title: 'Connected app' }] : [{ title: 'App' }, { title: 'Permissions' }, { title: 'Connected' }, { title: 'Last used' }, { title: 'Actions', hidden: true }]}
        >
          {list.map((c, i) => (
            <IndexTable.Row id={c.id} key={c.id} position={i}>
              {smDown ? (
                <IndexTable.Cell>
                  <BlockStack gap="100">
                    <Text as="span" fontWeight="semibold">
                      {c.clientName}
                    </Text>
                    <Text as="span" variant="bodySm">
                      {connectionPermissions(c)}
                    </Text>
                    <Text as="span" variant="bodySm" tone="subdued">
                      Connected {formatDateTime(c.createdAt)} · last used {c.lastUsedAt ? formatDateTime(c.lastUsedAt) : 'never'}
                    </Text>
                    {actions(c)}
                  </BlockStack>
                </IndexTable.Cell>
              ) : (
                <>
                  <IndexTable.Cell>
                    <Text as="span" fontWeight="semibold">
                      {c.clientName}
                    </Text>
                  </IndexTable.Cell>
                  <IndexTable.Cell>{connectionPermissions(c)}</IndexTable.Cell>
                  <IndexTable.Cell>
                    <DateTime iso={c.createdAt} />
                  </IndexTable.Cell>
                  <IndexTable.Cell>
                    <DateTime iso={c.lastUsedAt} empty="Never" />
                  </IndexTable.Cell>
                  <IndexTable.Cell>{actions(c)}</IndexTable.Cell>
                </>
              )}
            </IndexTable.Row>
          ))}
        </IndexTable>
      )}
      <Modal
        open={target !== null}
        activator={activator}
        onClose={() => setTarget(null)}
        title={`Disconnect ${target?.clientName ?? ''}?`}
        primaryAction={{ content: 'Disconnect', destructive: true, onAction: disconnect, loading: saving }}
        secondaryActions={[{ content: 'Cancel', onAction: () => setTarget(null) }]}
      >
        <Modal.Section>
          <BlockStack gap="300">
            <ErrorBanner error={saveError} title="The app was not disconnected" takeFocus />
            <Text as="p">
              <strong>{target?.clientName}</strong> loses access at once: its next request is refused. To use it again, connect it again from the app and approve it.
            </Text>
          </BlockStack>
        </Modal.Section>
      </Modal>
    </Card>
  );
}
