import { expect, vi } from 'vitest';
import type { RequestLogRecord } from '../../src/domain/requestLog.js';
import type { TestApp } from './app.js';
import { adminAuth, sql } from './fixtures.js';

/** Request log helpers: wait until requests are recorded and written, read the log as the admin does. */

/** Entries the app's request log has taken so far (written or not). */
export const recorded = (t: TestApp): number => t.app.requestLog!.stats.recorded;

/**
 * Waits until the app has recorded `count` entries in all (a request's entry is taken in its onResponse hook, which
 * may run after the client has its answer), then writes them.
 */
export async function written(t: TestApp, count: number): Promise<void> {
  await vi.waitFor(() => expect(recorded(t)).toBeGreaterThanOrEqual(count), { timeout: 10_000, interval: 5 });
  await t.app.requestLog!.flush();
}

/** GET /admin/api/request-log for the shop, with `query` as given: the response. */
export async function readLog(t: TestApp, domain: string, query: Record<string, string | number> = {}) {
  const qs = new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)])).toString();
  return t.inject({ url: `/admin/api/request-log${qs ? `?${qs}` : ''}`, headers: await adminAuth(t, domain) });
}

/** The requests of the shop's log (newest first) for `query`, asserting a 200. */
export async function logRows(t: TestApp, domain: string, query: Record<string, string | number> = {}): Promise<RequestLogRecord[]> {
  const res = await readLog(t, domain, query);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().requests;
}

/** The id of the shop's (only) key. */
export async function keyIdOf(t: TestApp, shopId: string): Promise<string> {
  const rows = await sql<{ id: string }>(t, 'SELECT id::text AS id FROM api_keys WHERE shop_id = $1 ORDER BY created_at', [shopId]);
  return rows[0].id;
}
