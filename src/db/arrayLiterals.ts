import { isoString } from '../domain/time.js';

/**
 * PostgreSQL array literals (`{1,2,NULL}`) for the batched statements' array parameters, written here straight from
 * the items (`plainArray(writes, (w) => w.before.id)`, no array in between) rather than by the driver. Given a
 * JavaScript array, node-postgres converts each element on its own (a Date through local-time getters, every string
 * through two regular-expression replaces) and grows the literal one element at a time: for an action, whose write
 * passes some forty one-element arrays, that was the largest single source of an action's allocations. A string
 * parameter is passed to the database as it is.
 *
 * The literal's rules (PostgreSQL's "Array Value Input"): elements are separated by commas; an unquoted NULL is SQL
 * NULL; inside double quotes a backslash escapes the next character and anything else stands for itself (commas,
 * braces, white space).
 */

type Value<T, V> = (item: T, i: number) => V | null | undefined;

function literal<T, V>(items: readonly T[], value: Value<T, V>, text: (v: V) => string): string {
  let out = '{';
  for (let i = 0; i < items.length; i++) {
    const v = value(items[i], i);
    out += (i ? ',' : '') + (v === null || v === undefined ? 'NULL' : text(v));
  }
  return out + '}';
}

/**
 * Numbers, ids written as digits, uuids: written as they are. A string with any other character (an id a client
 * made up, say) is quoted, so whatever it holds it stays one element, which the database then refuses or reads.
 */
export const plainArray = <T>(items: readonly T[], value: Value<T, number | string>): string => literal(items, value, plainText);

/** Text (or JSON text) elements: each quoted, with `\` and `"` escaped. */
export const textArray = <T>(items: readonly T[], value: Value<T, string>): string => literal(items, value, quoted);

/** timestamptz elements, in UTC. */
export const timestampArray = <T>(items: readonly T[], value: Value<T, Date>): string => literal(items, value, timestampText);

const PLAIN = /^[0-9A-Za-z][0-9A-Za-z.-]*$/;
const plainText = (v: number | string) => (typeof v === 'number' ? String(v) : PLAIN.test(v) ? v : quoted(v));

const NEEDS_ESCAPE = /[\\"]/;

// Two searches for a fixed string: faster than one replace of a class of characters on a contract's lines as JSON,
// which an edit's write pays for its lines and event.
function quoted(s: string): string {
  return NEEDS_ESCAPE.test(s) ? `"${s.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"` : `"${s}"`;
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
