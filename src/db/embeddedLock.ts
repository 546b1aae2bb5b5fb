import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import path from 'node:path';

/**
 * The embedded database belongs to one process at a time (PGlite is a single-process Postgres). A lock file in the
 * data directory records who holds it; a second process is told plainly instead of waiting or corrupting it
 * (docs/product.md §8). A lock left by a process that is gone is taken over, so a server killed with SIGKILL
 * (or lost with its machine) never stops the next start.
 *
 * "Gone" is judged by identity, not by the pid alone: a pid outlives its process as a zombie until its parent reaps
 * it (a container whose init never does), and is given to a new process after a crash or a reboot. So the lock
 * records the holder's start time as the kernel counts it (/proc/<pid>/stat, with the boot it counts from), and a
 * holder is alive only while a process of that pid exists, is not a zombie, and started at that very moment.
 * Where /proc is not there to ask (macOS, say), a pid that answers a signal is taken as alive.
 */
export class EmbeddedDatabaseInUse extends Error {}

export type EmbeddedLock = { release(): void };

export type Holder = { pid?: number; role?: string; since?: string; start?: string };

const readText = (file: string): string | null => {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
};

/** What /proc says of a process: its state letter and its start time ("<boot id>:<clock ticks since boot>"). */
function procStat(pid: number): { state: string; start: string } | null {
  const stat = readText(`/proc/${pid}/stat`);
  if (stat === null) return null;
  // The command name (2nd field) may hold spaces and parentheses: the fields that follow come after its last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const boot = readText('/proc/sys/kernel/random/boot_id')?.trim() ?? '';
  return { state: fields[0], start: `${boot}:${fields[19]}` };
}

function signalled(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether the process that wrote the lock is still running. */
export function holderAlive(holder: Holder): boolean {
  const pid = holder.pid;
  if (typeof pid !== 'number' || !Number.isSafeInteger(pid) || pid <= 0) return false;
  const proc = procStat(pid);
  // Nothing to read (no /proc, or it hides other users' processes): the pid answering a signal is all there is.
  if (proc === null) return signalled(pid);
  // A zombie (killed, not yet reaped), a dead one, or another process under a reused pid.
  if (proc.state === 'Z' || proc.state === 'X' || proc.state === 'x') return false;
  return holder.start === undefined || holder.start === proc.start;
}

/** The live process holding the embedded database in `dataDir` (its role, pid and since when), or null when none does. */
export function embeddedLockHolder(dataDir: string): Holder | null {
  const text = readText(path.join(dataDir, 'svc.lock'));
  if (text === null) return null;
  let holder: Holder;
  try {
    holder = JSON.parse(text);
  } catch {
    return null;
  }
  return holder.pid !== process.pid && holderAlive(holder) ? holder : null;
}

export function acquireEmbeddedLock(dataDir: string, role: string): EmbeddedLock {
  mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, 'svc.lock');
  const mine = JSON.stringify({ pid: process.pid, role, since: new Date().toISOString(), start: procStat(process.pid)?.start });
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, mine);
      closeSync(fd);
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        process.off('exit', release);
        try {
          if (readFileSync(file, 'utf8') === mine) unlinkSync(file);
        } catch {
          // already gone
        }
      };
      process.once('exit', release);
      return { release };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const text = readText(file);
      let holder: Holder = {};
      try {
        holder = JSON.parse(text ?? '');
      } catch {
        // unreadable: a lock cut short by a crash while it was written; stale
      }
      if (holder.pid !== process.pid && holderAlive(holder)) {
        throw new EmbeddedDatabaseInUse(
          `The embedded database in ${dataDir} is in use by ${holder.role ?? 'another svc process'} (pid ${holder.pid}, since ${holder.since ?? 'unknown'}). ` +
            `PGlite serves one process at a time: stop that process first, or run svc on PostgreSQL (DATABASE_URL=postgres://…), where the CLI and any number of servers share the database.`,
        );
      }
      // Only the stale lock that was judged: if another starting process has taken it over meanwhile, its fresh lock
      // is left alone and this attempt meets it next time round.
      try {
        if (readText(file) === text) unlinkSync(file);
      } catch {
        // someone else removed it
      }
    }
  }
  throw new EmbeddedDatabaseInUse(`Could not take the lock on the embedded database in ${dataDir}.`);
}
