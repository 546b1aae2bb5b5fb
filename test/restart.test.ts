import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { acquireEmbeddedLock } from '../src/db/embeddedLock.js';
import { createTestDatabase, onPostgres, type TestDatabase } from './support/db.js';
import { call, startServer, stopAllServers } from './support/processes.js';

/**
 * A server killed with SIGKILL never stops the next start on the embedded database: its lock is judged by who holds
 * it (the holder's start time), not by its pid, which a zombie not yet reaped or a new process can still answer to.
 * A live holder is still refused with the plain message of docs/product.md §8.
 */

/** A copy of the migrated template in `dataDir`: creating an embedded database from nothing costs a minute on a busy machine. */
async function migratedCopy(dataDir: string): Promise<void> {
  const made = await PGlite.create({ dataDir, loadDataDir: new Blob([readFileSync(inject('pgliteTemplate'))]) });
  await made.close();
}

const procState = (pid: number): string | null => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
  } catch {
    return null;
  }
};

// The embedded database's lock: there is none on PostgreSQL.
describe.skipIf(onPostgres())('restarting on the embedded database', { timeout: 600_000 }, () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-restart-'));
  beforeAll(() => migratedCopy(dataDir), 120_000);
  afterAll(async () => {
    await stopAllServers();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('kill -9 of the server\'s process group, then a start at once: it starts, five times over, even while the killed one is a zombie', async () => {
    for (let round = 1; round <= 5; round++) {
      const server = await startServer({ databaseUrl: '', env: { DATA_DIR: dataDir }, entry: 'start', underParentThatNeverReaps: true });
      expect((await call(server.url, '/readyz')).status).toBe(200);
      const lock = JSON.parse(readFileSync(path.join(dataDir, 'svc.lock'), 'utf8'));
      expect(lock.pid).toBe(server.pid);
      server.kill('SIGKILL');
      // Killed, and left unreaped by its parent: its pid still answers a signal.
      await expect.poll(() => procState(server.pid), { timeout: 10_000, interval: 20 }).toBe('Z');
      expect(() => process.kill(server.pid, 0)).not.toThrow();
    }
    const last = await startServer({ databaseUrl: '', env: { DATA_DIR: dataDir }, entry: 'start' });
    expect((await call(last.url, '/readyz')).status).toBe(200);
    last.kill('SIGTERM');
    expect((await last.exited).code).toBe(0);
  });

  it('a lock whose pid now belongs to another process (a pid reused) is taken over', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-reused-'));
    try {
      // Our own parent is alive, but it is not the process that wrote this lock: it started at another moment.
      writeFileSync(path.join(dir, 'svc.lock'), JSON.stringify({ pid: process.ppid, role: 'svc server', since: 'earlier', start: 'another-boot:1' }));
      const lock = acquireEmbeddedLock(dir, 'svc test');
      expect(JSON.parse(readFileSync(path.join(dir, 'svc.lock'), 'utf8'))).toMatchObject({ pid: process.pid, role: 'svc test' });
      lock.release();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a server that is alive keeps the database: a second start is refused, saying who holds it', async () => {
    const holder = await startServer({ databaseUrl: '', env: { DATA_DIR: dataDir } });
    const refused = await startServer({ databaseUrl: '', env: { DATA_DIR: dataDir } }).then(
      () => null,
      (err: Error) => err.message,
    );
    expect(refused).toContain(`svc: The embedded database in ${dataDir} is in use by svc server (pid ${holder.pid}`);
    expect(refused).toMatch(/stop that process first, or run svc on PostgreSQL/);
    expect((await call(holder.url, '/readyz')).status).toBe(200);
    holder.kill('SIGTERM');
    expect((await holder.exited).code).toBe(0);
  });
});

describe('WEBHOOKS_ALLOW_PRIVATE', { timeout: 600_000 }, () => {
  let database: TestDatabase | undefined;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-private-'));
  afterAll(async () => {
    await stopAllServers();
    await database?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('a start with it on warns, saying what it allows and that it is for development; without it, no such warning', async () => {
    database = onPostgres() ? await createTestDatabase() : undefined;
    if (!database) await migratedCopy(dataDir);
    const where = database ? { databaseUrl: database.url! } : { databaseUrl: '', env: { DATA_DIR: dataDir } };
    const warning = (l: Record<string, unknown>) => l.setting === 'WEBHOOKS_ALLOW_PRIVATE';

    const open = await startServer({ ...where, env: { ...where.env, WEBHOOKS_ALLOW_PRIVATE: 'true' } });
    const line = open.logs().find(warning);
    expect(line).toMatchObject({ level: 40 });
    expect(line!.msg).toMatch(/loopback, private, link-local or cloud metadata addresses/);
    expect(line!.msg).toMatch(/for development and tests only/);
    open.kill('SIGTERM');
    expect((await open.exited).code).toBe(0);

    const closed = await startServer({ ...where, env: { ...where.env, WEBHOOKS_ALLOW_PRIVATE: 'false' } });
    expect(closed.logs().some(warning)).toBe(false);
    closed.kill('SIGTERM');
    expect((await closed.exited).code).toBe(0);
  });
});
