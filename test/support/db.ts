import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { inject } from 'vitest';
import { openDatabase, type Database } from '../../src/db/client.js';
import { migrate } from '../../src/db/migrate.js';

export type TestDatabase = {
  db: Database;
  /** Another connection pool to the same database (PostgreSQL: a second "instance"); PGlite returns the same. */
  connectAgain(): Promise<Database>;
  /** PostgreSQL URL of this test database with its schema, for child processes (null on PGlite). */
  url: string | null;
  schema: string | null;
  drop(): Promise<void>;
};

export const onPostgres = () => !!process.env.TEST_DATABASE_URL;

/**
 * A fresh, migrated database for one test file: a copy of the PGlite template, or a new schema on the PostgreSQL of
 * TEST_DATABASE_URL (dropped afterwards).
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  const url = process.env.TEST_DATABASE_URL;
  if (url) {
    const schema = `svc_test_${randomBytes(6).toString('hex')}`;
    const admin = await openDatabase({ kind: 'postgres', url });
    await admin.withSession((run) => run(`CREATE SCHEMA ${schema}`));
    const opened: Database[] = [];
    const connect = async () => {
      const d = await openDatabase({ kind: 'postgres', url, searchPath: schema });
      opened.push(d);
      return d;
    };
    const db = await connect();
    await migrate(db);
    const u = new URL(url);
    u.searchParams.set('options', `-c search_path=${schema}`);
    return {
      db,
      connectAgain: connect,
      url: u.toString(),
      schema,
      drop: async () => {
        for (const d of opened) await d.close();
        await admin.withSession((run) => run(`DROP SCHEMA IF EXISTS ${schema} CASCADE`));
        await admin.close();
      },
    };
  }
  const template = readFileSync(inject('pgliteTemplate'));
  const pg = await PGlite.create({ loadDataDir: new Blob([template]) });
  const db = await openDatabase({ kind: 'pglite', pglite: pg });
  return { db, connectAgain: async () => db, url: null, schema: null, drop: () => db.close() };
}
