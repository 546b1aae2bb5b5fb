import { BULK_ACTION_NAMES } from './bulkJobs.js';
import { ACTION_COMMANDS, ACTION_NAMES, COMMANDS } from './commands/registry.js';
import { describePermission, need, type Permission } from './permissions.js';

/**
 * Every operation of the public API and MCP, by its OpenAPI operationId, with what a caller needs to run it: the one
 * table authorization reads (docs/product.md §16). The API's routes are checked against it (a route under /api/v1
 * with no entry here refuses to start), the MCP tool list is filtered by it, and the OpenAPI document names each
 * operation's permission from it. A command's permission is its module's policy (domain/commands), read here.
 */
export type OperationPolicy = {
  /** Every permission it needs; from the request's body where the body says what runs (an action, a bulk job). */
  readonly needs: readonly Permission[] | ((body: unknown) => readonly Permission[]);
  /**
   * Its first step reads the one contract its path names: a key this process knows can then be confirmed in that
   * same read (services/runner.ts withContract).
   */
  readonly readsContract?: boolean;
  /**
   * For needs read from the body: a body of each kind the operation takes, named (`when`), so that what each kind
   * needs can be documented (the OpenAPI document, docs/keys-and-permissions.md) and tested without a second table.
   */
  readonly cases?: readonly { readonly field: string; readonly value: string; readonly body: unknown }[];
};

const CONTRACTS_READ = [need('contracts', 'read')];
const CONTRACTS_WRITE = [need('contracts', 'write')];
const BILLING_READ = [need('billing', 'read')];
const WEBHOOKS_READ = [need('webhooks', 'read')];
const WEBHOOKS_WRITE = [need('webhooks', 'write')];
const BULK_READ = [need('bulk_jobs', 'read')];
const BULK_WRITE = [need('bulk_jobs', 'write')];

const fieldOf = (body: unknown, field: string): unknown =>
  body !== null && typeof body === 'object' && !Array.isArray(body) && Object.hasOwn(body, field) ? (body as Record<string, unknown>)[field] : undefined;

/**
 * An action's permission: its command's. An action svc does not know needs what most actions need (contracts:
 * write), so a key without it is refused before it learns which actions exist.
 */
export function actionNeeds(body: unknown): readonly Permission[] {
  const name = fieldOf(body, 'action');
  return typeof name === 'string' && Object.hasOwn(ACTION_COMMANDS, name) ? [COMMANDS[name as keyof typeof ACTION_COMMANDS].policy.permission] : CONTRACTS_WRITE;
}

/**
 * A bulk job's: bulk_jobs: write, and the write permission of what its change does (an action's command, else an
 * edit's: contracts: write).
 */
export function bulkChangeNeeds(change: unknown): readonly Permission[] {
  const changes = fieldOf(change, 'operations') !== undefined ? CONTRACTS_WRITE : actionNeeds(change);
  return [...BULK_WRITE, ...changes];
}

const ACTION_CASES = ACTION_NAMES.map((action) => ({ field: 'action', value: action, body: { action } }));
const BULK_CASES = [
  ...BULK_ACTION_NAMES.map((action) => ({ field: 'change.action', value: action, body: { change: { action } } })),
  { field: 'change', value: 'operations', body: { change: { operations: [] } } },
];

