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

/** The permissions of `needs` that `p` does not hold, each once, in the order given. */
export function missing(p: Permissions, needs: readonly Permission[]): Permission[] {
  const out: Permission[] = [];
  for (const n of needs) {
    if (!allows(p, n) && !out.some((m) => m.resource === n.resource && RANK[m.level] >= RANK[n.level])) out.push(n);
  }
  return out;
}

/** How a refusal names an OAuth connection's principal (services/oauthTokens.ts): its remedy differs from a key's. */
export const CONNECTION = 'This connection';

/** `a`, `a and b`, `a, b and c`. */
const listed = (items: string[]) => (items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`);

/**
 * 403 insufficient_scope naming every permission the request needs and the caller lacks, in the message and in
 * `details` (one entry per permission: `path` the resource under `permissions`, `message` what is needed and what
 * the caller has). `held` (the caller's permissions) lets the message say what the caller is: a read-only key, say.
 */
export function insufficientScope(needed: Permission | readonly Permission[], who = 'This API key', held?: Permissions): ServiceError {
  const lacking = Array.isArray(needed) ? (needed as readonly Permission[]) : [needed as Permission];
  const what = listed(lacking.map(describePermission));
  const is =
    held && presetOf(held) === 'read_only'
      ? `${who} is read-only: it can read but not change anything, and this needs ${what}`
      : `${who} lacks the permission${lacking.length > 1 ? 's' : ''} ${what}`;
  // A key's holder makes another key; a connection's merchant approves the app again, with the permission.
  const remedy = who === CONNECTION ? `Connect the app again and approve ${what}.` : `Use a key with ${what}.`;
  return new ServiceError('insufficient_scope', `${is}. ${remedy}`, {
    details: lacking.map((n) => ({
      path: `permissions.${n.resource}`,
      message: `${describePermission(n)} needed${held ? ` (has ${n.resource}: ${held[n.resource]})` : ''}`,
    })),
  });
}

/** Throws 403 insufficient_scope, naming every one missing, unless `p` allows all of `needs`. */
export function assertAllows(p: Permissions, needs: Permission | readonly Permission[], who?: string): void {
  const lacking = missing(p, Array.isArray(needs) ? (needs as readonly Permission[]) : [needs as Permission]);
  if (lacking.length) throw insufficientScope(lacking, who, p);
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

/**
 * A key's permissions as stored: its `permissions` column, or (null: keys made before permissions existed, and by an
 * instance still running older code) the preset its `access` column names.
 */
export function keyPermissions(stored: { access: string; permissions: unknown }): Permissions {
  const preset = PRESETS[stored.access === 'read_only' ? 'read_only' : 'read_write'];
  if (stored.permissions == null) return preset;
  return typeof stored.permissions === 'string' ? permissionsOfText(stored.permissions, preset) : permissionsFrom(stored.permissions, preset);
}

/**
 * Permissions stored as JSON, given as their text (the reads on every request select it so: a key's state comes with
 * each one): read once per distinct text, the same frozen object afterwards. A shop has a handful of distinct sets.
 */
const ofText = new Map<string, Permissions>();
const MAX_TEXTS = 1000;

function permissionsOfText(text: string, preset: Permissions): Permissions {
  const known = ofText.get(text);
  if (known) return known;
  const stored: unknown = JSON.parse(text);
  // Not an object (no such row is written): the preset, as permissionsFrom answers; not kept, as it depends on it.
  if (!stored || typeof stored !== 'object') return preset;
  const p = Object.freeze(permissionsFrom(stored, preset));
  if (ofText.size >= MAX_TEXTS) ofText.clear();
  ofText.set(text, p);
  return p;
}
