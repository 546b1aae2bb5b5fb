import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { plainArray, textArray, timestampArray } from '../src/db/arrayLiterals.js';

const same = <T>(v: T) => v;
import { createTestDatabase, type TestDatabase } from './support/db.js';

// The batched statements pass their arrays as literals written by svc (src/db/arrayLiterals.ts): the database must
// read back exactly the elements given, whatever a client put in them.

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.drop());

const read = async <T>(literal: string, type: string): Promise<T[]> => {
  const [row] = await database.db.unprepared<{ a: T[] }>(`SELECT $1::${type}[] AS a`, [literal]);
  return row.a;
};

describe('array literals', () => {
  it('text: quotes, backslashes, commas, braces, white space, the word NULL, empty text and SQL NULL come back as given', async () => {
    const values = ['plain', 'a "quoted" word', 'back\\slash\\', '{braces},and,commas', ' spaced \n\t line ', 'NULL', '', null, 'unicode ✓ 日本', '\\"'];
    expect(await read<string | null>(textArray(values, same), 'text')).toEqual(values);
  });

  it('JSON text: each document one element, parsed back to what was written', async () => {
    const docs = [{ a: 'x "y" \\ z', b: [1, 2], c: null }, null, 'just a string', [{ nested: { '{': '}' } }]];
    const out = await read<unknown>(textArray(docs, (d) => JSON.stringify(d)), 'jsonb');
    expect(out).toEqual(docs);
  });

  it('plain: numbers, digit ids and uuids as they are; NULL; an id with any other character stays one element', async () => {
    expect(await read<number | null>(plainArray([1, -2, null, 30], same), 'int')).toEqual([1, -2, null, 30]);
    const ids = await read<string>(plainArray(['4001', '9007199254740993'], same), 'bigint');
    expect(ids.map(String)).toEqual(['4001', '9007199254740993']);
    expect(await read<string>(plainArray(['6f1c0f8e-4b3a-4a8e-9a41-2f9c3b2a7d11'], same), 'uuid')).toEqual(['6f1c0f8e-4b3a-4a8e-9a41-2f9c3b2a7d11']);
    // A made-up id cannot become two elements (or inject anything): it is one element the database refuses as a number.
    expect(await read<string>(plainArray(['1,2', '3}', '"x'], same), 'text')).toEqual(['1,2', '3}', '"x']);
    await expect(read(plainArray(['1,2'], same), 'bigint')).rejects.toThrow();
  });

  it('timestamps: the same moments, to the millisecond, in and out of the years 1000 to 9999, BC included; NULL', async () => {
    const moments = [
      new Date('2026-11-29T12:34:56.789Z'),
      new Date('2026-01-01T00:00:00.000Z'),
      null,
      new Date(Date.UTC(500, 5, 15, 1, 2, 3, 4)),
      new Date(Date.UTC(12345, 0, 2, 3, 4, 5, 6)),
      new Date(Date.UTC(-44, 2, 15, 12, 0, 0, 0)), // 45 BC
      new Date(Date.UTC(0, 0, 1)), // 1 BC
    ];
    moments[6]!.setUTCFullYear(0);
    // Read back as milliseconds since the epoch (a driver's date parser may not read BC years back).
    const [row] = await database.db.unprepared<{ a: (number | null)[] }>(
      `SELECT array(SELECT (extract(epoch FROM t) * 1000)::float8 FROM unnest($1::timestamptz[]) WITH ORDINALITY AS u(t, n) ORDER BY n) AS a`,
      [timestampArray(moments, same)],
    );
    expect(row.a.map((ms) => (ms === null ? null : Number(ms)))).toEqual(moments.map((d) => (d === null ? null : d.getTime())));
  });

  it('an invalid date is refused before it reaches the database', () => {
    expect(() => timestampArray([new Date(NaN)], same)).toThrow(RangeError);
  });

  it('empty arrays', async () => {
    expect(await read(plainArray([], same), 'int')).toEqual([]);
    expect(await read(textArray([], same), 'text')).toEqual([]);
    expect(await read(timestampArray([], same), 'timestamptz')).toEqual([]);
  });
});
