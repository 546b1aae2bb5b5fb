import { Badge, BlockStack, Button, IndexTable, InlineStack, Text, useBreakpoints } from '@shopify/polaris';
import type { ApiKey } from '../api';
import { CondensedCell, DateTime, DateTimeCell } from '../components/TableCells';
import { formatDateTime } from '../format';
import { keyRequestsUrl } from '../router';
import { keyLabel } from './keyLabel';
import { LeakPlace, shortPlace } from './LeakedKeys';

/**
 * The keys table: never a secret, only name, fingerprint, access, status and dates; a key revoked because it
 * leaked says so, and where it was found.
 */
export function KeysTable({ keys, onRevoke }: { keys: ApiKey[]; onRevoke: (k: ApiKey) => void }) {
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
  const actions = (k: ApiKey) => (
    <InlineStack gap="300" wrap={false} blockAlign="center">
      {requests(k)}
      {revoke(k)}
    </InlineStack>
  );
  const access = (k: ApiKey) => (k.access === 'read_only' ? <Badge>Read only</Badge> : <Badge tone="info">Read and write</Badge>);
  const fingerprint = (k: ApiKey) => <span className="svc-mono">{k.fingerprint}</span>;

  const rows = keys.map((k, i) =>
    smDown ? (
      <IndexTable.Row id={`key-${k.id}`} key={k.id} position={i}>
        <CondensedCell>
          <BlockStack gap="100">
            <InlineStack align="space-between" blockAlign="center" gap="200">
              {name(k)}
              <InlineStack gap="100">
                {access(k)}
                {status(k)}
              </InlineStack>
            </InlineStack>
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
        { title: 'Access' },
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
