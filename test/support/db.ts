import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { inject } from 'vitest';
import { openDatabase, type Database, type QueryObserver } from '../../src/db/client.js';
import { migrate } from '../../src/db/migrate.js';

export type TestDatabase = {
  db: Database;
  /** Another connection pool to the same database (PostgreSQL: a second "instance"); PGlite returns the same. */
  connectAgain(): Promise<Database>;
  /** The same database through a Database that reports every statement its query builder runs (closed by drop). */
  observed(onQuery: QueryObserver): Promise<Database>;
  /** PostgreSQL URL of this test database with its schema, for child processes (null on PGlite). */
  url: string | null;
  schema: string | null;
  drop(): Promise<void>;
};

export const onPostgres = () => !!process.env.TEST_DATABASE_URL;

/**
 * A fresh, migrated database for one test file: a copy of the PGlite template, or a new schema on the PostgreSQL of
 * TEST_DATABASE_URL (dropped afterwards). `migrated: false`: an empty one (a new PGlite), for a test that migrates it
 * itself.
 */
export async function createTestDatabase(opts: { migrated?: boolean } = {}): Promise<TestDatabase> {
  const migrated = opts.migrated ?? true;
  const url = process.env.TEST_DATABASE_URL;
  if (url) {
    const schema = `svc_test_${randomBytes(6).toString('hex')}`;
    const admin = await openDatabase({ kind: 'postgres', url });
    await admin.withSession((run) => run(`CREATE SCHEMA ${schema}`));
    const opened: Database[] = [];
    const connect = async (onQuery?: QueryObserver) => {
      const d = await openDatabase({ kind: 'postgres', url, searchPath: schema, onQuery });
      opened.push(d);
      return d;
    };
    const db = await connect();
    if (migrated) await migrate(db);
    const u = new URL(url);
    u.searchParams.set('options', `-c search_path=${schema}`);
    return {
      db,
      connectAgain: () => connect(),
      observed: (onQuery) => connect(onQuery),
      url: u.toString(),
      schema,
      drop: async () => {
        for (const d of opened) await d.close();
        await admin.withSession((run) => run(`DROP SCHEMA IF EXISTS ${schema} CASCADE`));
        await admin.close();
      },
    };
  }
  const pg = migrated ? await PGlite.create({ loadDataDir: new Blob([readFileSync(inject('pgliteTemplate'))]) }) : await PGlite.create();
  const db = await openDatabase({ kind: 'pglite', pglite: pg });
  return {
    db,
    connectAgain: async () => db,
    // The same PGlite instance: closing this one must not close the shared database.
    observed: async (onQuery) => ({ ...(await openDatabase({ kind: 'pglite', pglite: pg, onQuery })), close: async () => {} }),
    url: null,
    schema: null,
    drop: () => db.close(),
  };
}
