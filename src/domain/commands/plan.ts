import { isBillingPending } from '../billing.js';
import { isResumeDue, totalsOf, type ContractState } from '../contract.js';
import { invalidInput, ServiceError } from '../errors.js';
import type { Actor } from '../resources.js';
import type { Decision } from './command.js';
import { COMMANDS, type Command, type CommandName } from './registry.js';

/**
 * Planning a change, purely: the contract as it is, the command asked for and the time → the steps to carry out
 * (each a command, who asks, and what it decided) and the contract after them, or null when there is nothing to do.
 * A due scheduled resume is always the first step (actor `scheduler`), so no command starts from a state the
 * scheduler has merely not reached.
 */

export const SCHEDULER: Actor = { type: 'scheduler' };
export const PLATFORM: Actor = { type: 'platform' };

/** An event as the change path records it: who caused it, and the contract right after it. */
export type PlannedEvent = { type: string; actor: Actor; from: ContractState['status']; to: ContractState['status']; data: Record<string, unknown>; after: ContractState };

export type Step = { command: Command; actor: Actor; decision: Decision };
export type Plan = { steps: Step[]; contract: ContractState; events: PlannedEvent[] };

/** What a writer asks: a command by someone, or only the due resume (null). */
export type Request = { command: Command; actor: Actor } | null;

const RESUME: Command = { name: 'resume', input: {} };

/** 400 invalid_request when the command's input fails a check that needs the time (a date not in the future). */
export function checkCommand(command: Command, now: Date): void {
  const def = COMMANDS[command.name];
  const details = def.check?.(command.input as never, now);
  if (details?.length) throw invalidInput(details);
}

/** One command's decision from `contract`, or 409 invalid_state when its status does not allow it. */
export function decide(contract: ContractState, command: Command, now: Date): Decision {
  const def = COMMANDS[command.name];
  if (!def.allowedFrom.includes(contract.status)) throw invalidState(command.name, contract.status, def.allowedFrom);
  const decision = def.decide(contract, command.input as never, now);
  const after = decision.contract;
  // Totals follow what they are made of, whichever command changed it.
  if (after.lines !== contract.lines || after.discounts !== contract.discounts || after.deliveryPrice !== contract.deliveryPrice) {
    const totals = totalsOf(after);
    decision.contract = { ...after, totals };
    for (const e of decision.events) if (e.after === after || e.after === undefined) e.after = decision.contract;
  }
  return decision;
}

export function invalidState(name: string, status: string, allowed: readonly string[]): ServiceError {
  const verb = name === 'edit' ? 'edit' : name;
  return new ServiceError('invalid_state', `Cannot ${verb} a contract that is ${status}; ${verb} is allowed only from ${allowed.join(' or ')}.`);
}

export function billingInProgress(): ServiceError {
  return new ServiceError(
    'billing_in_progress',
    'A billing attempt of this contract is awaiting its outcome; try again once it has one (billing.succeeded, billing.failed or billing.action_required).',
  );
}

/**
 * The steps of a request from `contract` (a due resume first, but for a sync), or null when there is nothing to do.
 * `whileBilling`: decide as though no billing attempt were pending (a bulk job's preview: its run waits for the
 * outcome instead of refusing).
 */
export function plan(contract: ContractState, request: Request, now: Date, opts: { whileBilling?: boolean } = {}): Plan | null {
  const steps: Step[] = [];
  let state = contract;
  const take = (command: Command, actor: Actor) => {
    const decision = decide(state, command, now);
    steps.push({ command, actor, decision });
    state = decision.contract;
  };
  // Not before a sync: it applies what the platform says the contract is, and carries out nothing there, so a
  // resume planned with it would be recorded without ever reaching the platform. The scheduler's own sweep resumes
  // the contract through the platform.
  if (request?.command.name !== 'sync' && isResumeDue(state, now)) take(RESUME, SCHEDULER);
  if (request) {
    const def = COMMANDS[request.command.name];
    // A change a client asks for while a billing attempt awaits its outcome would race it (a pause of a contract
    // being charged, say): refused until the outcome, after the status check (which names the more basic refusal).
    if (!def.allowedWhileBilling && !opts.whileBilling && def.allowedFrom.includes(state.status) && isBillingPending(state)) throw billingInProgress();
    take(request.command, request.actor);
  }
  return steps.length ? planOf(steps) : null;
}

/** The plan of steps already decided (and perhaps corrected by the platform): their contract and their events. */
export function planOf(steps: Step[]): Plan {
  const events: PlannedEvent[] = [];
  for (const s of steps) {
    for (const e of s.decision.events) events.push({ type: e.type, actor: s.actor, from: e.from, to: e.to, data: e.data, after: e.after ?? s.decision.contract });
  }
  return { steps, contract: steps[steps.length - 1].decision.contract, events };
}

export const isCommandName = (name: string): name is CommandName => Object.hasOwn(COMMANDS, name);
