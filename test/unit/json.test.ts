import { describe, expect, it } from 'vitest';
import { JsonRefused, MAX_JSON_DEPTH, parseJson } from '../../src/domain/json.js';

/** The JSON rules (README, Hostile clients) on the text itself: what is read, and what is refused and why. */

const refused = (text: string) => {
  try {
    parseJson(text);
  } catch (err) {
    expect(err).toBeInstanceOf(JsonRefused);
    return (err as Error).message;
  }
  throw new Error(`accepted: ${text}`);
};

describe('parseJson', () => {
  it('reads what JSON.parse reads, a leading byte order mark skipped', () => {
    for (const text of ['{"a":1}', '[1,"two",{"three":[3]}]', '"x"', '42', 'null', '{"a":{"b":1},"b":2}', '[{"a":1},{"a":1}]', '{"a":"{\\"a\\":1,","b":"}"}', '{}', '[]']) {
      expect(parseJson(text)).toEqual(JSON.parse(text));
    }
    expect(parseJson('\ufeff{"a":1}')).toEqual({ a: 1 });
  });

  it(`refuses nesting deeper than ${MAX_JSON_DEPTH}, counting objects and arrays alike`, () => {
    const deep = (n: number) => '{"a":'.repeat(n >> 1) + '['.repeat(n - (n >> 1)) + ']'.repeat(n - (n >> 1)) + '}'.repeat(n >> 1);
    expect(() => parseJson(deep(MAX_JSON_DEPTH))).not.toThrow();
    expect(refused(deep(MAX_JSON_DEPTH + 1))).toBe('nests deeper than 64 levels');
    expect(refused('['.repeat(20_000) + ']'.repeat(20_000))).toBe('nests deeper than 64 levels');
    // Brackets inside strings are text.
    expect(() => parseJson(`{"a":"${'['.repeat(1000)}"}`)).not.toThrow();
  });

  it('refuses a key twice in one object, however it is escaped, at any depth', () => {
    expect(refused('{"a":1,"a":2}')).toBe('has the key "a" twice in one object');
    expect(refused('{"a":1,"\\u0061":2}')).toBe('has the key "a" twice in one object');
    expect(refused('{"x":[{"k":1,"y":{},"k":2}]}')).toBe('has the key "k" twice in one object');
    expect(refused('{"a\\"b":1,"a\\"b":2}')).toBe('has a key twice in one object');
    expect(refused(`{"${'k'.repeat(41)}":1,"${'k'.repeat(41)}":2}`)).toBe('has a key twice in one object');
    const many = Array.from({ length: 500 }, (_, i) => `"k${i}":${i}`);
    expect(() => parseJson(`{${many.join(',')}}`)).not.toThrow();
    expect(refused(`{${many.join(',')},"k250":0}`)).toBe('has the key "k250" twice in one object');
  });

  it('refuses prototype keys and text that is not JSON', () => {
    expect(refused('{"__proto__":{"x":1}}')).toMatch(/forbidden key/);
    expect(refused('{"\\u005f_proto__":{"x":1}}')).toMatch(/forbidden key/);
    expect(refused('{"constructor":{"prototype":{}}}')).toMatch(/forbidden key/);
    for (const text of ['', '{', '{"a":1,}', "{'a':1}", 'NaN']) expect(refused(text)).toBe('is not valid JSON');
  });
});
