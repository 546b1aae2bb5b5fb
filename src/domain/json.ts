import secureJsonParse from 'secure-json-parse';

/** No request svc takes nests near this deep; past it a body is refused before anything walks it. */
export const MAX_JSON_DEPTH = 64;

/** JSON text svc refuses: not JSON at all, or JSON it will not take (the message says which, as "is …"/"has …"). */
export class JsonRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JsonRefused';
  }
}

/**
 * JSON.parse for what a client sends, refusing what JSON.parse would quietly accept:
 * - nesting deeper than MAX_JSON_DEPTH (code that walks a value recursively, or JSON.stringify, would overflow the
 *   stack on a body of brackets);
 * - a key twice in one object (JSON.parse keeps the last: `{"action":"pause","action":"cancel"}` would cancel, while
 *   a proxy or log reader that keeps the first sees a pause);
 * - `__proto__` keys and `constructor.prototype` (prototype poisoning; secure-json-parse, as Fastify's own parser);
 * - a leading byte order mark is skipped, as Fastify's parser does.
 *
 * One native parse, then one pass over the text that only tracks brackets, strings and keys: no second parse.
 */
export function parseJson(text: string): unknown {
  let value: unknown;
  try {
    value = secureJsonParse.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch (err) {
    throw new JsonRefused(/forbidden prototype property/.test((err as Error).message) ? 'has a forbidden key (__proto__ or constructor.prototype)' : 'is not valid JSON');
  }
  if (value !== null && typeof value === 'object') checkStructure(text);
  return value;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;

/**
 * Depth and duplicate keys, over text JSON.parse has already accepted (so every string is closed and brackets pair
 * up). A string right after `{` or after a `,` inside an object is a key; anything else in a string is skipped.
 */
function checkStructure(text: string): void {
  // One entry per open bracket: the keys an object has shown so far (made on its second key), or null for an array.
  const open: (Set<string> | string | null | undefined)[] = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const start = i + 1;
      let escaped = false;
      for (i = start; ; i++) {
        const d = text.charCodeAt(i);
        if (d === QUOTE) break;
        if (d === BACKSLASH) {
          escaped = true;
          i++;
        }
      }
      if (!expectKey) continue;
      expectKey = false;
      // An escaped key is compared as JSON reads it: "a" and "\u0061" are one key.
      const key = escaped ? (JSON.parse(text.slice(start - 1, i + 1)) as string) : text.slice(start, i);
      const top = open.length - 1;
      const seen = open[top];
      if (seen === undefined) open[top] = key;
      else if (typeof seen === 'string') {
        if (seen === key) throw duplicate(key);
        open[top] = new Set([seen, key]);
      } else if (seen !== null) {
        if (seen.has(key)) throw duplicate(key);
        seen.add(key);
      }
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (open.length === MAX_JSON_DEPTH) throw new JsonRefused(`nests deeper than ${MAX_JSON_DEPTH} levels`);
      open.push(c === OPEN_OBJECT ? undefined : null);
      expectKey = c === OPEN_OBJECT;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      open.pop();
    } else if (c === COMMA) {
      expectKey = open[open.length - 1] !== null;
    }
  }
}

/** The key is named when it is a plain short name: anything else a client sent is not echoed back. */
function duplicate(key: string): JsonRefused {
  const named = /^[A-Za-z0-9_.-]{1,40}$/.test(key) && !/svc_live/i.test(key) ? `the key "${key}"` : 'a key';
  return new JsonRefused(`has ${named} twice in one object`);
}

/**
 * JSON text already written (a contract rendered once for its events, say), to go into a response as it is: the
 * app's serializer (replyJson) puts it in place of a value instead of writing that value again.
 */
export class JsonText {
  constructor(readonly text: string) {}
}

/**
 * JSON.stringify of a response body, with any top-level value that is a JsonText written as its text. Only the top
 * level is looked at (a body is `{ contract: … }` and the like): deeper values are written by JSON.stringify.
 */
export function replyJson(data: unknown): string {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return JSON.stringify(data);
  let raw = false;
  for (const key in data) if ((data as Record<string, unknown>)[key] instanceof JsonText) raw = true;
  if (!raw) return JSON.stringify(data);
  let out = '';
  for (const key in data) {
    const value = (data as Record<string, unknown>)[key];
    const text = value instanceof JsonText ? value.text : JSON.stringify(value);
    // As JSON.stringify does: a property whose value has no JSON form (undefined, a function) is left out.
    if (text === undefined) continue;
    out += (out ? ',' : '{') + JSON.stringify(key) + ':' + text;
  }
  return out ? out + '}' : '{}';
}
