import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import type { TestProject } from 'vitest/node';
import { openDatabase } from '../../src/db/client.js';
import { migrate } from '../../src/db/migrate.js';

/**
 * Creating a PGlite database costs seconds; loading a dump of one costs a fraction. Build one migrated template per
 * run and let every test file start from a copy of it. With TEST_DATABASE_URL, check PostgreSQL is reachable.
 */
export default async function setup(project: TestProject) {
  if (process.env.TEST_DATABASE_URL) {
    const db = await openDatabase({ kind: 'postgres', url: process.env.TEST_DATABASE_URL });
    try {
      await db.ping();
    } catch (err) {
      throw new Error(`TEST_DATABASE_URL is set but PostgreSQL cannot be reached: ${(err as Error).message}`);
    } finally {
      await db.close();
    }
    console.log('[svc tests] database: PostgreSQL (TEST_DATABASE_URL), one schema per test database');
    return;
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-pglite-template-'));
  const pg = await PGlite.create();
  const db = await openDatabase({ kind: 'pglite', pglite: pg });
  await migrate(db);
  const dump = await pg.dumpDataDir('none');
  const file = path.join(dir, 'template.tar');
  writeFileSync(file, Buffer.from(await dump.arrayBuffer()));
  await pg.close();
  project.provide('pgliteTemplate', file);
  console.log('[svc tests] database: embedded PGlite (set TEST_DATABASE_URL to run on PostgreSQL)');
  return () => rmSync(dir, { recursive: true, force: true });
}

declare module 'vitest' {
  export interface ProvidedContext {
    pgliteTemplate: string;
  }
}
