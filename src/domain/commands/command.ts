import type { z } from 'zod';
import type { ContractState, ContractStatus } from '../contract.js';
import type { ErrorDetail } from '../errors.js';
import type { Permission } from '../permissions.js';
import type { ActorType } from '../resources.js';

/**
 * Who may ask for a command, and what the runner (services/runner.ts) does around its decision: the one place a
 * command's rules live besides `decide`.
 */
export type CommandPolicy = {
  /** What a shop's principal needs to ask for it (403 insufficient_scope otherwise). */
  readonly permission: Permission;
  /** The actors that may ask for it: any other is refused before anything is read. */
  readonly actors: readonly ActorType[];
  /**
   * What the runner resolves for a client's input before deciding (decide stays pure): `attempt_id`, a fresh id for
   * the billing attempt it creates; `catalog`, the shop's variants and codes the input names (standalone mode);
   * `billed_now`, the contract's latest bill_now that succeeded (`billedNow`).
   */
  readonly needs?: readonly ('attempt_id' | 'catalog' | 'billed_now')[];
  /** What follows its commit: `hand_to_gateway`, the billing attempt it created goes to the payment gateway. */
  readonly after?: 'hand_to_gateway';
};

/** Everyone who acts for the shop: its keys, MCP, OAuth connections, the merchant in the admin, its bulk jobs. */
export const SHOP_ACTORS = ['api_key', 'mcp', 'oauth', 'admin', 'bulk_job'] as const satisfies readonly ActorType[];

/**
 * A contract command: one way a contract can change, defined once. Its name, its input's schema, the statuses it is
 * allowed from, the events it may record, its policy (who may ask, what follows) and a pure
 * `decide(contract, input, now)` that answers the contract after it and its events (or throws a ServiceError:
 * invalid_edit, say). Everything else derives from the registry (registry.ts): the API's actions and their OpenAPI
 * schema, the MCP tools, the event list webhook endpoints subscribe to, the admin's buttons, and the platform port's
 * exhaustive switch (services/platform.ts).
 */
export type CommandDefinition<Name extends string, Input, Events extends readonly string[]> = {
  readonly name: Name;
  readonly policy: CommandPolicy;
  /** What a caller gives; every surface validates with it. */
  readonly input: z.ZodType<Input>;
  /**
   * How a client's input becomes this command's, where `input` alone cannot say it (an edit validates each operation
   * by its own schema): throws invalid_request with details. The runner completes it with what the policy needs.
   */
  fromClient?(raw: unknown): Input;
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
