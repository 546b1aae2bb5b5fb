import { describe, expect, it } from 'vitest';
import { parseContractAction } from '../../src/domain/actions.js';
import { decide, plan, type Request } from '../../src/domain/commands/plan.js';
import { ACTION_NAMES, ALLOWED_FROM, COMMANDS, CONTRACT_EVENT_TYPES, type Command } from '../../src/domain/commands/registry.js';
import { totalsOf, type ContractState, type ContractStatus } from '../../src/domain/contract.js';

/** The contract commands and the planner: pure, so tested without a database. */

const now = new Date('2026-11-22T10:00:00.000Z');
const at = (iso: string) => new Date(iso);
const lines = [{ id: 'l1', title: 'Coffee 1kg', variantId: '51', quantity: 2, price: { amount: '24.00', currencyCode: 'EUR' } }];
const state = (over: Partial<ContractState> = {}): ContractState => ({
  status: 'ACTIVE',
  customerId: '9001',
  customerEmail: 'ada@example.com',
  billingInterval: 'MONTH',
  billingIntervalCount: 1,
  deliveryInterval: 'MONTH',
  deliveryIntervalCount: 1,
  nextBillingDate: at('2026-12-01T00:00:00.000Z'),
  pausedAt: null,
  resumeAt: null,
  cancelledAt: null,
  cancellationReason: null,
  lines,
  shippingAddress: null,
  deliveryPrice: null,
  discounts: [],
  totals: totalsOf({ lines, discounts: [], deliveryPrice: null }),
  billingStatus: 'ok',
  billingFailedAttempts: 0,
  billingNextAttemptAt: null,
  billingCycleDate: null,
  billingLastAttempt: null,
  ...over,
});
const actor = { type: 'api_key' as const, keyFingerprint: 'abcdefabcdef' };
const STATUSES: ContractStatus[] = ['ACTIVE', 'PAUSED', 'CANCELLED', 'EXPIRED', 'FAILED'];
const c = (name: string, input: Record<string, unknown> = {}) => ({ name, input }) as Command;
const ACTIONS: Command[] = [c('pause'), c('resume'), c('cancel'), c('skip'), c('reschedule', { nextBillingDate: '2027-01-10T00:00:00Z' })];
const req = (command: Command): Request => ({ command, actor });

describe('the command registry', () => {
  it('the actions are the six of the API, and every event type a command records is listed once', () => {
    expect(ACTION_NAMES).toEqual(['pause', 'resume', 'cancel', 'skip', 'reschedule', 'bill_now']);
    expect(new Set(CONTRACT_EVENT_TYPES).size).toBe(CONTRACT_EVENT_TYPES.length);
    for (const def of Object.values(COMMANDS)) for (const e of def.events) expect(CONTRACT_EVENT_TYPES).toContain(e);
  });

  it.each(ACTIONS.flatMap((a) => STATUSES.map((s) => [a, s] as const)))('%o from %s: allowed exactly from its statuses', (command, status) => {
    const allowed = (ALLOWED_FROM[command.name] as readonly string[]).includes(status);
    const run = () => decide(state({ status, pausedAt: status === 'PAUSED' ? now : null }), command, now);
    if (allowed) expect(run().events[0].from).toBe(status);
    else expect(run).toThrow(expect.objectContaining({ code: 'invalid_state', message: expect.stringContaining(status) }));
  });

  it('an action body becomes its command; unknown actions and fields are refused as the API says', () => {
    expect(parseContractAction({ action: 'pause', resumeAt: '2027-01-05T00:00:00Z' }, now)).toEqual({ name: 'pause', input: { resumeAt: '2027-01-05T00:00:00Z' } });
    expect(() => parseContractAction({ action: 'edit' }, now)).toThrow(expect.objectContaining({ code: 'unsupported_action' }));
    expect(() => parseContractAction({ action: 'sync' }, now)).toThrow(expect.objectContaining({ code: 'unsupported_action' }));
    expect(() => parseContractAction({ action: 'skip', extra: 1 }, now)).toThrow(expect.objectContaining({ code: 'invalid_request', details: [{ path: 'extra', message: 'unknown field "extra"' }] }));
    expect(() => parseContractAction({ action: 'reschedule', nextBillingDate: '2026-01-01T00:00:00Z' }, now)).toThrow(expect.objectContaining({ details: [{ path: 'nextBillingDate', message: 'must be in the future' }] }));
  });
});

