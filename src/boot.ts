import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Config } from './config.js';
import { openDatabase, type Database } from './db/client.js';
import { acquireEmbeddedLock, type EmbeddedLock } from './db/embeddedLock.js';
import { migrate } from './db/migrate.js';

/** What opening the database is doing, for whoever is waiting on it (a person at `npm start`, a supervisor). */
export type BootProgress = (message: string, fields?: Record<string, unknown>) => void;

/**
 * Opens the configured database for `role` (server or CLI) and applies pending migrations. The embedded database is
 * locked to this process first; PostgreSQL needs no lock (migrations serialise on an advisory lock). `progress` hears
 * each step as it starts: creating the embedded database on a first start is the one slow step, so it says so.
 */
export async function openConfiguredDatabase(
  config: Config,
  role: string,
  onPoolError?: (err: Error) => void,
  progress: BootProgress = () => undefined,
): Promise<{ db: Database; close(): Promise<void> }> {
  let lock: EmbeddedLock | null = null;
  let db: Database;
  if (config.database.kind === 'pglite') {
    const dataDir = path.resolve(config.database.dataDir);
    lock = acquireEmbeddedLock(dataDir, role);
    // PostgreSQL writes PG_VERSION into a data directory it has initialised.
    if (existsSync(path.join(dataDir, 'PG_VERSION'))) progress(`opening the embedded database in ${dataDir}`, { step: 'database' });
    else progress(`creating the embedded database in ${dataDir} (first start only; this takes up to a minute)`, { step: 'database' });
    try {
      db = await openDatabase({ kind: 'pglite', dataDir });
    } catch (err) {
      lock.release();
      throw err;
    }
  } else {
    progress('connecting to PostgreSQL', { step: 'database' });
    db = await openDatabase({ kind: 'postgres', url: config.database.url, onPoolError });
  }
  try {
    await migrate(db, undefined, {
      onApply: (name, index, total) => progress(`applying migration ${name} (${index + 1} of ${total})`, { step: 'migrations' }),
    });
  } catch (err) {
    await db.close();
    lock?.release();
    throw err;
  }
  return {
    db,
    close: async () => {
      await db.close();
      lock?.release();
    },
  };
}
