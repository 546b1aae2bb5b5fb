import { isoString } from '../domain/time.js';

/**
 * PostgreSQL array literals (`{1,2,NULL}`), of values or of what a function takes from each item (no array in between) for the batched statements' array parameters, written here rather than
 * by the driver. Given a JavaScript array, node-postgres converts each element on its own (a Date through local-time
 * getters, every string through two regular-expression replaces) and grows the literal one element at a time: for an
 * action, whose write passes some forty one-element arrays, that was ~5 µs and ~9 KB of garbage per request, the
 * largest single source of an action's allocations (a sampling heap profile, objects collected included). A string
 * parameter is passed to the database as it is.
 *
 * The literal's rules (PostgreSQL's "Array Value Input"): elements are separated by commas; an unquoted NULL is SQL
 * NULL; inside double quotes a backslash escapes the next character and anything else stands for itself (commas,
 * braces, white space).
 */

/**
 * Numbers, ids written as digits, uuids: written as they are. A string with any other character (an id a client
 * made up, say) is quoted, so whatever it holds it stays one element, which the database then refuses or reads.
 */
export function plainArray(values: readonly (number | string | null | undefined)[]): string;
export function plainArray<T>(items: readonly T[], value: (item: T, i: number) => number | string | null | undefined): string;
export function plainArray<T>(items: readonly T[], value?: (item: T, i: number) => number | string | null | undefined): string {
  let out = '{';
  for (let i = 0; i < items.length; i++) {
    const v = value ? value(items[i], i) : (items[i] as number | string | null | undefined);
    out += (i ? ',' : '') + (v === null || v === undefined ? 'NULL' : typeof v === 'number' ? String(v) : PLAIN.test(v) ? v : quoted(v));
  }
  return out + '}';
}

const PLAIN = /^[0-9A-Za-z][0-9A-Za-z.-]*$/;

/** Text (or JSON text) elements: each quoted, with `\` and `"` escaped. */
export function textArray(values: readonly (string | null | undefined)[]): string;
export function textArray<T>(items: readonly T[], value: (item: T, i: number) => string | null | undefined): string;
export function textArray<T>(items: readonly T[], value?: (item: T, i: number) => string | null | undefined): string {
  let out = '{';
  for (let i = 0; i < items.length; i++) {
    const v = value ? value(items[i], i) : (items[i] as string | null | undefined);
    out += (i ? ',' : '') + (v === null || v === undefined ? 'NULL' : quoted(v));
  }
  return out + '}';
}

/** timestamptz elements, in UTC. */
export function timestampArray(values: readonly (Date | null | undefined)[]): string;
export function timestampArray<T>(items: readonly T[], value: (item: T, i: number) => Date | null | undefined): string;
export function timestampArray<T>(items: readonly T[], value?: (item: T, i: number) => Date | null | undefined): string {
  let out = '{';
  for (let i = 0; i < items.length; i++) {
    const v = value ? value(items[i], i) : (items[i] as Date | null | undefined);
    out += (i ? ',' : '') + (v === null || v === undefined ? 'NULL' : timestampText(v));
  }
  return out + '}';
}

const NEEDS_ESCAPE = /[\\"]/;

function quoted(s: string): string {
  return NEEDS_ESCAPE.test(s) ? `"${s.replace(/[\\"]/g, '\\$&')}"` : `"${s}"`;
}

/**
 * A moment as PostgreSQL reads it: ISO 8601 in UTC for the years 1000 to 9999 (no character of it needs quoting);
 * otherwise the year written out in full, and BC for the years before 1, quoted (as the driver writes them).
 */
function timestampText(d: Date): string {
  const year = d.getUTCFullYear();
  if (year >= 1000 && year <= 9999) return isoString(d);
  if (Number.isNaN(year)) throw new RangeError('Invalid time value');
  const iso = d.toISOString(); // ±YYYYYY-MM-DDTHH:MM:SS.sssZ for these years
  const rest = iso.slice(iso.indexOf('-', 1));
  const bc = year < 1;
  return `"${String(bc ? 1 - year : year).padStart(4, '0')}${rest.slice(0, -1)}+00:00${bc ? ' BC' : ''}"`;
}