export const OPERATIONS = {
  // Contracts
  listSubscriptionContracts: { needs: CONTRACTS_READ },
  getSubscriptionContract: { needs: CONTRACTS_READ, readsContract: true },
  listContractEvents: { needs: CONTRACTS_READ },
  actOnSubscriptionContract: { needs: actionNeeds, readsContract: true, cases: ACTION_CASES },
  editSubscriptionContract: { needs: CONTRACTS_WRITE, readsContract: true },
  // Renewals
  listContractBillingAttempts: { needs: BILLING_READ },
  listBillingAttempts: { needs: BILLING_READ },
  getUpcomingRenewals: { needs: BILLING_READ },
  getBillingPolicy: { needs: BILLING_READ },
  // Webhooks
  listWebhookEndpoints: { needs: WEBHOOKS_READ },
  getWebhookEndpoint: { needs: WEBHOOKS_READ },
  listWebhookDeliveries: { needs: WEBHOOKS_READ },
  createWebhookEndpoint: { needs: WEBHOOKS_WRITE },
  updateWebhookEndpoint: { needs: WEBHOOKS_WRITE },
  deleteWebhookEndpoint: { needs: WEBHOOKS_WRITE },
  sendTestWebhook: { needs: WEBHOOKS_WRITE },
  rotateWebhookSecret: { needs: WEBHOOKS_WRITE },
  resendWebhookDelivery: { needs: WEBHOOKS_WRITE },
  resendFailedWebhookDeliveries: { needs: WEBHOOKS_WRITE },
  // Bulk jobs
  listBulkJobs: { needs: BULK_READ },
  getBulkJob: { needs: BULK_READ },
  listBulkJobResults: { needs: BULK_READ },
  createBulkJob: { needs: (body: unknown) => bulkChangeNeeds(fieldOf(body, 'change')), cases: BULK_CASES },
  // Starting a previewed job runs its change: as making one, every change a job can make is a contracts write (a
  // job never bills). services/bulkJobs.ts checks the job's own change again.
  startBulkJob: { needs: [...BULK_WRITE, ...CONTRACTS_WRITE] },
  cancelBulkJob: { needs: BULK_WRITE },
  // The calling key itself: any key may read what it is.
  getCurrentKey: { needs: [] },
} as const satisfies Record<string, OperationPolicy>;

export type OperationName = keyof typeof OPERATIONS;

export const isOperationName = (name: string): name is OperationName => Object.hasOwn(OPERATIONS, name);

/** What an operation needs for this body. */
export function needsOf(name: OperationName, body: unknown): readonly Permission[] {
  const n = (OPERATIONS[name] as OperationPolicy).needs;
  return typeof n === 'function' ? n(body) : n;
}

/** One case of what an operation needs: `when` says which bodies (none: every request). */
export type PermissionCase = { readonly when?: string; readonly needs: readonly Permission[] };

const needsKey = (needs: readonly Permission[]) => needs.map(describePermission).join(',');

/**
 * What an operation needs, case by case: one case for fixed needs; for needs read from the body, the bodies of its
 * `cases` grouped by what they need (a group's `when` lists its bodies' names), or one case if all need the same.
 */
export function permissionCases(name: OperationName): PermissionCase[] {
  const op = OPERATIONS[name] as OperationPolicy;
  if (typeof op.needs !== 'function' || !op.cases) return [{ needs: needsOf(name, undefined) }];
  const groups = new Map<string, { cases: { field: string; value: string }[]; needs: readonly Permission[] }>();
  for (const c of op.cases) {
    const needs = needsOf(name, c.body);
    const key = needsKey(needs);
    const group = groups.get(key) ?? { cases: [], needs };
    group.cases.push(c);
    groups.set(key, group);
  }
  if (groups.size === 1) return [{ needs: [...groups.values()][0].needs }];
  return [...groups.values()].map((g) => ({ when: whenOf(g.cases), needs: g.needs }));
}

/** `action pause, resume or skip`; cases of several fields: each said whole, `; ` between. */
function whenOf(cases: { field: string; value: string }[]): string {
  const fields = new Set(cases.map((c) => c.field));
  if (fields.size > 1) return cases.map((c) => `${c.field} ${c.value}`).join('; ');
  const values = cases.map((c) => c.value);
  return `${cases[0].field} ${values.length < 2 ? values[0] : `${values.slice(0, -1).join(', ')} or ${values[values.length - 1]}`}`;
}

/** The permissions an operation needs, in words (`quote` wraps each, for Markdown): `bulk_jobs: write and contracts: write`. */
export function describeNeeds(needs: readonly Permission[], quote = (s: string) => s): string {
  if (needs.length === 0) return 'none';
  const words = needs.map((n) => quote(describePermission(n)));
  return words.length < 2 ? words[0] : `${words.slice(0, -1).join(', ')} and ${words[words.length - 1]}`;
}

const code = (s: string) => `\`${s}\``;

/** One sentence (Markdown) saying what an operation needs: the OpenAPI document's descriptions end with it. */
export function permissionSentence(name: OperationName): string {
  const cases = permissionCases(name);
  if (cases.length === 1 && cases[0].needs.length === 0) return 'Key permission needed: none; any key may call it.';
  if (cases.length === 1) return `Key permission needed: ${describeNeeds(cases[0].needs, code)}.`;
  return `Key permission needed: ${cases.map((c) => `${describeNeeds(c.needs, code)} for ${c.when}`).join('; ')}.`;
}
