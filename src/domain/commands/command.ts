import type { z } from 'zod';
import type { ContractState, ContractStatus } from '../contract.js';
import type { ErrorDetail } from '../errors.js';

/**
 * A contract command: one way a contract can change, defined once. Its name, its input's schema, the statuses it is
 * allowed from, the events it may record, and a pure `decide(contract, input, now)` that answers the contract after
 * it and its events (or throws a ServiceError: invalid_edit, say). Everything else derives from the registry
 * (registry.ts): the API's actions and their OpenAPI schema, the MCP tools, the event list webhook endpoints
 * subscribe to, the admin's buttons, and the platform port's exhaustive switch (services/platform.ts).
 */
export type CommandDefinition<Name extends string, Input, Events extends readonly string[]> = {
  readonly name: Name;
  /** What a caller gives; every surface validates with it. */
  readonly input: z.ZodType<Input>;
  /** The statuses the command starts from; any other is 409 invalid_state naming both. */
  readonly allowedFrom: readonly ContractStatus[];
  /**
   * True for the commands that run while a billing attempt awaits its outcome (billing itself, platform sync); any
   * other is answered 409 billing_in_progress meanwhile.
   */
  readonly allowedWhileBilling?: boolean;
  /** Every event type `decide` may record. */
  readonly events: Events;
  /** Checks that need the time (a date in the future): the details of a 400, none when the input is fine. */
  check?(input: Input, now: Date): ErrorDetail[];
  decide(contract: ContractState, input: Input, now: Date): Decision;
};

/** An event a command records: its type, the status before and after, its data, and the contract right after it. */
export type EventDraft = { type: string; from: ContractStatus; to: ContractStatus; data: Record<string, unknown>; after?: ContractState };

/** What a command decided: the contract after it and the events that say so (none: nothing to record). */
export type Decision = { contract: ContractState; events: EventDraft[] };

/** Keeps a definition's literal types (its name, its event tuple) while checking its shape. */
export const defineCommand = <const Name extends string, Input, const Events extends readonly string[]>(
  def: CommandDefinition<Name, Input, Events>,
): CommandDefinition<Name, Input, Events> => def;

/** One event from `contract` to `after`: the common case of a command that records exactly one. */
export const oneEvent = (before: ContractState, after: ContractState, type: string, data: Record<string, unknown>): Decision => ({
  contract: after,
  events: [{ type, from: before.status, to: after.status, data }],
});
