import { describe, expect, it } from 'vitest';
import { nextBillingAfter } from '../../src/domain/contract.js';
import { addInterval, parseUtcTimestamp } from '../../src/domain/time.js';
import { apiAccess } from '../../src/domain/access.js';

const d = (s: string) => new Date(s);

describe('parseUtcTimestamp', () => {
  it('accepts ISO 8601 UTC with Z, with or without fractional seconds', () => {
    expect(parseUtcTimestamp('2027-01-05T00:00:00Z')?.toISOString()).toBe('2027-01-05T00:00:00.000Z');
    expect(parseUtcTimestamp('2027-01-05T10:20:30.5Z')?.toISOString()).toBe('2027-01-05T10:20:30.500Z');
    expect(parseUtcTimestamp('2027-01-05T10:20:30.123456789Z')?.toISOString()).toBe('2027-01-05T10:20:30.123Z');
    expect(parseUtcTimestamp('2028-02-29T00:00:00Z')?.toISOString()).toBe('2028-02-29T00:00:00.000Z');
  });

  it.each([
    '2027-01-05T00:00:00+02:00',
    '2027-01-05T00:00:00+00:00',
    '2027-01-05T00:00:00',
    '2027-01-05',
    '2027-02-30T00:00:00Z',
    '2027-02-29T00:00:00Z',
    '2027-13-01T00:00:00Z',
    '2027-01-05T24:00:00Z',
    '2027-01-05T23:60:00Z',
    '2027-01-05T23:59:60Z',
    '2027-01-05 00:00:00Z',
    '2027-01-05t00:00:00z',
    '2027-01-05T00:00:00.Z',
    '0000-01-01T00:00:00Z',
    ' 2027-01-05T00:00:00Z',
    '',
  ])('rejects %j', (value) => {
    expect(parseUtcTimestamp(value)).toBeNull();
  });
});

describe('addInterval (calendar arithmetic in UTC)', () => {
  it('adds days, weeks, months and years; months clamp to the last day', () => {
    expect(addInterval(d('2027-01-31T08:00:00Z'), 'DAY', 1).toISOString()).toBe('2027-02-01T08:00:00.000Z');
    expect(addInterval(d('2027-01-31T08:00:00Z'), 'WEEK', 2).toISOString()).toBe('2027-02-14T08:00:00.000Z');
    expect(addInterval(d('2027-01-31T08:00:00Z'), 'MONTH', 1).toISOString()).toBe('2027-02-28T08:00:00.000Z');
    expect(addInterval(d('2028-01-31T08:00:00Z'), 'MONTH', 1).toISOString()).toBe('2028-02-29T08:00:00.000Z');
    expect(addInterval(d('2027-01-31T08:00:00Z'), 'MONTH', 3).toISOString()).toBe('2027-04-30T08:00:00.000Z');
    expect(addInterval(d('2027-11-30T08:00:00Z'), 'MONTH', 2).toISOString()).toBe('2028-01-30T08:00:00.000Z');
    expect(addInterval(d('2028-02-29T00:00:00Z'), 'YEAR', 1).toISOString()).toBe('2029-02-28T00:00:00.000Z');
    expect(addInterval(d('2028-02-29T00:00:00Z'), 'YEAR', 4).toISOString()).toBe('2032-02-29T00:00:00.000Z');
  });
});

describe('nextBillingAfter (resume moves a past date forward by whole intervals)', () => {
  it('keeps a future date', () => {
    expect(nextBillingAfter(d('2027-03-01T00:00:00Z'), 'MONTH', 1, d('2027-02-01T00:00:00Z')).toISOString()).toBe('2027-03-01T00:00:00.000Z');
  });

  it('moves to the first date strictly after now, anchored on the original day (month end)', () => {
    const now = d('2027-03-15T00:00:00Z');
    expect(nextBillingAfter(d('2027-01-31T09:00:00Z'), 'MONTH', 1, now).toISOString()).toBe('2027-03-31T09:00:00.000Z');
    expect(nextBillingAfter(d('2027-01-31T09:00:00Z'), 'MONTH', 1, d('2027-02-10T00:00:00Z')).toISOString()).toBe('2027-02-28T09:00:00.000Z');
    expect(nextBillingAfter(d('2027-03-15T00:00:00Z'), 'DAY', 1, now).toISOString()).toBe('2027-03-16T00:00:00.000Z');
    expect(nextBillingAfter(d('2027-03-01T00:00:00Z'), 'WEEK', 2, now).toISOString()).toBe('2027-03-29T00:00:00.000Z');
    expect(nextBillingAfter(d('2020-02-29T00:00:00Z'), 'YEAR', 1, now).toISOString()).toBe('2028-02-29T00:00:00.000Z');
  });

  it('agrees with stepping one interval at a time over many years', () => {
    const now = d('2031-07-19T12:34:56Z');
    for (const [interval, count] of [['DAY', 3], ['WEEK', 1], ['MONTH', 1], ['MONTH', 3], ['YEAR', 1]] as const) {
      const start = d('2026-01-31T00:00:00Z');
      let n = 0;
      while (addInterval(start, interval, count * n).getTime() <= now.getTime()) n++;
      expect(nextBillingAfter(start, interval, count, now).toISOString(), `${count} ${interval}`).toBe(addInterval(start, interval, count * n).toISOString());
    }
  });
});

describe('apiAccess (PRODUCT §2)', () => {
  const now = d('2026-11-22T10:00:00Z');
  it('enterprise has access; others only in the free period, which ends at its moment', () => {
    expect(apiAccess('enterprise', now, null)).toEqual({ allowed: true, reason: 'enterprise', freePeriodEndsAt: null });
    expect(apiAccess('basic', now, null)).toEqual({ allowed: false, reason: 'plan_required', freePeriodEndsAt: null });
    const until = d('2026-12-01T00:00:00Z');
    expect(apiAccess('basic', now, until)).toEqual({ allowed: true, reason: 'free_period', freePeriodEndsAt: until });
    expect(apiAccess('basic', until, until)).toEqual({ allowed: false, reason: 'plan_required', freePeriodEndsAt: null });
    expect(apiAccess('Enterprise', now, null).allowed).toBe(false);
  });
});
