import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import type { SqlRunner } from './client.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const MIGRATIONS_DIR = path.join(HERE, 'migrations');
const FUNCTIONS_DIR = path.join(HERE, 'functions');

export type Migration = { name: string; sql: string };

const sqlFiles = (dir: string): Migration[] =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.sql'))
    .sort()
    .map((name) => ({ name, sql: readFileSync(path.join(dir, name), 'utf8') }));

export function loadMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return sqlFiles(dir);
}

/**
 * The database functions, one file each (src/db/functions): each file is a function's one current definition
 * (CREATE OR REPLACE, or a DROP before a CREATE where its signature changes), applied after the migrations whenever
 * its text differs from what the database last applied. A change of a function is an edit of its file, not a copy
 * of its whole body in a new migration.
 */
export function loadFunctions(dir = FUNCTIONS_DIR): Migration[] {
  return sqlFiles(dir);
}

const digestOf = (sql: string) => createHash('sha256').update(sql).digest('hex');

/**
 * Applies the pending migrations, each in its own transaction, then every database function whose file changed. On
 * PostgreSQL an advisory lock (scoped to the current schema) makes concurrent starts of several instances apply each
 * exactly once. Returns the names applied now.
 */
export async function migrate(
  db: SqlRunner,
  migrations = loadMigrations(),
  opts: { onApply?: (name: string, index: number, pending: number) => void; functions?: Migration[] } = {},
): Promise<string[]> {
  const functions = opts.functions ?? loadFunctions();
  return db.withSession(async (run) => {
    await run(`SELECT pg_advisory_lock(hashtext(current_schema() || ':svc_migrations'))`);
    try {
      await run(`CREATE TABLE IF NOT EXISTS svc_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
      await run(`CREATE TABLE IF NOT EXISTS svc_functions (name text PRIMARY KEY, digest text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
      const done = new Set((await run<{ name: string }>(`SELECT name FROM svc_migrations`)).map((r) => r.name));
      const applied: string[] = [];
      const pending = migrations.filter((m) => !done.has(m.name));
      const inTransaction = async (name: string, sql: string, record: { text: string; params: unknown[] }) => {
        await run('BEGIN');
        try {
          await run(sql, [], { multi: true });
          await run(record.text, record.params);
          await run('COMMIT');
        } catch (err) {
          await run('ROLLBACK');
          throw new Error(`${name} failed: ${(err as Error).message}`);
        }
        applied.push(name);
      };
      for (const m of pending) {
        opts.onApply?.(m.name, applied.length, pending.length);
        await inTransaction(`migration ${m.name}`, m.sql, { text: `INSERT INTO svc_migrations (name) VALUES ($1)`, params: [m.name] });
      }
      const current = new Map((await run<{ name: string; digest: string }>(`SELECT name, digest FROM svc_functions`)).map((r) => [r.name, r.digest]));
      for (const f of functions) {
        const digest = digestOf(f.sql);
        if (current.get(f.name) === digest) continue;
        await inTransaction(`function ${f.name}`, f.sql, {
          text: `INSERT INTO svc_functions (name, digest) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET digest = excluded.digest, applied_at = now()`,
          params: [f.name, digest],
        });
      }
      return applied;
    } finally {
      await run(`SELECT pg_advisory_unlock(hashtext(current_schema() || ':svc_migrations'))`);
    }
  });
}
