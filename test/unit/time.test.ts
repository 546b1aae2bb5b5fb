import { describe, expect, it } from 'vitest';
import { nextBillingAfter } from '../../src/domain/contract.js';
import { addInterval, isoString, parseUtcTimestamp } from '../../src/domain/time.js';
import { parseTimestamptz } from '../../src/db/timestamps.js';
import pg from 'pg';
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

describe('apiAccess (docs/product.md §2)', () => {
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

describe('isoString', () => {
  it('is toISOString, to the character, for every date', () => {
    const edges = ['1000-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z', '2028-02-29T12:00:00.007Z', '1970-01-01T00:00:00.000Z'];
    for (const e of edges) expect(isoString(new Date(e))).toBe(e);
    // Outside 1000–9999 the text has another shape (a sign, six digits, or leading zeros): toISOString's own.
    for (const t of [-62198755200000, -1e15, 1e15, Date.UTC(999, 11, 31, 23, 59, 59, 999)]) expect(isoString(new Date(t))).toBe(new Date(t).toISOString());
    for (let i = 0; i < 20_000; i++) {
      const date = new Date(Math.floor((Math.random() * 2 - 0.5) * 3e14));
      expect(isoString(date)).toBe(date.toISOString());
    }
    expect(() => isoString(new Date(NaN))).toThrow(RangeError);
  });
});

describe('parseTimestamptz (timestamps PostgreSQL sends)', () => {
  const general = pg.types.getTypeParser(1184, 'text') as (s: string) => unknown;
  const same = (s: string) => {
    const a = parseTimestamptz(s);
    const b = general(s);
    expect(a instanceof Date ? a.getTime() : a).toEqual(b instanceof Date ? b.getTime() : b);
  };

  it('reads UTC timestamps with 0 to 6 fractional digits as pg does', () => {
    expect((parseTimestamptz('2026-11-24 00:00:12.345+00') as Date).toISOString()).toBe('2026-11-24T00:00:12.345Z');
    expect((parseTimestamptz('2026-11-24 00:00:12+00') as Date).toISOString()).toBe('2026-11-24T00:00:12.000Z');
    expect((parseTimestamptz('2026-11-24 00:00:12.5+00') as Date).toISOString()).toBe('2026-11-24T00:00:12.500Z');
    expect((parseTimestamptz('2026-11-24 00:00:12.345999+00') as Date).toISOString()).toBe('2026-11-24T00:00:12.345Z');
    for (let f = 0; f < 1000; f++) same(`2026-11-24 23:59:59.${String(f).padStart(3, '0')}+00`);
    for (let i = 0; i < 20_000; i++) {
      const iso = new Date(Math.floor(Math.random() * 4e12) - 1e12).toISOString();
      const fraction = String(Math.floor(Math.random() * 1e6)).padStart(6, '0').slice(0, 1 + Math.floor(Math.random() * 6));
      same(`${iso.slice(0, 10)} ${iso.slice(11, 19)}${i % 5 ? '.' + fraction : ''}+00`);
    }
  });

  it('leaves every other form to the general parser', () => {
    for (const s of ['infinity', '-infinity', '2026-11-24 00:00:12+05:30', '2026-11-24 00:00:12.5-03', '0099-01-01 00:00:00+00', '12026-01-01 00:00:00+00', '2026-01-01 00:00:00+00 BC', '2026-11-24 00:00:12.+00']) {
      same(s);
    }
  });
});
