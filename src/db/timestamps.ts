import pg from 'pg';

const TIMESTAMPTZ = 1184;
const general = pg.types.getTypeParser(TIMESTAMPTZ, 'text') as (text: string) => Date | number | null;

const digit = (s: string, i: number) => s.charCodeAt(i) - 48;
const two = (s: string, i: number) => digit(s, i) * 10 + digit(s, i + 1);
const isDigits = (s: string, from: number, to: number) => {
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
};

/**
 * timestamptz as PostgreSQL writes it in UTC (`2026-11-24 00:00:12.345+00`, the fraction optional, up to 6 digits):
 * read by position. Every contract read parses several, and the general parser (postgres-date, several regular
 * expressions) was a few per cent of an API request. Anything else (another time zone, infinity, a year before 1000
 * or after 9999, BC) goes to the general parser, which the answer then matches exactly.
 */
export function parseTimestamptz(s: string): Date | number | null {
  const n = s.length;
  if (
    n >= 22 && n <= 29 &&
    s.charCodeAt(4) === 45 && s.charCodeAt(7) === 45 && s.charCodeAt(10) === 32 && s.charCodeAt(13) === 58 && s.charCodeAt(16) === 58 &&
    s.charCodeAt(n - 3) === 43 && s.charCodeAt(n - 2) === 48 && s.charCodeAt(n - 1) === 48 &&
    s.charCodeAt(0) !== 48 &&
    isDigits(s, 0, 4) && isDigits(s, 5, 7) && isDigits(s, 8, 10) && isDigits(s, 11, 13) && isDigits(s, 14, 16) && isDigits(s, 17, 19) &&
    (n === 22 || (n >= 24 && s.charCodeAt(19) === 46 && isDigits(s, 20, n - 3)))
  ) {
    // Milliseconds: the fraction's first three digits (a Date holds no finer time).
    let ms = 0;
    for (let i = 20, scale = 100; i < n - 3 && scale >= 1; i++, scale /= 10) ms += digit(s, i) * scale;
    const year = digit(s, 0) * 1000 + digit(s, 1) * 100 + two(s, 2);
    return new Date(Date.UTC(year, two(s, 5) - 1, two(s, 8), two(s, 11), two(s, 14), two(s, 17), ms));
  }
  return general(s);
}

/** The type parsers svc's own pool reads rows with: pg's, with timestamptz read by parseTimestamptz. */
export const rowTypes = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === TIMESTAMPTZ && format !== 'binary') return parseTimestamptz;
    return pg.types.getTypeParser(oid, format as 'text');
  },
};
