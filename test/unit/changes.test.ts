import { describe, expect, it } from 'vitest';
import type { ContractAction } from '../../src/domain/actions.js';
import { planChange } from '../../src/domain/changes.js';
import { ALLOWED_FROM, applyAction, type ContractState, type ContractStatus } from '../../src/domain/contract.js';

/** The contract state machine and the change planner: pure, so tested without a database. */

const now = new Date('2026-11-22T10:00:00.000Z');
const at = (iso: string) => new Date(iso);
const state = (over: Partial<ContractState> = {}): ContractState => ({
  status: 'ACTIVE',
  billingInterval: 'MONTH',
  billingIntervalCount: 1,
  nextBillingDate: at('2026-12-01T00:00:00.000Z'),
  pausedAt: null,
  resumeAt: null,
  cancelledAt: null,
  cancellationReason: null,
  ...over,
});
const actor = { type: 'api_key' as const, keyFingerprint: 'abcdefabcdef' };
const STATUSES: ContractStatus[] = ['ACTIVE', 'PAUSED', 'CANCELLED', 'EXPIRED', 'FAILED'];
const ACTIONS: ContractAction[] = [
  { action: 'pause' },
  { action: 'resume' },
  { action: 'cancel' },
  { action: 'skip' },
  { action: 'reschedule', nextBillingDate: '2027-01-10T00:00:00Z' },
];

describe('applyAction', () => {
  it.each(ACTIONS.flatMap((a) => STATUSES.map((s) => [a, s] as const)))('%o from %s: allowed exactly from PRODUCT §3\'s statuses', (action, status) => {
    const allowed = ALLOWED_FROM[action.action].includes(status);
    const run = () => applyAction(state({ status, pausedAt: status === 'PAUSED' ? now : null }), action, now);
    if (allowed) expect(run().event.from).toBe(status);
    else expect(run).toThrow(expect.objectContaining({ code: 'invalid_state', message: expect.stringContaining(status) }));
  });

  it('pause sets pausedAt and resumeAt; pausing again keeps pausedAt, replaces resumeAt and says pause_updated', () => {
    const first = applyAction(state(), { action: 'pause', resumeAt: '2027-01-05T00:00:00Z' }, now);
    expect(first.state).toMatchObject({ status: 'PAUSED', pausedAt: now, resumeAt: at('2027-01-05T00:00:00Z') });
    expect(first.event).toMatchObject({ type: 'contract.paused', from: 'ACTIVE', to: 'PAUSED', data: { resumeAt: '2027-01-05T00:00:00.000Z' } });
    const later = new Date(now.getTime() + 60_000);
    const again = applyAction(first.state, { action: 'pause' }, later);
    expect(again.state).toMatchObject({ pausedAt: now, resumeAt: null });
    expect(again.event).toMatchObject({ type: 'contract.pause_updated', data: { resumeAt: null, previousResumeAt: '2027-01-05T00:00:00.000Z' } });
  });

  it('resume clears the pause and moves a past next billing date to the first one after now, by whole intervals', () => {
    const paused = state({ status: 'PAUSED', pausedAt: at('2026-08-01T00:00:00Z'), resumeAt: at('2026-09-01T00:00:00Z'), nextBillingDate: at('2026-08-31T00:00:00Z') });
    const t = applyAction(paused, { action: 'resume' }, now);
    expect(t.state).toMatchObject({ status: 'ACTIVE', pausedAt: null, resumeAt: null, nextBillingDate: at('2026-11-30T00:00:00Z') });
    expect(t.event.data).toEqual({ previousNextBillingDate: '2026-08-31T00:00:00.000Z', nextBillingDate: '2026-11-30T00:00:00.000Z' });
  });

  it('cancel records when and why; skip moves one interval; reschedule sets the date', () => {
    expect(applyAction(state(), { action: 'cancel', reason: 'Moving abroad' }, now).state).toMatchObject({ status: 'CANCELLED', cancelledAt: now, cancellationReason: 'Moving abroad' });
    expect(applyAction(state({ billingInterval: 'WEEK', billingIntervalCount: 2 }), { action: 'skip' }, now).state.nextBillingDate).toEqual(at('2026-12-15T00:00:00Z'));
    expect(applyAction(state(), { action: 'reschedule', nextBillingDate: '2027-01-10T09:30:00Z' }, now).state.nextBillingDate).toEqual(at('2027-01-10T09:30:00Z'));
  });
});

describe('planChange', () => {
  const due = state({ status: 'PAUSED', pausedAt: at('2026-11-01T00:00:00Z'), resumeAt: at('2026-11-20T00:00:00Z') });

  it('an action: the new state and one event by its actor', () => {
    const plan = planChange(state(), { action: { action: 'skip' }, actor }, now)!;
    expect(plan.state.nextBillingDate).toEqual(at('2027-01-01T00:00:00Z'));
    expect(plan.events).toEqual([{ type: 'contract.skipped', actor, from: 'ACTIVE', to: 'ACTIVE', data: expect.any(Object), after: plan.state }]);
  });

  it('the due resume is an explicit first step by the scheduler, before the action', () => {
    const plan = planChange(due, { action: { action: 'skip' }, actor }, now)!;
    expect(plan.events.map((e) => [e.type, e.actor.type])).toEqual([
      ['contract.resumed', 'scheduler'],
      ['contract.skipped', 'api_key'],
    ]);
    expect(plan.state.status).toBe('ACTIVE');
    // Each event carries the state right after it: resumed, then resumed and skipped.
    expect(plan.events[0].after).toMatchObject({ status: 'ACTIVE', pausedAt: null, nextBillingDate: due.nextBillingDate });
    expect(plan.events[1].after).toBe(plan.state);
  });

  it('an action not allowed once the due resume is applied is refused as from ACTIVE', () => {
    expect(() => planChange(due, { action: { action: 'resume' }, actor }, now)).toThrow(expect.objectContaining({ code: 'invalid_state', message: expect.stringContaining('ACTIVE') }));
  });

  it('only the due resume: a plan when due, none otherwise (nothing to write)', () => {
    expect(planChange(due, { action: null }, now)!.events.map((e) => e.type)).toEqual(['contract.resumed']);
    expect(planChange(state(), { action: null }, now)).toBeNull();
    expect(planChange({ ...due, resumeAt: at('2026-11-23T00:00:00Z') }, { action: null }, now)).toBeNull();
  });

  it('does not change the state it was given', () => {
    const before = structuredClone(due);
    planChange(due, { action: { action: 'cancel' }, actor }, now);
    expect(due).toEqual(before);
  });
});
