import { sql } from 'drizzle-orm';
import {
  customType,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';

/**
 * Ids are PostgreSQL bigints but travel through the app as decimal strings: the API speaks strings, and a JS number
 * cannot hold every int8. Both drivers accept a decimal string as an int8 parameter.
 */
const bigintId = customType<{ data: string; driverData: string | number | bigint }>({
  dataType: () => 'bigint',
  fromDriver: (value) => String(value),
  toDriver: (value) => value,
});

/** Marks a column the database fills (identity): drizzle then inserts DEFAULT for it. */
const filledByDatabase = sql`identity`;

const ts = (name: string) => timestamp(name, { withTimezone: true, precision: 3, mode: 'date' });

export type LineItem = {
  title: string;
  variantId: string;
  quantity: number;
  price: { amount: string; currencyCode: string };
};

export const shops = pgTable('shops', {
  id: bigintId('id').primaryKey().default(filledByDatabase),
  domain: text('domain').notNull().unique(),
  plan: text('plan').notNull().default('basic'),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});

export const apiKeys = pgTable(
  'api_keys',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    shopId: bigintId('shop_id')
      .notNull()
      .references(() => shops.id),
    name: text('name'),
    // SHA-256 (hex) of the whole raw key: the only form of the key that is ever stored.
    digest: text('digest').notNull(),
    createdAt: ts('created_at').notNull(),
    lastUsedAt: ts('last_used_at'),
    revokedAt: ts('revoked_at'),
  },
  (t) => [uniqueIndex('api_keys_digest_key').on(t.digest), index('api_keys_shop_idx').on(t.shopId, t.createdAt)],
);

export const contracts = pgTable(
  'subscription_contracts',
  {
    id: bigintId('id').primaryKey().default(filledByDatabase),
    shopId: bigintId('shop_id')
      .notNull()
      .references(() => shops.id),
    status: text('status').notNull(),
    customerId: text('customer_id').notNull(),
    customerEmail: text('customer_email').notNull(),
    billingInterval: text('billing_interval').notNull(),
    billingIntervalCount: integer('billing_interval_count').notNull(),
    nextBillingDate: ts('next_billing_date').notNull(),
    lines: jsonb('lines').$type<LineItem[]>().notNull(),
    pausedAt: ts('paused_at'),
    resumeAt: ts('resume_at'),
    cancelledAt: ts('cancelled_at'),
    cancellationReason: text('cancellation_reason'),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
    // Bumped by every state change; optimistic writes check it (migration 0003).
    version: integer('version').notNull().default(0),
  },
  (t) => [
    index('contracts_shop_id_idx').on(t.shopId, t.id),
    index('contracts_shop_status_idx').on(t.shopId, t.status, t.id),
    // The resume sweep reads only paused contracts with a resume date: a small partial index.
    index('contracts_due_resume_idx').on(t.resumeAt).where(sql`status = 'PAUSED' and resume_at is not null`),
  ],
);

export const contractEvents = pgTable(
  'contract_events',
  {
    id: bigintId('id').primaryKey().default(filledByDatabase),
    contractId: bigintId('contract_id')
      .notNull()
      .references(() => contracts.id),
    shopId: bigintId('shop_id').notNull(),
    type: text('type').notNull(),
    at: ts('at').notNull(),
    actorType: text('actor_type').notNull(),
    actorKeyFingerprint: text('actor_key_fingerprint'),
    fromStatus: text('from_status').notNull(),
    toStatus: text('to_status').notNull(),
    data: jsonb('data').$type<Record<string, unknown>>().notNull(),
  },
  (t) => [index('contract_events_contract_idx').on(t.contractId, t.id)],
);

/** Settings the service generates for itself on first start (the app secret when none is configured). */
export const appSettings = pgTable('app_settings', {
  name: text('name').primaryKey(),
  value: text('value').notNull(),
});

export const schema = { shops, apiKeys, contracts, contractEvents, appSettings };
export type ShopRow = typeof shops.$inferSelect;
export type ApiKeyRow = typeof apiKeys.$inferSelect;
export type ContractRow = typeof contracts.$inferSelect;
export type ContractEventRow = typeof contractEvents.$inferSelect;

/**
 * Idempotency keys of the public API (migration 0002). Not part of `schema` above: only the query builder uses it.
 * The key itself is stored as its SHA-256 digest; see src/services/idempotencyKeys.ts for the rules.
 */
export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    shopId: bigintId('shop_id')
      .notNull()
      .references(() => shops.id),
    keyDigest: text('key_digest').notNull(),
    requestHash: text('request_hash').notNull(),
    state: text('state').$type<'in_progress' | 'completed'>().notNull(),
    ownerRequestId: text('owner_request_id').notNull(),
    statusCode: integer('status_code'),
    responseBody: text('response_body'),
    lockedAt: ts('locked_at').notNull(),
    createdAt: ts('created_at').notNull(),
    expiresAt: ts('expires_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.shopId, t.keyDigest] }), index('idempotency_keys_expires_idx').on(t.expiresAt)],
);
export type IdempotencyKeyRow = typeof idempotencyKeys.$inferSelect;
