import { BlockStack, ChoiceList, Text } from '@shopify/polaris';
import { PermissionsTable } from './PermissionsTable';
import { useId } from 'react';
import type { KeyAccess, Level, Resource } from '../api';
import { PRESETS, RESOURCES, type PermissionChoice } from './permissions';

/**
 * A key's permissions, as the generate and edit dialogs choose them: one of the two presets, or Custom, a table of
 * the resources with a None / Read / Write radio group each. Each row's radios share a name (arrow keys move within
 * the row) and each is labelled with its resource and level, so a screen reader says "Billing: Write".
 */
export function PermissionsPicker({ value, onChange }: { value: PermissionChoice; onChange: (c: PermissionChoice) => void }) {
  const id = useId();
  const setMode = (mode: KeyAccess | 'custom') =>
    // Custom starts from what was chosen last: the preset just left, or the custom levels set before.
    onChange({ mode, custom: mode === 'custom' && value.mode !== 'custom' ? { ...PRESETS[value.mode] } : value.custom });
  const setLevel = (r: Resource, level: Level) => onChange({ mode: 'custom', custom: { ...value.custom, [r]: level } });
  const p = value.custom;
  return (
    <BlockStack gap="300">
      <ChoiceList
        title="Permissions"
        choices={[
          { label: 'Read and write', value: 'read_write', helpText: 'Everything: reads, and changes contracts, billing, webhooks and bulk jobs.' },
          { label: 'Read only', value: 'read_only', helpText: 'Reads everything; every change is refused. Right for reporting, or an AI assistant in an IDE.' },
          { label: 'Custom', value: 'custom', helpText: 'None, read or write, resource by resource.' },
        ]}
        selected={[value.mode]}
        onChange={(v) => setMode(v[0] as KeyAccess | 'custom')}
      />
      {value.mode === 'custom' && (
        <BlockStack gap="200">
          <PermissionsTable id={id} resources={RESOURCES} value={p} onChange={setLevel} caption="Permissions per resource" describedBy={`${id}-note`} />
          <div id={`${id}-note`}>
            {p.bulk_jobs === 'write' && p.contracts !== 'write' && (
              <Text as="p" tone="caution">
                Bulk jobs: Write needs Contracts: Write too: every bulk job changes contracts.
              </Text>
            )}
            {RESOURCES.every((r) => p[r] === 'none') && (
              <Text as="p" tone="caution">
                With every resource at None the key can only tell who it is (GET /api/v1/key).
              </Text>
            )}
          </div>
        </BlockStack>
      )}
    </BlockStack>
  );
}
