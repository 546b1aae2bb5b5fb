import type { IdempotencyRecord } from '../db/contractWrites.js';
import { ACTION_COMMANDS, ACTION_NAMES, COMMANDS, type ActionName } from '../domain/commands/registry.js';
import { invalidRequest, ServiceError } from '../domain/errors.js';
import { need } from '../domain/permissions.js';
import type { Contract } from '../domain/resources.js';
import { changeAnswer } from './changeContract.js';
import type { ServiceContext } from './context.js';
import { contractJsonNow } from './getContract.js';
import type { Caller, ShopPrincipal } from './principal.js';
import { runCommand, withContract } from './runner.js';

/**
 * The requests a surface makes of one contract for its caller (the API's routes, the /mcp endpoint's tools, the
 * admin): the caller resolved with the contract's read (services/runner.ts withContract), then the runner. Each
 * answers the principal it resolved and the contract after; `json`, when the change had an event, is the text that
 * event holds of it, which a route sends as it is rather than writing the contract out a second time.
 */
export type ContractAnswer = { principal: ShopPrincipal; contract: Contract; json?: string };

/** An action body's command: a JSON object with a known `action` (else unsupported_action listing them). */
export function actionOf(body: unknown): { name: ActionName; input: Record<string, unknown> } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw invalidRequest('The request body must be a JSON object with an "action" field.', [{ path: '', message: 'expected a JSON object' }]);
  }
  const { action: name, ...input } = body as Record<string, unknown>;
  if (typeof name !== 'string') {
    throw invalidRequest('The "action" field is required and must be a string.', [{ path: 'action', message: `required: one of ${ACTION_NAMES.join(', ')}` }]);
  }
  if (!Object.hasOwn(ACTION_COMMANDS, name)) {
    throw new ServiceError('unsupported_action', `Unsupported action "${name.slice(0, 40)}". Supported actions: ${ACTION_NAMES.join(', ')}.`);
  }
  return { name: name as ActionName, input };
}

/** POST …/{id}/actions: the action the body names (its fields validated by its command). */
export async function requestAction(
  ctx: ServiceContext,
  caller: Caller,
  contractId: string,
  body: unknown,
  opts: { record?: IdempotencyRecord } = {},
): Promise<ContractAnswer> {
  const request = actionOf(body);
  const { principal, row } = await withContract(ctx, caller, contractId, [COMMANDS[request.name].policy.permission]);
  const committed = await runCommand(ctx, principal, { shopId: principal.shopId, contractId, read: row }, request, opts);
  return { principal, ...changeAnswer(committed!) };
}

/** POST …/{id}/edits: the operations in order, all or nothing; with `preview`, nothing changes anywhere. */
export async function requestEdit(
  ctx: ServiceContext,
  caller: Caller,
  contractId: string,
  body: unknown,
  opts: { record?: IdempotencyRecord } = {},
): Promise<ContractAnswer & { preview: boolean }> {
  const preview = typeof body === 'object' && body !== null && (body as { preview?: unknown }).preview === true;
  const { principal, row } = await withContract(ctx, caller, contractId, [COMMANDS.edit.policy.permission]);
  const committed = await runCommand(ctx, principal, { shopId: principal.shopId, contractId, read: row }, { name: 'edit', input: body }, { ...opts, preview });
  return { principal, ...changeAnswer(committed!), preview };
}

/** GET …/{id}: the contract as it is now, as JSON text. */
export async function requestContractJson(ctx: ServiceContext, caller: Caller, contractId: string): Promise<{ principal: ShopPrincipal; json: string }> {
  const { principal, row } = await withContract(ctx, caller, contractId, [need('contracts', 'read')], 'text');
  const json = contractJsonNow(ctx, row);
  return { principal, json: typeof json === 'string' ? json : await json };
}
