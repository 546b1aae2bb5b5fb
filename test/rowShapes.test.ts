import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from './support/db.js';

// Named statements' rows are built by svc from the driver's arrays on PostgreSQL (src/db/rowShapes.ts); on both
// databases a row must be the object the driver itself would have made: every column under its own name, typed
// values, the last of two columns of one name winning, and a statement whose columns change answering with the new ones.

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.drop());

describe('rows of named statements', () => {
  it('are objects with one property per column, whatever the column is called', async () => {
    const rows = await database.db.prepared<Record<string, unknown>>(
      'svc_test_row_shapes',
      `SELECT n AS id, 'x' || n AS "a b", '"quoted" \\ name' AS "say ""hi"" \\", NULL::text AS " ", now() AS at, n > 1 AS "constructor",
              1 AS dup, 2 AS dup, 3 AS "__proto__"
         FROM generate_series(1, $1::int) AS n`,
      [2],
    );
    expect(rows).toHaveLength(2);
    const [first, second] = rows;
    expect(Object.keys(first)).toEqual(['id', 'a b', 'say "hi" \\', ' ', 'at', 'constructor', 'dup', '__proto__']);
    expect(first).toMatchObject({ id: 1, 'a b': 'x1', 'say "hi" \\': '"quoted" \\ name', ' ': null, constructor: false, dup: 2 });
    expect(Object.getOwnPropertyDescriptor(first, '__proto__')?.value).toBe(3);
    expect(Object.getPrototypeOf(first)).not.toBe(3);
    expect(first.at).toBeInstanceOf(Date);
    expect(second).toMatchObject({ id: 2, 'a b': 'x2', constructor: true });
  });

  it('follow a statement whose columns change under the same name', async () => {
    const one = await database.db.prepared<Record<string, unknown>>('svc_test_row_shapes_changing', `SELECT 1 AS a, 2 AS b`, []);
    expect(one).toEqual([{ a: 1, b: 2 }]);
    // A new pool connection would prepare the new text; on the same one the name is taken, so ask under another
    // database object: a second pool, as after a deploy that changed the statement.
    const again = await database.connectAgain();
    const other = await again.prepared<Record<string, unknown>>('svc_test_row_shapes_changing', `SELECT 3 AS b, 4 AS c, 5 AS d`, []);
    expect(other).toEqual([{ b: 3, c: 4, d: 5 }]);
    expect(await database.db.prepared('svc_test_row_shapes_changing', `SELECT 1 AS a, 2 AS b`, [])).toEqual([{ a: 1, b: 2 }]);
  });

  it('an empty answer is no rows', async () => {
    expect(await database.db.prepared('svc_test_row_shapes_empty', `SELECT 1 AS a WHERE false`, [])).toEqual([]);
  });
});
