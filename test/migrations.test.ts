import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../src/db/client.js';
import { contractTexts } from '../src/db/contractRows.js';
import { loadMigrations, migrate } from '../src/db/migrate.js';
import { contractJsonOf, parseJsonParts, toContract } from '../src/domain/resources.js';
import { createTestDatabase, type TestDatabase } from './support/db.js';

/*
 * Migrations that move data, run over rows written before them (a database migrated up to the one before, filled
 * the way that version wrote, then migrated to the end).
 */

let database: TestDatabase;
let db: Database;

beforeAll(async () => {
  database = await createTestDatabase({ migrated: false });
  db = database.db;
});
afterAll(() => database.drop());

const before = (name: string) => loadMigrations().filter((m) => m.name < name);

describe('0021: the contract parts become json, kept compact', () => {
  it('rewrites what jsonb held as compact text with the same values, and a GET of such a contract is the text JSON.stringify writes', async () => {
    await migrate(db, before('0021'));
    const lines = [{ id: 'a1', title: 'Café "Noir", 1kg: dark', variantId: '51', quantity: 2, price: { amount: '24.00', currencyCode: 'EUR' } }];
    const address = { firstName: 'Ann', lastName: "O'Hara", address1: '1 rue de la Paix, 2e', city: 'Paris', zip: '75002', countryCode: 'FR', address2: null };
    const discounts = [{ id: 'd1', code: 'TEN', type: 'percentage', value: '12.5', title: 'a\tb\nc' }];
    const totals = { subtotal: '48.00', discounts: '6.00', shipping: '4.90', total: '46.90', currencyCode: 'EUR' };
    const [row] = await db.withSession(async (run) => {
      const [shop] = await run<{ id: string }>(`INSERT INTO shops (domain, plan) VALUES ('m.myshopify.com', 'enterprise') RETURNING id::text`);
      return run<{ id: string; shopId: string; spaced: string }>(
        `INSERT INTO subscription_contracts (shop_id, status, customer_id, customer_email, billing_interval, billing_interval_count,
           delivery_interval, delivery_interval_count, next_billing_date, lines, shipping_address, delivery_price, discounts, totals,
           created_at, updated_at)
         VALUES ($1, 'ACTIVE', '7', 'ann@example.com', 'MONTH', 1, 'MONTH', 1, '2027-01-01T00:00:00Z', $2::jsonb, $3::jsonb, $4::jsonb, $5::jsonb, $6::jsonb,
           '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')
         RETURNING id::text AS id, shop_id::text AS "shopId", lines::text AS spaced`,
        [shop.id, JSON.stringify(lines), JSON.stringify(address), JSON.stringify({ amount: '4.90', currencyCode: 'EUR' }), JSON.stringify(discounts), JSON.stringify(totals)],
      );
    });
    expect(row.spaced).toContain('": '); // jsonb wrote its text spaced

    await migrate(db);

    const [types] = await db.withSession((run) =>
      run<{ lines: string; totals: string; attempt: string }>(
        `SELECT pg_typeof(lines)::text AS lines, pg_typeof(totals)::text AS totals, pg_typeof(billing_last_attempt)::text AS attempt
           FROM subscription_contracts WHERE id = $1`,
        [row.id],
      ),
    );
    expect(types).toEqual({ lines: 'json', totals: 'json', attempt: 'jsonb' });
    const text = await contractTexts(db).ofShop.load({ shopId: row.shopId, contractId: row.id });
    for (const [part, value] of [['lines', lines], ['shippingAddress', address], ['discounts', discounts], ['totals', totals]] as const) {
      const stored = text![part]!;
      expect(JSON.parse(stored)).toEqual(value);
      expect(stored).toBe(JSON.stringify(JSON.parse(stored))); // compact, whatever order jsonb kept the keys in
    }
    expect(contractJsonOf(text!)).toBe(JSON.stringify(toContract(parseJsonParts(text!))));
    // A new contract takes its default discounts as json too.
    const [fresh] = await db.withSession((run) =>
      run<{ discounts: string }>(
        `INSERT INTO subscription_contracts (shop_id, status, customer_id, customer_email, billing_interval, billing_interval_count,
           delivery_interval, delivery_interval_count, next_billing_date, lines, totals, created_at, updated_at)
         VALUES ($1, 'ACTIVE', '8', 'b@example.com', 'MONTH', 1, 'MONTH', 1, now(), '[]', $2, now(), now())
         RETURNING discounts::text AS discounts`,
        [row.shopId, JSON.stringify(totals)],
      ),
    );
    expect(fresh.discounts).toBe('[]');
  });
});

describe('0035: every key\'s permissions written out', () => {
  it('keys made before get their preset\'s permissions; access may then say custom', async () => {
    const fresh = await createTestDatabase({ migrated: false });
    try {
      await migrate(fresh.db, before('0035'));
      const keys = await fresh.db.withSession(async (run) => {
        const [shop] = await run<{ id: string }>(`INSERT INTO shops (domain, plan) VALUES ('k.myshopify.com', 'enterprise') RETURNING id::text`);
        const insert = (digest: string, access: string) =>
          run<{ id: string }>(`INSERT INTO api_keys (shop_id, digest, access, created_at) VALUES ($1, $2, $3, now()) RETURNING id::text`, [shop.id, digest, access]);
        return { rw: (await insert('a'.repeat(64), 'read_write'))[0].id, ro: (await insert('b'.repeat(64), 'read_only'))[0].id, shopId: shop.id };
      });
      await migrate(fresh.db);
      const rows = await fresh.db.withSession((run) => run<{ id: string; access: string; permissions: unknown }>(`SELECT id::text, access, permissions FROM api_keys`));
      const byId = Object.fromEntries(rows.map((r) => [r.id, r]));
      expect(byId[keys.rw]).toMatchObject({ access: 'read_write', permissions: { contracts: 'write', billing: 'write', webhooks: 'write', bulk_jobs: 'write' } });
      expect(byId[keys.ro]).toMatchObject({ access: 'read_only', permissions: { contracts: 'read', billing: 'read', webhooks: 'read', bulk_jobs: 'read' } });
      await fresh.db.withSession((run) => run(`UPDATE api_keys SET access = 'custom' WHERE id = $1`, [keys.rw]));
      await expect(fresh.db.withSession((run) => run(`UPDATE api_keys SET access = 'admin' WHERE id = $1`, [keys.rw]))).rejects.toThrow();
    } finally {
      await fresh.drop();
    }
  });
});
