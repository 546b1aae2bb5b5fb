import { z } from 'zod';
import { ServiceError } from './errors.js';

/**
 * What a caller may do, per resource (docs/product.md §16). A key, an OAuth grant and every other principal carry
 * one level per resource; each operation names the one permission it needs (services/operations.ts), and nothing
 * else decides. `write` includes `read`.
 */
export const RESOURCES = ['contracts', 'billing', 'webhooks', 'bulk_jobs'] as const;
export type Resource = (typeof RESOURCES)[number];

export const LEVELS = ['none', 'read', 'write'] as const;
export type Level = (typeof LEVELS)[number];

export type Permissions = { readonly [R in Resource]: Level };

/** What one operation needs: a resource at a level. */
export type Permission = { readonly resource: Resource; readonly level: 'read' | 'write' };

export const need = (resource: Resource, level: 'read' | 'write'): Permission => ({ resource, level });

const RANK: Record<Level, number> = { none: 0, read: 1, write: 2 };

const every = (level: Level): Permissions => ({ contracts: level, billing: level, webhooks: level, bulk_jobs: level });

/** The two presets a key can be made with (docs/product.md §1 `access`): everything written, or everything read. */
export const PRESETS = { read_write: every('write'), read_only: every('read') } as const;
export type Preset = keyof typeof PRESETS;

/** Everything: the merchant in the admin, svc's own workers. */
export const ALL: Permissions = PRESETS.read_write;

export function allows(p: Permissions, n: Permission): boolean {
  return RANK[p[n.resource]] >= RANK[n.level];
}

/** How a permission is written to a person: `billing: write`. */
export const describePermission = (n: Permission): string => `${n.resource}: ${n.level}`;

/** The preset a set of permissions equals, or `custom`. */
export function presetOf(p: Permissions): Preset | 'custom' {
  for (const [name, preset] of Object.entries(PRESETS) as [Preset, Permissions][]) {
    if (RESOURCES.every((r) => p[r] === preset[r])) return name;
  }
  return 'custom';
}

/**
 * 403 insufficient_scope naming what was needed, in the message and in `details`; `held` (the caller's permissions)
 * lets the message say what the caller is, a read-only key say.
 */
export function insufficientScope(n: Permission, who = 'This API key', held?: Permissions): ServiceError {
  const what = describePermission(n);
  const is = held && presetOf(held) === 'read_only' ? `${who} is read-only: it can read but not change anything, and this needs ${what}` : `${who} lacks the permission ${what}`;
  return new ServiceError('insufficient_scope', `${is}. Use a key with ${what}.`, {
    details: [{ path: `permissions.${n.resource}`, message: `${n.level} needed` }],
  });
}

/** Throws 403 insufficient_scope unless `p` allows `n`. */
export function assertAllows(p: Permissions, n: Permission, who?: string): void {
  if (!allows(p, n)) throw insufficientScope(n, who, p);
}

export const LevelSchema = z.enum(LEVELS);

/** Permissions as a client sends them: every resource named, each none, read or write. */
export const PermissionsSchema = z
  .strictObject(Object.fromEntries(RESOURCES.map((r) => [r, LevelSchema])) as { [R in Resource]: typeof LevelSchema })
  .meta({
    id: 'Permissions',
    description:
      'What the key may do, per resource: none, read or write (write includes read). contracts: contracts and their events ' +
      '(write: actions but bill_now, edits); billing: attempts, upcoming renewals, the billing policy (write: bill_now); ' +
      'webhooks: endpoints and deliveries; bulk_jobs: bulk jobs (write also needs the write permission of what a job changes).',
  });

/** Permissions as stored (jsonb), read back leniently: an unknown or missing resource is `none`. */
export function permissionsFrom(stored: unknown, fallback: Permissions): Permissions {
  if (!stored || typeof stored !== 'object') return fallback;
  const s = stored as Record<string, unknown>;
  const out = {} as Record<Resource, Level>;
  for (const r of RESOURCES) out[r] = (LEVELS as readonly unknown[]).includes(s[r]) ? (s[r] as Level) : 'none';
  return out;
}
