import type { ApiKey, KeyAccess, Level, Permissions, Resource } from '../api';

/** A key's permissions in the merchant's words (docs/keys-and-permissions.md says the same, at length). */
export const RESOURCES: readonly Resource[] = ['contracts', 'billing', 'webhooks', 'bulk_jobs'];
export const LEVELS: readonly Level[] = ['none', 'read', 'write'];

export const RESOURCE_LABEL: Record<Resource, string> = {
  contracts: 'Contracts',
  billing: 'Billing',
  webhooks: 'Webhooks',
  bulk_jobs: 'Bulk jobs',
};

export const LEVEL_LABEL: Record<Level, string> = { none: 'None', read: 'Read', write: 'Write' };

/** What read and write allow on each resource (write includes read). */
export const RESOURCE_HELP: Record<Resource, string> = {
  contracts: 'Read: contracts and their history. Write: pause, resume, cancel, skip, reschedule and edit them.',
  billing: 'Read: billing attempts, upcoming renewals, the billing policy. Write: bill a contract now.',
  webhooks: 'Read: endpoints and deliveries. Write: add, change, test and delete endpoints, resend deliveries.',
  bulk_jobs: 'Read: bulk jobs and their results. Write: preview, start and cancel them (also needs Contracts: Write).',
};

const every = (level: Level): Permissions => ({ contracts: level, billing: level, webhooks: level, bulk_jobs: level });
export const PRESETS: Record<KeyAccess, Permissions> = { read_write: every('write'), read_only: every('read') };
export const PRESET_LABEL: Record<KeyAccess, string> = { read_write: 'Read and write', read_only: 'Read only' };

/** The permissions a dialog is choosing: a preset, or one level per resource. */
export type PermissionChoice = { mode: KeyAccess | 'custom'; custom: Permissions };

export const choiceOf = (p: Permissions): PermissionChoice => {
  const preset = (Object.keys(PRESETS) as KeyAccess[]).find((name) => RESOURCES.every((r) => PRESETS[name][r] === p[r]));
  return { mode: preset ?? 'custom', custom: { ...p } };
};

export const permissionsOf = (c: PermissionChoice): Permissions => (c.mode === 'custom' ? c.custom : PRESETS[c.mode]);

/** A key's permissions in a few words: its preset's name, else what it holds (`Contracts: Write · Billing: Read`). */
export function permissionSummary(k: Pick<ApiKey, 'access' | 'permissions'>): string {
  if (k.access !== 'custom') return PRESET_LABEL[k.access];
  const held = RESOURCES.filter((r) => k.permissions[r] !== 'none').map((r) => `${RESOURCE_LABEL[r]}: ${LEVEL_LABEL[k.permissions[r]]}`);
  return held.length ? held.join(' · ') : 'No permissions';
}
