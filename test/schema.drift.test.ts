import { is, SQL } from 'drizzle-orm';
import { getTableConfig, PgDialect, PgTable } from 'drizzle-orm/pg-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STATE_COLUMNS } from '../src/db/contractColumns.js';
import { migrate } from '../src/db/migrate.js';
import * as schema from '../src/db/schema.js';
import { CONTRACT_STATE_KEYS } from '../src/domain/contract.js';
import { createTestDatabase, type TestDatabase } from './support/db.js';

/*
 * The shape of the data, written in several places, held together: the tables a fresh database has once every
 * migration ran, the Drizzle schema (src/db/schema.ts) the code is typed by, and the contract's state (the keys of
 * ContractState, and the columns the change path writes them to).
 */

let database: TestDatabase;

// Every migration from an empty database: on PGlite the slowest set-up of the suite, so it may take minutes.
beforeAll(async () => {
  database = await createTestDatabase({ migrated: false });
  await migrate(database.db);
}, 300_000);
afterAll(() => database?.drop());

/** The migrator's own bookkeeping: not svc's data. */
const BOOKKEEPING = new Set(['svc_migrations', 'svc_functions']);

/** `timestamp (3) with time zone` and `timestamp(3) with time zone`, `numeric(20, 0)` and `numeric(20,0)`: one type. */
const normalType = (t: string) => t.replace(/\s+\(/g, '(').replace(/,\s+/g, ',').trim();

type Shape = Record<string, Record<string, string>>;

/** A column as the comparison sees it: its type, NULL or NOT NULL, and GENERATED when the database computes it. */
const describeColumn = (type: string, nullable: boolean, generated: boolean) => `${normalType(type)} ${nullable ? 'NULL' : 'NOT NULL'}${generated ? ' GENERATED' : ''}`;

async function databaseShape(): Promise<Shape> {
  const rows = await database.db.withSession((run) =>
    run<{ table: string; column: string; type: string; nullable: boolean; generated: boolean }>(
      `SELECT c.table_name AS "table", c.column_name AS "column", format_type(a.atttypid, a.atttypmod) AS type,
              c.is_nullable = 'YES' AS nullable, c.is_generated = 'ALWAYS' AS generated
         FROM information_schema.columns c
         JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
         JOIN pg_attribute a ON a.attrelid = format('%I.%I', c.table_schema, c.table_name)::regclass AND a.attname = c.column_name
        WHERE c.table_schema = current_schema()
        ORDER BY c.table_name, c.ordinal_position`,
    ),
  );
  const shape: Shape = {};
  for (const r of rows) {
    if (BOOKKEEPING.has(r.table)) continue;
    (shape[r.table] ??= {})[r.column] = describeColumn(r.type, r.nullable, r.generated);
  }
  return shape;
}

function drizzleShape(): Shape {
  const shape: Shape = {};
  for (const value of Object.values(schema)) {
    if (!is(value, PgTable)) continue;
    const table = getTableConfig(value);
    expect(shape[table.name], `schema.ts declares the table ${table.name} twice`).toBeUndefined();
    shape[table.name] = Object.fromEntries(table.columns.map((c) => [c.name, describeColumn(c.getSQLType(), !c.notNull, !!c.generated)]));
  }
  return shape;
}

describe('the Drizzle schema is the migrated database', () => {
  it('declares every table the migrations create, with their columns, types and nullability, and nothing else', async () => {
    const actual = await databaseShape();
    const declared = drizzleShape();
    // One comparison, so that its diff names every drift at once.
    expect(declared).toEqual(actual);
  });
});

describe("a generated column's expression is the migration's", () => {
  it('as the database reads it back, for every column schema.ts declares generated', async () => {
    const dialect = new PgDialect();
    const tables = (Object.values(schema) as unknown[]).filter((v): v is PgTable => is(v, PgTable));
    const generated = tables.flatMap((t) => getTableConfig(t).columns.filter((c) => c.generated).map((c) => ({ table: getTableConfig(t).name, column: c })));
    expect(generated.length).toBeGreaterThan(0);
    for (const { table, column } of generated) {
      const as = column.generated!.as;
      const expression = dialect.sqlToQuery(typeof as === 'function' ? (as as () => SQL)() : (as as SQL)).sql;
      // The same expression over a table of the same columns, declared as schema.ts declares it (one session: the
      // probe is a temporary table).
      const [declared, actual] = await database.db.withSession(async (run) => {
        const expressionOf = async (relation: string) =>
          (
            await run<{ expr: string }>(
              `SELECT pg_get_expr(d.adbin, d.adrelid) AS expr FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
                WHERE d.adrelid = $1::regclass AND a.attname = $2`,
              [relation, column.name],
            )
          )[0]?.expr;
        const columns = await run<{ name: string; type: string }>(
          `SELECT attname AS name, format_type(atttypid, atttypmod) AS type FROM pg_attribute
            WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = '' ORDER BY attnum`,
          [table],
        );
        const probe = `drift_probe_${table}`;
        await run(
          `CREATE TEMP TABLE ${probe} (${columns.map((c) => `"${c.name}" ${c.type}`).join(', ')}, "${column.name}" ${column.getSQLType()} GENERATED ALWAYS AS (${expression}) STORED)`,
        );
        try {
          return [await expressionOf(probe), await expressionOf(table)];
        } finally {
          await run(`DROP TABLE ${probe}`);
        }
      });
      expect(declared, `${table}.${column.name}`).toBe(actual);
    }
  });
});

/**
 * The columns of subscription_contracts that are not the contract's state: its identity and metadata, the platform
 * lease (db/contractLeases.ts), and the renewals' own columns (the test gateway's behaviour, the worker's claim,
 * the generated due date). A new column is either a key of ContractState or one of these.
 */
const NOT_STATE = [
  'id',
  'shop_id',
  'created_at',
  'updated_at',
  'version',
  'platform_revision',
  'platform_updated_at',
  'call_lease',
  'call_lease_until',
  'payment_behaviour',
  'billing_claimed_until',
  'billing_claimed_version',
  'billing_due_at',
];

const ARRAY_TYPES: Record<string, string> = { text: 'text', int: 'integer', timestamptz: 'timestamp(3) with time zone', json: 'json', jsonb: 'jsonb' };

describe("the contract's state is the contracts table's state columns", () => {
  it('has one column per key of ContractState, and the table no column that is neither state nor a known other', async () => {
    const contracts = (await databaseShape()).subscription_contracts;
    expect(STATE_COLUMNS.map((c) => c.key)).toEqual([...CONTRACT_STATE_KEYS]);
    const stateColumns = Object.keys(contracts).filter((c) => !NOT_STATE.includes(c));
    expect(STATE_COLUMNS.map((c) => c.column).sort()).toEqual(stateColumns.sort());
    for (const key of NOT_STATE) expect(contracts[key], `subscription_contracts.${key}`).toBeDefined();
  });

  it('writes each state column with an array of its own type', async () => {
    const contracts = (await databaseShape()).subscription_contracts;
    for (const c of STATE_COLUMNS) expect(`${c.column} ${contracts[c.column].split(' NOT NULL')[0].split(' NULL')[0]}`).toBe(`${c.column} ${ARRAY_TYPES[c.type]}`);
    expect(STATE_COLUMNS.filter((c) => c.json).map((c) => c.column)).toEqual(STATE_COLUMNS.filter((c) => c.type === 'json' || c.type === 'jsonb').map((c) => c.column));
  });
});
