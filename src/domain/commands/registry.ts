import type { CommandDefinition } from './command.js';
import { bill } from './bill.js';
import { billingMissed } from './billingMissed.js';
import { billingOutcome } from './billingOutcome.js';
import { billNow } from './billNow.js';
import { cancel } from './cancel.js';
import { edit } from './edit.js';
import { pause } from './pause.js';
import { reschedule } from './reschedule.js';
import { resume } from './resume.js';
import { skip } from './skip.js';
import { sync } from './sync.js';

/**
 * Every contract command, by name: the one list the API's actions, the MCP tools, the event types, the OpenAPI
 * document, the admin and the platform port derive from. A new command is a module beside this file and one line
 * here; the platform port's switch then fails to compile until the platform implements it.
 */

/** The commands a client names as an `action` of POST /api/v1/subscription-contracts/{id}/actions. */
export const ACTION_COMMANDS = { pause, resume, cancel, skip, reschedule, bill_now: billNow } as const;

/** Renewals: the billing worker's steps and the outcome of an attempt (actor billing). */
export const BILLING_COMMANDS = { bill, billing_outcome: billingOutcome, billing_missed: billingMissed } as const;

export const COMMANDS = { ...ACTION_COMMANDS, edit, sync, ...BILLING_COMMANDS } as const;

export type Commands = typeof COMMANDS;
export type CommandName = keyof Commands;
export type ActionName = keyof typeof ACTION_COMMANDS;
export const ACTION_NAMES = Object.keys(ACTION_COMMANDS) as ActionName[];

/** What a command's decide takes. */
export type InputOf<N extends CommandName> = Commands[N] extends CommandDefinition<string, infer I, readonly string[]> ? I : never;

/** A command with its input, whichever it is: what the change path carries and the platform port executes. */
export type Command = { [N in CommandName]: { readonly name: N; readonly input: InputOf<N> } }[CommandName];

/** Every event type a command records, in registry order: what webhook endpoints may subscribe to. */
export type ContractEventType = Commands[CommandName]['events'][number];
export const CONTRACT_EVENT_TYPES = [...new Set(Object.values(COMMANDS).flatMap((c) => c.events as readonly string[]))] as [ContractEventType, ...ContractEventType[]];

/** The statuses each action may start from (the admin offers only these). */
export const ALLOWED_FROM = Object.fromEntries(Object.values(COMMANDS).map((c) => [c.name, c.allowedFrom])) as { [N in CommandName]: Commands[N]['allowedFrom'] };
