import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import type { SqlRunner } from './client.js';

const MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');

export type Migration = { name: string; sql: string };

export function loadMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.sql'))
    .sort()
    .map((name) => ({ name, sql: readFileSync(path.join(dir, name), 'utf8') }));
}

/**
 * Applies the pending migrations, each in its own transaction. On PostgreSQL an advisory lock (scoped to the
 * current schema) makes concurrent starts of several instances apply each migration exactly once.
 * Returns the names applied now.
 */
export async function migrate(
  db: SqlRunner,
  migrations = loadMigrations(),
  opts: { onApply?: (name: string, index: number, pending: number) => void } = {},
): Promise<string[]> {
  return db.withSession(async (run) => {
    await run(`SELECT pg_advisory_lock(hashtext(current_schema() || ':svc_migrations'))`);
    try {
      await run(
        `CREATE TABLE IF NOT EXISTS svc_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
      const done = new Set((await run<{ name: string }>(`SELECT name FROM svc_migrations`)).map((r) => r.name));
      const applied: string[] = [];
      const pending = migrations.filter((m) => !done.has(m.name));
      for (const m of pending) {
        opts.onApply?.(m.name, applied.length, pending.length);
        await run('BEGIN');
        try {
          await run(m.sql, [], { multi: true });
          await run(`INSERT INTO svc_migrations (name) VALUES ($1)`, [m.name]);
          await run('COMMIT');
        } catch (err) {
          await run('ROLLBACK');
          throw new Error(`migration ${m.name} failed: ${(err as Error).message}`);
        }
        applied.push(m.name);
      }
      return applied;
    } finally {
      await run(`SELECT pg_advisory_unlock(hashtext(current_schema() || ':svc_migrations'))`);
    }
  });
}