describe('the lifecycle commands', () => {
  it('pause sets pausedAt and resumeAt; pausing again keeps pausedAt, replaces resumeAt and says pause_updated', () => {
    const first = decide(state(), c('pause', { resumeAt: '2027-01-05T00:00:00Z' }), now);
    expect(first.contract).toMatchObject({ status: 'PAUSED', pausedAt: now, resumeAt: at('2027-01-05T00:00:00Z') });
    expect(first.events[0]).toMatchObject({ type: 'contract.paused', from: 'ACTIVE', to: 'PAUSED', data: { resumeAt: '2027-01-05T00:00:00.000Z' } });
    const later = new Date(now.getTime() + 60_000);
    const again = decide(first.contract, c('pause'), later);
    expect(again.contract).toMatchObject({ pausedAt: now, resumeAt: null });
    expect(again.events[0]).toMatchObject({ type: 'contract.pause_updated', data: { resumeAt: null, previousResumeAt: '2027-01-05T00:00:00.000Z' } });
  });

  it('resume clears the pause and moves a past next billing date to the first one after now, by whole intervals', () => {
    const paused = state({ status: 'PAUSED', pausedAt: at('2026-08-01T00:00:00Z'), resumeAt: at('2026-09-01T00:00:00Z'), nextBillingDate: at('2026-08-31T00:00:00Z') });
    const d = decide(paused, c('resume'), now);
    expect(d.contract).toMatchObject({ status: 'ACTIVE', pausedAt: null, resumeAt: null, nextBillingDate: at('2026-11-30T00:00:00Z') });
    expect(d.events[0].data).toEqual({ previousNextBillingDate: '2026-08-31T00:00:00.000Z', nextBillingDate: '2026-11-30T00:00:00.000Z' });
  });

  it('cancel records when and why; skip moves one interval; reschedule sets the date', () => {
    expect(decide(state(), c('cancel', { reason: 'Moving abroad' }), now).contract).toMatchObject({ status: 'CANCELLED', cancelledAt: now, cancellationReason: 'Moving abroad' });
    expect(decide(state({ billingInterval: 'WEEK', billingIntervalCount: 2 }), c('skip'), now).contract.nextBillingDate).toEqual(at('2026-12-15T00:00:00Z'));
    expect(decide(state(), c('reschedule', { nextBillingDate: '2027-01-10T09:30:00Z' }), now).contract.nextBillingDate).toEqual(at('2027-01-10T09:30:00Z'));
  });
});

describe('plan', () => {
  const due = state({ status: 'PAUSED', pausedAt: at('2026-11-01T00:00:00Z'), resumeAt: at('2026-11-20T00:00:00Z') });

  it('a command: the new contract and one event by its actor', () => {
    const p = plan(state(), req(c('skip')), now)!;
    expect(p.contract.nextBillingDate).toEqual(at('2027-01-01T00:00:00Z'));
    expect(p.events).toEqual([{ type: 'contract.skipped', actor, from: 'ACTIVE', to: 'ACTIVE', data: expect.any(Object), after: p.contract }]);
  });

  it('the due resume is an explicit first step by the scheduler, before the command', () => {
    const p = plan(due, req(c('skip')), now)!;
    expect(p.events.map((e) => [e.type, e.actor.type])).toEqual([
      ['contract.resumed', 'scheduler'],
      ['contract.skipped', 'api_key'],
    ]);
    expect(p.contract.status).toBe('ACTIVE');
    // Each event carries the contract right after it: resumed, then resumed and skipped.
    expect(p.events[0].after).toMatchObject({ status: 'ACTIVE', pausedAt: null, nextBillingDate: due.nextBillingDate });
    expect(p.events[1].after).toBe(p.contract);
  });

  it('a command not allowed once the due resume is applied is refused as from ACTIVE', () => {
    expect(() => plan(due, req(c('resume')), now)).toThrow(expect.objectContaining({ code: 'invalid_state', message: expect.stringContaining('ACTIVE') }));
  });

  it('only the due resume: a plan when due, none otherwise (nothing to write)', () => {
    expect(plan(due, null, now)!.events.map((e) => e.type)).toEqual(['contract.resumed']);
    expect(plan(state(), null, now)).toBeNull();
    expect(plan({ ...due, resumeAt: at('2026-11-23T00:00:00Z') }, null, now)).toBeNull();
  });

  it('no due resume before a sync: the platform\'s word is applied as it is, and the resume is left to the scheduler, which carries it out there', () => {
    const { pausedAt: _p, resumeAt: _r, cancelledAt: _c, cancellationReason: _cr, ...incoming } = due;
    const p = plan(due, { command: { name: 'sync', input: { incoming: { ...incoming, lines: [{ ...lines[0], quantity: 4 }] }, changedAt: now } }, actor: { type: 'platform' } }, now)!;
    expect(p.events.map((e) => [e.type, e.actor.type])).toEqual([['contract.updated', 'platform']]);
    expect(p.contract).toMatchObject({ status: 'PAUSED', resumeAt: due.resumeAt });
  });

  it('does not change the contract it was given', () => {
    const before = structuredClone(due);
    plan(due, req(c('cancel')), now);
    expect(due).toEqual(before);
  });
});

