import type { ContractAction } from './actions.js';
import { applyAction, isResumeDue, type ContractState, type ContractStatus } from './contract.js';
import type { Actor } from './resources.js';
import type { LineItem } from '../db/schema.js';
import { iso, type Interval } from './time.js';

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

/**
 * What to write: the state, its events, and in platform mode the rest of the mirror the platform's answer sets
 * (its revision, lines, billing policy, customer). A plan may have no events and only a mirror (a newer revision
 * that changed nothing svc shows).
 */
export type ContractPlan = { state: ContractState; events: PlannedEvent[]; mirror?: MirrorUpdate };

/** The mirror's own columns: what only the platform changes. */
export type MirrorUpdate = Partial<{
  platformRevision: string;
  platformUpdatedAt: Date;
  lines: LineItem[];
  billingInterval: Interval;
  billingIntervalCount: number;
  customerId: string;
  customerEmail: string;
}>;

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

export const PLATFORM: Actor = { type: 'platform' };

/** A contract as the mirror holds it: the state and the fields only the platform changes. */
export type MirroredContract = ContractState & Required<Omit<MirrorUpdate, 'platformRevision' | 'platformUpdatedAt'>>;

const STATUS_EVENT: Record<ContractStatus, string> = {
  ACTIVE: 'contract.resumed',
  PAUSED: 'contract.paused',
  CANCELLED: 'contract.cancelled',
  EXPIRED: 'contract.expired',
  FAILED: 'contract.failed',
};

/**
 * Platform sync (PRODUCT §9): the mirror as it is and the platform's newer state of the contract → the events of
 * what changed there (actor `platform`) and the state to write. A status change is the action's event
 * (contract.paused, contract.resumed, contract.cancelled) or contract.expired / contract.failed; a change of the
 * next billing date, lines, billing policy or customer is contract.updated. svc's own fields follow: a contract
 * paused on the platform is paused since then (and has no resumeAt), one resumed there loses its resumeAt.
 */
export function planSync(current: MirroredContract, incoming: MirroredContract, changedAt: Date, mirror: MirrorUpdate): ContractPlan {
  let state: ContractState = { ...current };
  const events: PlannedEvent[] = [];
  if (incoming.status !== current.status) {
    const from = current.status;
    const to = incoming.status;
    const next: ContractState = { ...state, status: to };
    if (to !== 'PAUSED') {
      next.pausedAt = null;
      next.resumeAt = null;
    } else if (from !== 'PAUSED') {
      next.pausedAt = changedAt;
      next.resumeAt = null;
    }
    if (to === 'CANCELLED') {
      next.cancelledAt = changedAt;
      next.cancellationReason = null;
    }
    const data: Record<string, unknown> = to === 'PAUSED' ? { resumeAt: null } : to === 'CANCELLED' ? { reason: null } : {};
    state = next;
    events.push({ type: STATUS_EVENT[to], actor: PLATFORM, from, to, data, after: state });
  }
  const changed: string[] = [];
  if (incoming.nextBillingDate.getTime() !== current.nextBillingDate.getTime()) changed.push('nextBillingDate');
  if (!sameLines(incoming.lines, current.lines)) changed.push('lines');
  if (incoming.billingInterval !== current.billingInterval || incoming.billingIntervalCount !== current.billingIntervalCount) changed.push('billingPolicy');
  if (incoming.customerId !== current.customerId || incoming.customerEmail !== current.customerEmail) changed.push('customer');
  if (changed.length) {
    const data: Record<string, unknown> = { changed };
    if (changed.includes('nextBillingDate')) {
      data.previousNextBillingDate = iso(current.nextBillingDate);
      data.nextBillingDate = iso(incoming.nextBillingDate);
    }
    state = { ...state, nextBillingDate: incoming.nextBillingDate, billingInterval: incoming.billingInterval, billingIntervalCount: incoming.billingIntervalCount };
    events.push({ type: 'contract.updated', actor: PLATFORM, from: state.status, to: state.status, data, after: state });
  }
  return { state, events, mirror };
}

/** Field by field: the database's jsonb does not keep an object's key order. */
function sameLines(a: LineItem[], b: LineItem[]): boolean {
  return (
    a.length === b.length &&
    a.every((l, i) => {
      const m = b[i];
      return l.title === m.title && l.variantId === m.variantId && l.quantity === m.quantity && l.price.amount === m.price.amount && l.price.currencyCode === m.price.currencyCode;
    })
  );
}
