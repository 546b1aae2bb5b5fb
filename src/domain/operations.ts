import { ACTION_COMMANDS, COMMANDS } from './commands/registry.js';
import { need, type Permission } from './permissions.js';

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

export const OPERATIONS = {
  // Contracts
  listSubscriptionContracts: { needs: CONTRACTS_READ },
  getSubscriptionContract: { needs: CONTRACTS_READ, readsContract: true },
  listContractEvents: { needs: CONTRACTS_READ },
  actOnSubscriptionContract: { needs: actionNeeds, readsContract: true },
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
  createBulkJob: { needs: (body: unknown) => bulkChangeNeeds(fieldOf(body, 'change')) },
  startBulkJob: { needs: BULK_WRITE },
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
