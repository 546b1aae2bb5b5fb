import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, inject } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import { openDatabase, type Database } from '../../src/db/client.js';
import { createTestDatabase, onPostgres, type TestDatabase } from './db.js';

/**
 * The operator's CLI called as `runCli(argv, io, env)` against the test database: a schema of its own on PostgreSQL,
 * or an embedded data directory copied from the migrated template (creating one from scratch costs seconds). Call it
 * at the top of a test file: it sets the database up before the file's tests and removes it after.
 */
export function cliHarness() {
  const h = {
    /** A folder of the file's own, removed after it. */
    tmp: '',
    /** The embedded database's directory (unused on PostgreSQL). */
    dataDir: '',
    /** The environment that points the CLI at the test database. */
    base: {} as NodeJS.ProcessEnv,
    pgDatabase: null as TestDatabase | null,
    /** Runs the CLI with `env` over the base environment; what it printed, line by line and joined. */
    async cli(argv: string[], env: NodeJS.ProcessEnv = {}) {
      const out: string[] = [];
      const err: string[] = [];
      const code = await runCli(argv, { out: (s) => out.push(s), err: (s) => err.push(s) }, { ...h.base, ...env });
      return { code, out, err, stdout: out.join('\n'), stderr: err.join('\n') };
    },
    /** The CLI's database, opened after the CLI closed it (the embedded one belongs to one process at a time). */
    async withDatabase<T>(fn: (db: Database) => Promise<T>): Promise<T> {
      const db = h.pgDatabase ? await h.pgDatabase.connectAgain() : await openDatabase({ kind: 'pglite', dataDir: h.dataDir });
      try {
        return await fn(db);
      } finally {
        if (!h.pgDatabase) await db.close();
      }
    },
  };
  beforeAll(async () => {
    h.tmp = mkdtempSync(path.join(os.tmpdir(), 'svc-cli-test-'));
    h.dataDir = path.join(h.tmp, 'data');
    if (onPostgres()) {
      h.pgDatabase = await createTestDatabase();
      h.base = { DATABASE_URL: h.pgDatabase.url! };
    } else {
      const pg = await PGlite.create({ dataDir: h.dataDir, loadDataDir: new Blob([readFileSync(inject('pgliteTemplate'))]) });
      await pg.close();
      h.base = { DATA_DIR: h.dataDir };
    }
  });
  afterAll(async () => {
    await h.pgDatabase?.drop();
    rmSync(h.tmp, { recursive: true, force: true });
  });
  return h;
}
