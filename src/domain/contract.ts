import { z } from 'zod';
import { ServiceError } from './errors.js';
import { addInterval, iso, parseUtcTimestamp, type Interval } from './time.js';
import type { ContractAction } from './actions.js';

export const ContractStatus = z.enum(['ACTIVE', 'PAUSED', 'CANCELLED', 'EXPIRED', 'FAILED']);
export type ContractStatus = z.infer<typeof ContractStatus>;
export const BillingInterval = z.enum(['DAY', 'WEEK', 'MONTH', 'YEAR']);

/** The mutable part of a contract that actions read and write. */
export type ContractState = {
  status: ContractStatus;
  billingInterval: Interval;
  billingIntervalCount: number;
  nextBillingDate: Date;
  pausedAt: Date | null;
  resumeAt: Date | null;
  cancelledAt: Date | null;
  cancellationReason: string | null;
};

/** The state part of a contract (of a row, say), as a state of its own: what planning copies and changes. */
export function stateOf(c: ContractState): ContractState {
  return {
    status: c.status,
    billingInterval: c.billingInterval,
    billingIntervalCount: c.billingIntervalCount,
    nextBillingDate: c.nextBillingDate,
    pausedAt: c.pausedAt,
    resumeAt: c.resumeAt,
    cancelledAt: c.cancelledAt,
    cancellationReason: c.cancellationReason,
  };
}

export type ActionName = ContractAction['action'];

/** Which statuses each action may start from (PRODUCT §3). */
export const ALLOWED_FROM: Record<ActionName, readonly ContractStatus[]> = {
  pause: ['ACTIVE', 'PAUSED'],
  resume: ['PAUSED', 'FAILED'],
  cancel: ['ACTIVE', 'PAUSED', 'FAILED'],
  skip: ['ACTIVE'],
  reschedule: ['ACTIVE', 'PAUSED'],
};

export type Transition = {
  state: ContractState;
  event: { type: string; from: ContractStatus; to: ContractStatus; data: Record<string, unknown> };
};

/** True when a paused contract's resume moment has come: every read and action treats it as resumed. */
export function isResumeDue(state: Pick<ContractState, 'status' | 'resumeAt'>, now: Date): boolean {
  return state.status === 'PAUSED' && state.resumeAt !== null && state.resumeAt.getTime() <= now.getTime();
}

/** The first billing date after `now`, moving forward from `date` by whole intervals (anchored on `date`). */
export function nextBillingAfter(date: Date, interval: Interval, count: number, now: Date): Date {
  if (date.getTime() > now.getTime()) return date;
  // Jump close with an estimate, then step; anchoring on the original date keeps month-end days stable.
  const approxMs = { DAY: 86_400_000, WEEK: 604_800_000, MONTH: 28 * 86_400_000, YEAR: 365 * 86_400_000 }[interval] * count;
  let n = Math.max(1, Math.floor((now.getTime() - date.getTime()) / approxMs) - 1);
  while (addInterval(date, interval, count * (n - 1)).getTime() > now.getTime() && n > 1) n--;
  while (addInterval(date, interval, count * n).getTime() <= now.getTime()) n++;
  return addInterval(date, interval, count * n);
}

/**
 * The contract state machine: applies one action, or throws 409 invalid_state. Pure; the caller holds the row lock
 * and writes the result and its event in one transaction.
 */
export function applyAction(state: ContractState, action: ContractAction, now: Date): Transition {
  const allowed = ALLOWED_FROM[action.action];
  if (!allowed.includes(state.status)) {
    throw new ServiceError(
      'invalid_state',
      `Cannot ${action.action} a contract that is ${state.status}; ${action.action} is allowed only from ${allowed.join(' or ')}.`,
    );
  }
  const from = state.status;
  const next = stateOf(state);
  switch (action.action) {
    case 'pause': {
      const alreadyPaused = from === 'PAUSED';
      next.status = 'PAUSED';
      next.pausedAt = alreadyPaused && state.pausedAt ? state.pausedAt : now;
      next.resumeAt = action.resumeAt ? parseUtcTimestamp(action.resumeAt) : null;
      return {
        state: next,
        event: {
          type: alreadyPaused ? 'contract.pause_updated' : 'contract.paused',
          from,
          to: 'PAUSED',
          data: { resumeAt: iso(next.resumeAt), previousResumeAt: alreadyPaused ? iso(state.resumeAt) : undefined },
        },
      };
    }
    case 'resume': {
      next.status = 'ACTIVE';
      next.pausedAt = null;
      next.resumeAt = null;
      next.nextBillingDate = nextBillingAfter(state.nextBillingDate, state.billingInterval, state.billingIntervalCount, now);
      return {
        state: next,
        event: { type: 'contract.resumed', from, to: 'ACTIVE', data: billingChange(state, next) },
      };
    }
    case 'cancel': {
      next.status = 'CANCELLED';
      next.cancelledAt = now;
      next.cancellationReason = action.reason ?? null;
      next.pausedAt = null;
      next.resumeAt = null;
      return { state: next, event: { type: 'contract.cancelled', from, to: 'CANCELLED', data: { reason: next.cancellationReason } } };
    }
    case 'skip': {
      next.nextBillingDate = addInterval(state.nextBillingDate, state.billingInterval, state.billingIntervalCount);
      return { state: next, event: { type: 'contract.skipped', from, to: from, data: billingChange(state, next) } };
    }
    case 'reschedule': {
      next.nextBillingDate = parseUtcTimestamp(action.nextBillingDate)!;
      return { state: next, event: { type: 'contract.rescheduled', from, to: from, data: billingChange(state, next) } };
    }
  }
}

function billingChange(before: ContractState, after: ContractState) {
  return { previousNextBillingDate: iso(before.nextBillingDate), nextBillingDate: iso(after.nextBillingDate) };
}
