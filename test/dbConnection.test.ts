import { describe, expect, it } from 'vitest';
import { connectionOptions, openDatabase } from '../src/db/client.js';
import { onPostgres } from './support/db.js';

/**
 * svc's PostgreSQL connections plan each named (batched) statement once: left to choose, PostgreSQL re-planned them
 * at every run, and planning cost several times what running did.
 */
describe('PostgreSQL connection options', () => {
  it('ask for generic plans, then the schema, then what the URL says (which wins), and take options out of the URL', () => {
    expect(connectionOptions('postgres://u@h:5432/db')).toEqual({ url: 'postgres://u@h:5432/db', options: '-c plan_cache_mode=force_generic_plan' });
    const withOptions = connectionOptions('postgres://u@h:5432/db?options=-c%20search_path%3Dother&sslmode=disable', 'mine');
    expect(withOptions.options).toBe('-c plan_cache_mode=force_generic_plan -c search_path=mine -c search_path=other');
    expect(withOptions.url).toBe('postgres://u@h:5432/db?sslmode=disable');
    // Not a URL: passed on untouched.
    expect(connectionOptions('host=h dbname=db').url).toBe('host=h dbname=db');
  });

  it.runIf(onPostgres())('a named statement runs on one generic plan, also when the URL brings options of its own', async () => {
    const u = new URL(process.env.TEST_DATABASE_URL!);
    u.searchParams.set('options', '-c statement_timeout=5000');
    const db = await openDatabase({ kind: 'postgres', url: u.toString() });
    try {
      const [mode] = await db.prepared<{ plan_cache_mode: string }>('svc_test_plan_cache_mode', 'SHOW plan_cache_mode', []);
      const [timeout] = await db.prepared<{ statement_timeout: string }>('svc_test_statement_timeout', 'SHOW statement_timeout', []);
      expect(mode.plan_cache_mode).toBe('force_generic_plan');
      expect(timeout.statement_timeout).toBe('5s');
    } finally {
      await db.close();
    }
  });
});