describe('sync (the platform says)', () => {
  const incoming = (over: Partial<ContractState> = {}) => {
    const { pausedAt: _p, resumeAt: _r, cancelledAt: _c, cancellationReason: _cr, ...rest } = state(over);
    return rest;
  };
  const sync = (current: ContractState, over: Partial<ContractState>) => decide(current, { name: 'sync', input: { incoming: incoming(over), changedAt: now } }, now);

  it('a status changed there is the action\'s event; svc\'s own fields follow it', () => {
    const d = sync(state({ status: 'PAUSED', pausedAt: at('2026-11-01T00:00:00Z'), resumeAt: at('2027-01-01T00:00:00Z') }), { status: 'ACTIVE' });
    expect(d.events.map((e) => e.type)).toEqual(['contract.resumed']);
    expect(d.contract).toMatchObject({ status: 'ACTIVE', pausedAt: null, resumeAt: null });
    expect(sync(state(), { status: 'FAILED' }).events.map((e) => e.type)).toEqual(['contract.failed']);
  });

  it('lines, policies, address or date changed there: contract.updated naming each; a line\'s new id alone is no change', () => {
    const d = sync(state(), { nextBillingDate: at('2026-12-05T00:00:00Z'), deliveryInterval: 'WEEK', lines: [{ ...lines[0], quantity: 3 }] });
    expect(d.events).toHaveLength(1);
    expect(d.events[0]).toMatchObject({ type: 'contract.updated', data: { changed: ['nextBillingDate', 'lines', 'deliveryPolicy'], nextBillingDate: '2026-12-05T00:00:00.000Z' } });
    const renamed = sync(state(), { lines: [{ ...lines[0], id: 'platform-line-1' }] });
    expect(renamed.events).toEqual([]);
    expect(renamed.contract.lines[0].id).toBe('platform-line-1');
  });
});

describe('bill_now', () => {
  const paidAt = (cycleDate: Date, status: 'succeeded' | 'failed') => ({
    id: 'a1', cycleDate: cycleDate.toISOString(), attempt: 1, trigger: 'schedule' as const, status, errorCode: null, platformErrorCode: null,
    errorMessage: null, nextActionUrl: null, order: null, amount: { amount: '10.00', currencyCode: 'USD' }, createdAt: cycleDate.toISOString(), completedAt: cycleDate.toISOString(),
  });

  it('never attempts a cycle already paid: in the very millisecond the schedule billed, bill_now is 409 invalid_state', () => {
    const paid = state({ billingLastAttempt: paidAt(now, 'succeeded') as ContractState['billingLastAttempt'] });
    expect(() => decide(paid, { name: 'bill_now', input: { attemptId: 'a2' } }, now)).toThrow(expect.objectContaining({ code: 'invalid_state', message: expect.stringContaining('already paid') }));
  });

  it('a failed cycle billed again now is its next attempt; a moment later is a new cycle', () => {
    const failed = state({ billingLastAttempt: paidAt(now, 'failed') as ContractState['billingLastAttempt'] });
    expect(decide(failed, { name: 'bill_now', input: { attemptId: 'a2' } }, now).contract.billingLastAttempt).toMatchObject({ attempt: 2, cycleDate: now.toISOString() });
    const later = new Date(now.getTime() + 1);
    const paid = state({ billingLastAttempt: paidAt(now, 'succeeded') as ContractState['billingLastAttempt'] });
    expect(decide(paid, { name: 'bill_now', input: { attemptId: 'a3' } }, later).contract.billingLastAttempt).toMatchObject({ attempt: 1, cycleDate: later.toISOString() });
  });
});
