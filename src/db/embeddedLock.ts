import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import path from 'node:path';

/**
 * The embedded database belongs to one process at a time (PGlite is a single-process Postgres). A lock file in the
 * data directory records who holds it; a second process is told plainly instead of waiting or corrupting it.
 * A lock left by a dead process is taken over.
 */
export class EmbeddedDatabaseInUse extends Error {}

export type EmbeddedLock = { release(): void };

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function acquireEmbeddedLock(dataDir: string, role: string): EmbeddedLock {
  mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, 'svc.lock');
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, JSON.stringify({ pid: process.pid, role, since: new Date().toISOString() }));
      closeSync(fd);
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        process.off('exit', release);
        try {
          const holder = JSON.parse(readFileSync(file, 'utf8'));
          if (holder.pid === process.pid) unlinkSync(file);
        } catch {
          // already gone
        }
      };
      process.once('exit', release);
      return { release };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      let holder: { pid?: number; role?: string; since?: string } = {};
      try {
        holder = JSON.parse(readFileSync(file, 'utf8'));
      } catch {
        // unreadable: treat as stale
      }
      if (holder.pid && holder.pid !== process.pid && alive(holder.pid)) {
        throw new EmbeddedDatabaseInUse(
          `The embedded database in ${dataDir} is in use by ${holder.role ?? 'another svc process'} (pid ${holder.pid}, since ${holder.since ?? 'unknown'}). ` +
            `PGlite serves one process at a time: stop that process first, or run svc on PostgreSQL (DATABASE_URL=postgres://…), where the CLI and any number of servers share the database.`,
        );
      }
      try {
        unlinkSync(file);
      } catch {
        // someone else removed it
      }
    }
  }
  throw new EmbeddedDatabaseInUse(`Could not take the lock on the embedded database in ${dataDir}.`);
}
