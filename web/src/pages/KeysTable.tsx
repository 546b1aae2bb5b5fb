import { Badge, BlockStack, Button, IndexTable, InlineStack, Text, useBreakpoints } from '@shopify/polaris';
import type { ApiKey } from '../api';
import { CondensedCell, DateTime, DateTimeCell } from '../components/TableCells';
import { formatDateTime } from '../format';
import { keyRequestsUrl } from '../router';
import { keyLabel } from './keyLabel';
import { LeakPlace, shortPlace } from './LeakedKeys';
import { LEVEL_LABEL, PRESET_LABEL, RESOURCE_LABEL, RESOURCES, permissionSummary } from './permissions';

/**
 * The keys table: never a secret, only name, fingerprint, permissions, status and dates; a key revoked because it
 * leaked says so, and where it was found. An active key's permissions can be edited from its row.
 */
export function KeysTable({ keys, onRevoke, onEditPermissions }: { keys: ApiKey[]; onRevoke: (k: ApiKey) => void; onEditPermissions: (k: ApiKey) => void }) {
  const { smDown } = useBreakpoints();
  const status = (k: ApiKey) =>
    k.status === 'active' ? <Badge tone="success">Active</Badge> : k.revokedReason === 'leaked' ? <Badge tone="critical">Leaked</Badge> : <Badge tone="critical">Revoked</Badge>;
  // A leaked key says where it was found (the banner above the table says the rest).
  const foundAt = (k: ApiKey) =>
    k.revokedReason === 'leaked' ? (
      <Text as="span" variant="bodySm">
        Found at <LeakPlace url={k.leakedUrl} label={k.leakedUrl ? shortPlace(k.leakedUrl) : undefined} />
      </Text>
    ) : null;
  const name = (k: ApiKey) => (
    // Focus lands here after a revoke, when the row's Revoke button no longer exists.
    <span id={`key-name-${k.id}`} tabIndex={-1} className="svc-focus-target">
      <Text as="span" fontWeight="semibold" tone={k.name ? undefined : 'subdued'}>
        {k.name ?? 'Unnamed key'}
      </Text>
    </span>
  );
  // Settings → API → a key → its requests; revoked keys keep theirs for 14 days.
  const requests = (k: ApiKey) => (
    <Button variant="plain" url={keyRequestsUrl(k.id)} accessibilityLabel={`Requests of ${keyLabel(k)}`}>
      Requests
    </Button>
  );
  const revoke = (k: ApiKey) =>
    k.status === 'active' ? (
      <span id={`key-revoke-${k.id}`}>
        <Button variant="plain" tone="critical" onClick={() => onRevoke(k)} accessibilityLabel={`Revoke ${keyLabel(k)}`}>
          Revoke
        </Button>
      </span>
    ) : null;
  // Beside the permissions it edits on a wide screen ("Edit"), among the row's actions on a phone.
  const edit = (k: ApiKey, content: string) =>
    k.status === 'active' ? (
      <span id={`key-permissions-${k.id}`}>
        <Button variant="plain" onClick={() => onEditPermissions(k)} accessibilityLabel={`Edit permissions of ${keyLabel(k)}`}>
          {content}
        </Button>
      </span>
    ) : null;
  const actions = (k: ApiKey) => (
    <InlineStack gap="300" wrap={false} blockAlign="center">
      {requests(k)}
      {smDown && edit(k, 'Edit permissions')}
      {revoke(k)}
    </InlineStack>
  );
  // A preset by its name; custom permissions as what the key holds, a resource a line (none left out).
  const badge = (k: ApiKey) =>
    k.access === 'custom' ? (
      <Badge tone="attention">Custom</Badge>
    ) : k.access === 'read_only' ? (
      <Badge>{PRESET_LABEL.read_only}</Badge>
    ) : (
      <Badge tone="info">{PRESET_LABEL.read_write}</Badge>
    );
  const held = (k: ApiKey) => RESOURCES.filter((r) => k.permissions[r] !== 'none');
  const access = (k: ApiKey) => (
    <BlockStack gap="050" inlineAlign="start">
      {badge(k)}
      {k.access === 'custom' &&
        (held(k).length ? (
          held(k).map((r) => (
            <Text as="p" variant="bodySm" key={r}>
              {RESOURCE_LABEL[r]}: {LEVEL_LABEL[k.permissions[r]]}
            </Text>
          ))
        ) : (
          <Text as="p" variant="bodySm" tone="subdued">
            No permissions
          </Text>
        ))}
      {edit(k, 'Edit')}
    </BlockStack>
  );
  const fingerprint = (k: ApiKey) => <span className="svc-mono">{k.fingerprint}</span>;

  const rows = keys.map((k, i) =>
    smDown ? (
      <IndexTable.Row id={`key-${k.id}`} key={k.id} position={i}>
        <CondensedCell>
          <BlockStack gap="100">
            <InlineStack align="space-between" blockAlign="center" gap="200">
              {name(k)}
              <InlineStack gap="100">
                {badge(k)}
                {status(k)}
              </InlineStack>
            </InlineStack>
            {k.access === 'custom' && (
              <Text as="p" variant="bodySm">
                {permissionSummary(k)}
              </Text>
            )}
            <Text as="p" variant="bodySm">
              Fingerprint {fingerprint(k)}
            </Text>
            <Text as="p" variant="bodySm" tone="subdued">
              Created {formatDateTime(k.createdAt)} · Last used {formatDateTime(k.lastUsedAt, 'never')}
              {k.revokedAt ? ` · Revoked ${formatDateTime(k.revokedAt)}` : ''}
            </Text>
            {foundAt(k)}
            {actions(k)}
          </BlockStack>
        </CondensedCell>
      </IndexTable.Row>
    ) : (
      <IndexTable.Row id={`key-${k.id}`} key={k.id} position={i}>
        <IndexTable.Cell>{name(k)}</IndexTable.Cell>
        <IndexTable.Cell>{fingerprint(k)}</IndexTable.Cell>
        <IndexTable.Cell>{access(k)}</IndexTable.Cell>
        <IndexTable.Cell>{status(k)}</IndexTable.Cell>
        <DateTimeCell iso={k.createdAt} />
        <DateTimeCell iso={k.lastUsedAt} empty="Never" />
        {k.revokedReason === 'leaked' ? (
          <IndexTable.Cell>
            <BlockStack gap="050">
              <DateTime iso={k.revokedAt} />
              {foundAt(k)}
            </BlockStack>
          </IndexTable.Cell>
        ) : (
          <DateTimeCell iso={k.revokedAt} />
        )}
        <IndexTable.Cell>{actions(k)}</IndexTable.Cell>
      </IndexTable.Row>
    ),
  );

  return (
    <IndexTable
      condensed={smDown}
      selectable={false}
      resourceName={{ singular: 'API key', plural: 'API keys' }}
      itemCount={keys.length}
      headings={[
        { title: 'Name' },
        { title: 'Fingerprint' },
        { title: 'Permissions' },
        { title: 'Status' },
        { title: 'Created' },
        { title: 'Last used' },
        { title: 'Revoked' },
        { title: 'Actions', hidden: true },
      ]}
    >
      {rows}
    </IndexTable>
  );
}
