import path from 'node:path';
import type { Config } from './config.js';
import { openDatabase, type Database } from './db/client.js';
import { acquireEmbeddedLock, type EmbeddedLock } from './db/embeddedLock.js';
import { migrate } from './db/migrate.js';

/**
 * Opens the configured database for `role` (server or CLI) and applies pending migrations. The embedded database is
 * locked to this process first; PostgreSQL needs no lock (migrations serialise on an advisory lock).
 */
export async function openConfiguredDatabase(
  config: Config,
  role: string,
  onPoolError?: (err: Error) => void,
): Promise<{ db: Database; close(): Promise<void> }> {
  let lock: EmbeddedLock | null = null;
  let db: Database;
  if (config.database.kind === 'pglite') {
    const dataDir = path.resolve(config.database.dataDir);
    lock = acquireEmbeddedLock(dataDir, role);
    try {
      db = await openDatabase({ kind: 'pglite', dataDir });
    } catch (err) {
      lock.release();
      throw err;
    }
  } else {
    db = await openDatabase({ kind: 'postgres', url: config.database.url, onPoolError });
  }
  try {
    await migrate(db);
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
