import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { totalsOf, type Line } from '../../src/domain/contract.js';
import { expect } from 'vitest';
import type { Database } from '../../src/db/client.js';
import { CONTRACT_ROW, contractEvents, contracts, type ContractEventRow, type ContractRow } from '../../src/db/schema.js';
import { startTestApp, type TestApp } from './app.js';

/** Shared helpers for the behaviour tests: database state set and read directly, admin auth, envelopes. */

export const API = '/api/v1/subscription-contracts';

/** Headers for the admin JSON API: a fresh session token for the shop, signed at the test clock's now. */
export async function adminAuth(t: TestApp, domain: string): Promise<{ authorization: string }> {
  return { authorization: `Bearer ${await t.sessionToken(domain)}` };
}

/** Plain SQL on the test database (same connection pool as the app). */
export function sql<T = Record<string, unknown>>(t: TestApp, text: string, params: unknown[] = []): Promise<T[]> {
  return t.database.db.withSession((run) => run<T>(text, params));
}

/** Sets contract columns directly, bypassing the state machine (e.g. EXPIRED/FAILED, a past nextBillingDate). */
export async function setContract(t: TestApp, id: string, patch: Partial<ContractRow>): Promise<void> {
  await t.ctx.db.orm.update(contracts).set(patch).where(eq(contracts.id, id));
}

/** Inserts one contract with known values (the docs/product.md §3 example unless overridden). */
type NewContract = Omit<Partial<typeof contracts.$inferInsert>, 'lines'> & { lines?: (Omit<Line, 'id'> & { id?: string })[] };

export async function insertContract(t: TestApp, shopId: string, over: NewContract = {}): Promise<ContractRow> {
  const now = t.clock.now();
  const lines = (over.lines ?? [{ title: 'Coffee 1kg', variantId: '51', quantity: 2, price: { amount: '24.00', currencyCode: 'EUR' } }]).map((l) => ({ id: randomUUID(), ...l }));
  const billingInterval = over.billingInterval ?? 'MONTH';
  const billingIntervalCount = over.billingIntervalCount ?? 1;
  const discounts = over.discounts ?? [];
  const [row] = await t.ctx.db.orm
    .insert(contracts)
    .values({
      shopId,
      status: 'ACTIVE',
      customerId: '9001',
      customerEmail: 'ada@example.com',
      nextBillingDate: new Date('2026-12-01T00:00:00.000Z'),
      createdAt: now,
      updatedAt: now,
      deliveryInterval: billingInterval,
      deliveryIntervalCount: billingIntervalCount,
      totals: totalsOf({ lines, discounts, deliveryPrice: over.deliveryPrice ?? null }),
      ...over,
      billingInterval,
      billingIntervalCount,
      discounts,
      lines,
    })
    .returning(CONTRACT_ROW);
  return row;
}

export async function contractRow(t: TestApp, id: string): Promise<ContractRow> {
  const [row] = await t.ctx.db.orm.select(CONTRACT_ROW).from(contracts).where(eq(contracts.id, id));
  return row;
}

/** Every event of a contract straight from the table, oldest first. */
export async function eventRows(t: TestApp, id: string): Promise<ContractEventRow[]> {
  const rows = await t.ctx.db.orm.select().from(contractEvents).where(eq(contractEvents.contractId, id));
  return rows.sort((a, b) => Number(BigInt(a.id) - BigInt(b.id)));
}

type Res = { statusCode: number; headers: Record<string, unknown>; json(): any };

/** Asserts the error envelope of docs/product.md §4, with the X-Request-Id header equal to error.requestId. */
export function expectError(res: Res, status: number, code: string): { code: string; message: string; requestId: string; details?: { path: string; message: string }[] } {
  expect({ status: res.statusCode, body: res.json() }).toMatchObject({ status, body: { error: { code } } });
  const body = res.json();
  expect(Object.keys(body)).toEqual(['error']);
  const { error } = body;
  expect(typeof error.message).toBe('string');
  expect(error.message.length).toBeGreaterThan(0);
  expect(error.requestId).toMatch(/^[0-9a-f-]{36}$/);
  expect(res.headers['x-request-id']).toBe(error.requestId);
  for (const k of Object.keys(error)) expect(['code', 'message', 'requestId', 'details']).toContain(k);
  if (error.details !== undefined) {
    expect(Array.isArray(error.details)).toBe(true);
    for (const d of error.details) expect(Object.keys(d).sort()).toEqual(['message', 'path']);
  }
  return error;
}

/**
 * A second app instance on its own connection pool to the same database (PostgreSQL: a real second "instance";
 * PGlite: the same single connection), sharing the clock. Close it before the first.
 */
export async function secondInstance(t: TestApp, opts: { freeUntil?: Date | null } = {}): Promise<TestApp & { pool: Database }> {
  const pool = await t.database.connectAgain();
  const other = await startTestApp({ database: { ...t.database, db: pool }, clock: t.clock, freeUntil: opts.freeUntil });
  return Object.assign(other, { pool });
}

/** The random part R of a raw key (the 43 characters after the prefix). */
export const randomPart = (key: string) => key.slice('svc_live_'.length, 'svc_live_'.length + 43);

/** Every 8-character window of a key's random part: none of them may appear anywhere it is stored or logged. */
export function keyFragments(key: string, width = 8): string[] {
  const r = randomPart(key);
  return Array.from({ length: r.length - width + 1 }, (_, i) => r.slice(i, i + width));
}

/** Every table a request of the API or MCP could change (the request log and the keys' last use aside). */
const CHANGEABLE_TABLES = [
  'subscription_contracts',
  'contract_events',
  'webhook_endpoints',
  'webhook_deliveries',
  'webhook_attempts',
  'bulk_jobs',
  'bulk_job_items',
  'billing_attempts',
  'billing_policies',
  'idempotency_keys',
  'discount_codes',
  'catalog_variants',
];

/** A digest of each of those tables' rows: equal before and after a request that changed nothing. */
export async function tableDigests(t: TestApp): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const table of CHANGEABLE_TABLES) {
    const [{ digest }] = await sql<{ digest: string }>(t, `SELECT md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), '')) AS digest FROM ${table} x`);
    out[table] = digest;
  }
  return out;
}
