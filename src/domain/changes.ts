import type { ContractAction } from './actions.js';
import { applyAction, isResumeDue, type ContractState, type ContractStatus } from './contract.js';
import type { Actor } from './resources.js';

/**
 * Planning a contract change, purely: the contract as it is, what is asked and the time → the state to write and the
 * events to record, or null when there is nothing to do. Every writer of a contract (an API or MCP action, the
 * admin, the resume sweep, a read that finds a resume due, platform sync) plans here and commits the plan through
 * the one change path in db/ (commitContractChange).
 */

export type PlannedEvent = {
  type: string;
  actor: Actor;
  from: ContractStatus;
  to: ContractStatus;
  data: Record<string, unknown>;
  /** The contract's state right after this event (what a webhook of this event carries). */
  after: ContractState;
};

export type ContractPlan = { state: ContractState; events: PlannedEvent[] };

/** What a writer asks for: an action by someone, or only the due resume (`action: null`). */
export type ChangeRequest = { action: ContractAction; actor: Actor } | { action: null };

export const SCHEDULER: Actor = { type: 'scheduler' };
const RESUME: ContractAction = { action: 'resume' };

/**
 * The due resume as an explicit first step: a PAUSED contract whose `resumeAt` has passed is resumed (actor
 * `scheduler`) before anything else, so no action ever starts from a state the scheduler has merely not reached.
 * Then the requested action, if any; it throws invalid_state when its status does not allow it.
 */
export function planChange(current: ContractState, request: ChangeRequest, now: Date): ContractPlan | null {
  let state = current;
  const events: PlannedEvent[] = [];
  const step = (action: ContractAction, actor: Actor) => {
    const t = applyAction(state, action, now);
    state = t.state;
    events.push({ type: t.event.type, actor, from: t.event.from, to: t.event.to, data: t.event.data, after: state });
  };
  if (isResumeDue(state, now)) step(RESUME, SCHEDULER);
  if (request.action) step(request.action, request.actor);
  return events.length ? { state, events } : null;
}
