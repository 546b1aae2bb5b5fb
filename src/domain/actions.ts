import { z } from 'zod';
import { ServiceError, invalidInput, invalidRequest, issuesToDetails } from './errors.js';
import { checkCommand } from './commands/plan.js';
import { ACTION_COMMANDS, ACTION_NAMES, type ActionName, type Command } from './commands/registry.js';

/**
 * The body of POST …/actions: `{ "action": <name>, …the fields of that command }`, for each command of the
 * registry's ACTION_COMMANDS. The schemas below are made from the commands' own input schemas, so the API, the
 * OpenAPI document and MCP share one definition.
 */

const title = (name: string) => `${name[0].toUpperCase()}${name.slice(1)}Action`;

/** The body schema of one action: `action` and that command's fields, nothing else. */
function actionBody<N extends ActionName>(name: N) {
  const input = ACTION_COMMANDS[name].input as z.ZodObject;
  return z
    .strictObject({ action: z.literal(name), ...input.shape })
    .meta({ title: title(name), description: (input.meta()?.description as string | undefined) ?? name });
}

export const ACTION_BODIES = Object.fromEntries(ACTION_NAMES.map((n) => [n, actionBody(n)])) as { [N in ActionName]: ReturnType<typeof actionBody<N>> };

export const ContractAction = z.discriminatedUnion(
  'action',
  ACTION_NAMES.map((n) => ACTION_BODIES[n]) as unknown as [z.ZodObject, ...z.ZodObject[]],
);

/**
 * Validates an action body: a JSON object, a known `action` (else unsupported_action listing them), only that
 * action's fields, and its checks that need the time (timestamps strictly in the future, at most 5 years ahead).
 * Returns the command to run.
 */
export function parseContractAction(body: unknown, now: Date): Command {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw invalidRequest('The request body must be a JSON object with an "action" field.', [{ path: '', message: 'expected a JSON object' }]);
  }
  const name = (body as Record<string, unknown>).action;
  if (typeof name !== 'string') {
    throw invalidRequest('The "action" field is required and must be a string.', [{ path: 'action', message: `required: one of ${ACTION_NAMES.join(', ')}` }]);
  }
  if (!(ACTION_NAMES as readonly string[]).includes(name)) {
    throw new ServiceError('unsupported_action', `Unsupported action "${name.slice(0, 40)}". Supported actions: ${ACTION_NAMES.join(', ')}.`);
  }
  const parsed = ACTION_BODIES[name as ActionName].safeParse(body);
  if (!parsed.success) throw invalidInput(issuesToDetails(parsed.error.issues));
  const { action: _action, ...input } = parsed.data as Record<string, unknown>;
  const command = { name, input } as Command;
  checkCommand(command, now);
  return command;
}
