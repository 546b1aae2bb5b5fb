import { getTableColumns, sql } from 'drizzle-orm';
import type { AttemptState, AttemptStatus, AttemptTrigger, BillingOrder, BillingPolicy } from '../domain/billing.js';
import type { BillingStatus, ContractStatus, Discount, Line, ShippingAddress, Totals } from '../domain/contract.js';
import type { Money } from '../domain/money.js';
import type { Interval } from '../domain/time.js';
import type { BulkJobStatus, ItemStatus } from '../domain/bulkJobs.js';
import {
  bigint,
  boolean,
  customType,
  index,
  integer,
  json,
  jsonb,
  pgTable,
  primaryKey,
  smallint,
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

/** numeric(20,0) carried as a decimal string (the platform's UnsignedInt64 revision). */
const numericText = customType<{ data: string; driverData: string | number }>({
  dataType: () => 'numeric(20, 0)',
  fromDriver: (value) => String(value),
  toDriver: (value) => value,
});

/** numeric with the scale it was given, carried as a decimal string (amounts). */
const decimalText = customType<{ data: string; driverData: string | number }>({
  dataType: () => 'numeric',
  fromDriver: (value) => String(value),
  toDriver: (value) => value,
});

/** bytea (a digest), read and written as a Buffer. */
const bytea = customType<{ data: Buffer; driverData: Buffer | Uint8Array }>({
  dataType: () => 'bytea',
  fromDriver: (value) => Buffer.from(value),
  toDriver: (value) => value,
});

/** Marks a column the database fills (identity): drizzle then inserts DEFAULT for it. */
const filledByDatabase = sql`identity`;

const ts = (name: string) => timestamp(name, { withTimezone: true, precision: 3, mode: 'date' });

/** A contract line as stored (domain/contract.ts Line). */
export type LineItem = Line;

export const shops = pgTable('shops', {
  id: bigintId('id').primaryKey().default(filledByDatabase),
  domain: text('domain').notNull().unique(),
  plan: text('plan').notNull().default('basic'),
  // Platform mode: the shop uninstalled the app (migration 0006); its keys answer 403 app_not_installed.
  uninstalledAt: ts('uninstalled_at'),
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
    // The preset the key's permissions equal, or custom (migrations 0004, 0035); written with them.
    access: text('access').$type<'read_write' | 'read_only' | 'custom'>().notNull().default('read_write'),
    // Migration 0030: the key's permissions per resource (domain/permissions.ts); null: the preset `access` names
    // (keys made before 0035; every key since has them written).
    permissions: jsonb('permissions').$type<Record<string, string>>(),
    createdAt: ts('created_at').notNull(),
    lastUsedAt: ts('last_used_at'),
    revokedAt: ts('revoked_at'),
    // Migration 0013: why it was revoked (by hand, or reported leaked by a secret scanner), and for a leaked key
    // when it was reported and where it was found.
    revokedReason: text('revoked_reason').$type<'revoked' | 'leaked'>(),
    leakedAt: ts('leaked_at'),
    leakedUrl: text('leaked_url'),
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
    status: text('status').$type<ContractStatus>().notNull(),
    customerId: text('customer_id').notNull(),
    customerEmail: text('customer_email').notNull(),
    billingInterval: text('billing_interval').$type<Interval>().notNull(),
    billingIntervalCount: integer('billing_interval_count').notNull(),
    // The whole contract (migration 0011): the delivery policy, what is delivered where, discounts, totals.
    deliveryInterval: text('delivery_interval').$type<Interval>().notNull(),
    deliveryIntervalCount: integer('delivery_interval_count').notNull(),
    nextBillingDate: ts('next_billing_date').notNull(),
    lines: json('lines').$type<Line[]>().notNull(),
    shippingAddress: json('shipping_address').$type<ShippingAddress | null>(),
    deliveryPrice: json('delivery_price').$type<Money | null>(),
    discounts: json('discounts').$type<Discount[]>().notNull().default([]),
    // Written with every change of what they are made of: domain/contract.ts totalsOf.
    totals: json('totals').$type<Totals>().notNull(),
    pausedAt: ts('paused_at'),
    resumeAt: ts('resume_at'),
    cancelledAt: ts('cancelled_at'),
    cancellationReason: text('cancellation_reason'),
    createdAt: ts('created_at').notNull(),
    updatedAt: ts('updated_at').notNull(),
    // Bumped by every state change; optimistic writes check it (migration 0003).
    version: integer('version').notNull().default(0),
    // Platform mode (migration 0006): the platform's revisionId (UnsignedInt64, as a decimal string) and updatedAt
    // of the state the mirror holds; a re-read is applied only when newer.
    platformRevision: numericText('platform_revision'),
    platformUpdatedAt: ts('platform_updated_at'),
    // Platform mode (migration 0007): a change being carried out on the platform holds the contract until it
    // commits, instead of a row lock held across the call (db/contractLeases.ts).
    callLease: uuid('call_lease'),
    callLeaseUntil: ts('call_lease_until'),
    // Renewals (migration 0015): where the billing of the current cycle stands, part of the contract's state.
    billingStatus: text('billing_status').$type<BillingStatus>().notNull().default('ok'),
    billingFailedAttempts: integer('billing_failed_attempts').notNull().default(0),
    billingNextAttemptAt: ts('billing_next_attempt_at'),
    billingCycleDate: ts('billing_cycle_date'),
    billingLastAttempt: jsonb('billing_last_attempt').$type<AttemptState | null>(),
    // Renewals (migration 0015), outside the contract's state, written by their own statements and never by the
    // change path: the test gateway's simulated payment method (standalone mode), a billing worker's claim, and when
    // the contract is next due, generated by the database from the state (domain/commands/billingSteps.ts
    // billingDueAt says the same).
    paymentBehaviour: text('payment_behaviour').$type<PaymentBehaviour>().notNull().default('succeeds'),
    billingClaimedUntil: ts('billing_claimed_until'),
    billingClaimedVersion: integer('billing_claimed_version'),
    billingDueAt: ts('billing_due_at').generatedAlwaysAs(
      sql`CASE WHEN status = 'ACTIVE' AND (billing_last_attempt ->> 'status') IS DISTINCT FROM 'pending' THEN coalesce(billing_next_attempt_at, next_billing_date) END`,
    ),
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
    // Migration 0030: the actor's own id where it has one (a bulk job's).
    actorId: text('actor_id'),
    fromStatus: text('from_status').notNull(),
    toStatus: text('to_status').notNull(),
    data: jsonb('data').$type<Record<string, unknown>>().notNull(),
    // The contract's version right after this event (migration 0005; null for older events).
    contractVersion: integer('contract_version'),
  },
  (t) => [index('contract_events_contract_idx').on(t.contractId, t.id)],
);

/** Settings the service generates for itself on first start (the app secret when none is configured). */
export const appSettings = pgTable('app_settings', {
  name: text('name').primaryKey(),
  value: text('value').notNull(),
});

export const schema = { shops, apiKeys, contracts, contractEvents, appSettings };

/** How the test gateway answers a contract's renewals (standalone mode). */
export const PAYMENT_BEHAVIOURS = ['succeeds', 'insufficient_funds', 'card_declined', 'expired_card', 'requires_action', 'out_of_stock'] as const;
export type PaymentBehaviour = (typeof PAYMENT_BEHAVIOURS)[number];

/** Every billing attempt (migration 0015), one per (contract, cycle, attempt number). */
export const billingAttempts = pgTable('billing_attempts', {
  id: uuid('id').primaryKey(),
  shopId: bigintId('shop_id').notNull(),
  contractId: bigintId('contract_id').notNull(),
  cycleDate: ts('cycle_date').notNull(),
  attempt: integer('attempt').notNull(),
  trigger: text('trigger').$type<AttemptTrigger>().notNull(),
  status: text('status').$type<AttemptStatus>().notNull(),
  errorCode: text('error_code'),
  platformErrorCode: text('platform_error_code'),
  errorMessage: text('error_message'),
  nextActionUrl: text('next_action_url'),
  order: jsonb('order').$type<BillingOrder | null>(),
  amount: decimalText('amount').notNull(),
  currencyCode: text('currency_code').notNull(),
  idempotencyKey: text('idempotency_key').notNull(),
  platformReference: text('platform_reference'),
  submittedAt: ts('submitted_at'),
  createdAt: ts('created_at').notNull(),
  completedAt: ts('completed_at'),
});
export type BillingAttemptRow = typeof billingAttempts.$inferSelect;

/** A shop's dunning policy (migration 0015); no row: the default. */
export const billingPolicies = pgTable('billing_policies', {
  shopId: bigintId('shop_id').primaryKey(),
  policy: jsonb('policy').$type<BillingPolicy>().notNull(),
  updatedAt: ts('updated_at').notNull(),
});

/** Standalone mode (migration 0015): the last order number the test gateway gave in a shop. */
export const shopOrderCounters = pgTable('shop_order_counters', {
  shopId: bigintId('shop_id').primaryKey(),
  // bigint in the database; a shop's order numbers stay far inside a JS number.
  lastNumber: bigint('last_number', { mode: 'number' }).notNull(),
});
export type ShopRow = typeof shops.$inferSelect;
export type ApiKeyRow = typeof apiKeys.$inferSelect;
/**
 * A contract as svc reads it: its state and metadata. The renewals' own columns are not part of it; a query builder
 * read selects CONTRACT_ROW (`select(CONTRACT_ROW)`, `returning(CONTRACT_ROW)`).
 */
const { paymentBehaviour: _pb, billingClaimedUntil: _bcu, billingClaimedVersion: _bcv, billingDueAt: _bda, ...contractRowColumns } = getTableColumns(contracts);
export const CONTRACT_ROW = contractRowColumns;
export type ContractRow = Omit<typeof contracts.$inferSelect, 'paymentBehaviour' | 'billingClaimedUntil' | 'billingClaimedVersion' | 'billingDueAt'>;
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
    // The result a contract change recorded with itself (migration 0004); a replay renders the response from it.
    result: json('result'),
    lockedAt: ts('locked_at').notNull(),
    createdAt: ts('created_at').notNull(),
    expiresAt: ts('expires_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.shopId, t.keyDigest] }), index('idempotency_keys_expires_idx').on(t.expiresAt)],
);
export type IdempotencyKeyRow = typeof idempotencyKeys.$inferSelect;

/** Outgoing webhooks (migration 0005): endpoints, the outbox of deliveries, and every attempt. */
export const webhookEndpoints = pgTable('webhook_endpoints', {
  id: uuid('id').primaryKey().defaultRandom(),
  shopId: bigintId('shop_id')
    .notNull()
    .references(() => shops.id),
  url: text('url').notNull(),
  description: text('description'),
  events: text('events').array().notNull(),
  status: text('status').$type<'enabled' | 'disabled'>().notNull(),
  disabledReason: text('disabled_reason').$type<'manual' | 'gone' | 'failing'>(),
  disabledAt: ts('disabled_at'),
  secret: text('secret').notNull(),
  previousSecret: text('previous_secret'),
  previousSecretExpiresAt: ts('previous_secret_expires_at'),
  failingSince: ts('failing_since'),
  createdAt: ts('created_at').notNull(),
  updatedAt: ts('updated_at').notNull(),
});
export type WebhookEndpointRow = typeof webhookEndpoints.$inferSelect;

export const webhookDeliveries = pgTable('webhook_deliveries', {
  id: bigintId('id').primaryKey().default(filledByDatabase),
  endpointId: uuid('endpoint_id').notNull(),
  shopId: bigintId('shop_id').notNull(),
  contractId: bigintId('contract_id'),
  eventId: bigintId('event_id'),
  contractVersion: integer('contract_version'),
  type: text('type').notNull(),
  contract: json('contract').notNull(),
  test: boolean('test').notNull().default(false),
  status: text('status').$type<'pending' | 'delivering' | 'succeeded' | 'failed'>().notNull().default('pending'),
  attempts: integer('attempts').notNull().default(0),
  nextAttemptAt: ts('next_attempt_at').notNull(),
  leaseUntil: ts('lease_until'),
  lastStatusCode: integer('last_status_code'),
  lastError: text('last_error'),
  createdAt: ts('created_at').notNull(),
  finishedAt: ts('finished_at'),
});
export type WebhookDeliveryRow = typeof webhookDeliveries.$inferSelect;

export const webhookAttempts = pgTable('webhook_attempts', {
  id: bigintId('id').primaryKey().default(filledByDatabase),
  deliveryId: bigintId('delivery_id').notNull(),
  at: ts('at').notNull(),
  statusCode: integer('status_code'),
  durationMs: integer('duration_ms').notNull(),
  error: text('error'),
  responseBody: text('response_body'),
});
export type WebhookAttemptRow = typeof webhookAttempts.$inferSelect;

/** Platform mode (migration 0006): a shop's installation, its tokens (encrypted), import progress, sync watermark. */
export const platformInstallations = pgTable('platform_installations', {
  shopId: bigintId('shop_id')
    .primaryKey()
    .references(() => shops.id),
  accessToken: text('access_token'),
  accessTokenExpiresAt: ts('access_token_expires_at'),
  refreshToken: text('refresh_token'),
  refreshTokenExpiresAt: ts('refresh_token_expires_at'),
  scopes: text('scopes'),
  installedAt: ts('installed_at').notNull(),
  webhooksRegisteredAt: ts('webhooks_registered_at'),
  importStatus: text('import_status').$type<'pending' | 'running' | 'completed' | 'failed'>().notNull().default('pending'),
  importMode: text('import_mode').$type<'paged' | 'bulk'>(),
  importTotal: integer('import_total'),
  importDone: integer('import_done').notNull().default(0),
  importCursor: text('import_cursor'),
  importBulkOperationId: text('import_bulk_operation_id'),
  importStartedAt: ts('import_started_at'),
  importFinishedAt: ts('import_finished_at'),
  importError: text('import_error'),
  syncedUntil: ts('synced_until'),
  lastSyncAt: ts('last_sync_at'),
  updatedAt: ts('updated_at').notNull(),
  /** Migration 0016: when the platform last refused the shop's access token and its refresh (an uninstall). */
  accessRefusedAt: ts('access_refused_at'),
  /** Migration 0055: a token refresh in progress holds the shop's refresh until then (platform/shopify/tokens.ts). */
  refreshLease: uuid('refresh_lease'),
  refreshLeaseUntil: ts('refresh_lease_until'),
});
export type PlatformInstallationRow = typeof platformInstallations.$inferSelect;

export const platformWebhooks = pgTable('platform_webhooks', {
  webhookId: text('webhook_id').primaryKey(),
  shopDomain: text('shop_domain').notNull(),
  topic: text('topic').notNull(),
  payload: jsonb('payload').$type<Record<string, unknown>>().notNull(),
  receivedAt: ts('received_at').notNull(),
  triggeredAt: ts('triggered_at'),
  attempts: integer('attempts').notNull().default(0),
  leaseUntil: ts('lease_until'),
  processedAt: ts('processed_at'),
  lastError: text('last_error'),
  /** Migration 0016: sha256 of (topic, shop, raw body), unique: a signed body sent again is a duplicate. */
  bodyDigest: bytea('body_digest'),
});
export type PlatformWebhookRow = typeof platformWebhooks.$inferSelect;

export const complianceRequests = pgTable('compliance_requests', {
  id: bigintId('id').primaryKey().default(filledByDatabase),
  shopDomain: text('shop_domain').notNull(),
  topic: text('topic').notNull(),
  customerId: text('customer_id'),
  payload: jsonb('payload').$type<Record<string, unknown>>().notNull(),
  receivedAt: ts('received_at').notNull(),
});

/** Standalone mode (migration 0011): the shop's own catalog of variants (titles and prices for edits). */
export const catalogVariants = pgTable(
  'catalog_variants',
  {
    shopId: bigintId('shop_id')
      .notNull()
      .references(() => shops.id),
    id: bigintId('id').notNull(),
    title: text('title').notNull(),
    price: text('price').notNull(),
    currencyCode: text('currency_code').notNull(),
  },
  (t) => [primaryKey({ columns: [t.shopId, t.id] })],
);

/** Standalone mode (migration 0011): the shop's discount codes, a percentage or a fixed amount off each order. */
export const discountCodes = pgTable('discount_codes', {
  shopId: bigintId('shop_id')
    .notNull()
    .references(() => shops.id),
  code: text('code').notNull(),
  title: text('title').notNull(),
  percentage: customType<{ data: string; driverData: string | number }>({ dataType: () => 'numeric(5, 2)', fromDriver: (v) => String(v), toDriver: (v) => v })('percentage'),
  amount: text('amount'),
  currencyCode: text('currency_code'),
  createdAt: ts('created_at').notNull(),
});

/** The request log (migration 0012): one row per request of an identified key, written in batches (requestLogWriter.ts). */
export const requestLog = pgTable('request_log', {
  id: bigintId('id').notNull().default(filledByDatabase),
  shopId: bigintId('shop_id').notNull(),
  // An API key's request: the key; an OAuth request (migration 0060): the grant, and no key.
  keyId: uuid('key_id'),
  at: ts('at').notNull(),
  keyFingerprint: text('key_fingerprint'),
  method: text('method').notNull(),
  path: text('path').notNull(),
  mcpTool: text('mcp_tool'),
  status: smallint('status').notNull(),
  // A refused MCP tool call: the status its refusal has on the API (the exchange itself answered 200).
  mcpStatus: smallint('mcp_status'),
  errorCode: text('error_code'),
  durationUs: integer('duration_us').notNull(),
  requestId: text('request_id').notNull(),
  idempotencyKey: text('idempotency_key'),
  ip: text('ip'),
  userAgent: text('user_agent'),
  grantId: uuid('grant_id'),
});

/** OAuth clients (migration 0060): registered (RFC 7591) or known by their metadata document's URL. No shop's. */
export const oauthClients = pgTable('oauth_clients', {
  id: text('id').primaryKey(),
  kind: text('kind').$type<'registered' | 'metadata_document'>().notNull(),
  name: text('name').notNull(),
  redirectUris: text('redirect_uris').array().notNull(),
  metadata: jsonb('metadata').$type<Record<string, unknown>>().notNull(),
  createdAt: ts('created_at').notNull(),
  fetchedAt: ts('fetched_at'),
});

/** OAuth grants (migration 0060): one merchant's approval of one client, with the permissions approved. */
export const oauthGrants = pgTable(
  'oauth_grants',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    shopId: bigintId('shop_id')
      .notNull()
      .references(() => shops.id),
    clientId: text('client_id').notNull(),
    clientName: text('client_name').notNull(),
    redirectUri: text('redirect_uri').notNull(),
    resource: text('resource').notNull(),
    permissions: jsonb('permissions').$type<Record<string, string>>().notNull(),
    createdAt: ts('created_at').notNull(),
    connectedAt: ts('connected_at'),
    lastUsedAt: ts('last_used_at'),
    revokedAt: ts('revoked_at'),
    revokedReason: text('revoked_reason').$type<'disconnected' | 'code_replayed' | 'refresh_reused'>(),
  },
  (t) => [index('oauth_grants_shop_idx').on(t.shopId, t.createdAt)],
);

/** Authorization codes (migration 0060), by digest: single use, 10 minutes. */
export const oauthCodes = pgTable(
  'oauth_codes',
  {
    digest: text('digest').primaryKey(),
    grantId: uuid('grant_id')
      .notNull()
      .references(() => oauthGrants.id, { onDelete: 'cascade' }),
    shopId: bigintId('shop_id').notNull(),
    codeChallenge: text('code_challenge').notNull(),
    expiresAt: ts('expires_at').notNull(),
    usedAt: ts('used_at'),
  },
  (t) => [index('oauth_codes_grant_idx').on(t.grantId)],
);

/** Access and refresh tokens (migration 0060), by digest. */
export const oauthTokens = pgTable(
  'oauth_tokens',
  {
    digest: text('digest').primaryKey(),
    grantId: uuid('grant_id')
      .notNull()
      .references(() => oauthGrants.id, { onDelete: 'cascade' }),
    shopId: bigintId('shop_id').notNull(),
    kind: text('kind').$type<'access' | 'refresh'>().notNull(),
    createdAt: ts('created_at').notNull(),
    expiresAt: ts('expires_at').notNull(),
    usedAt: ts('used_at'),
  },
  (t) => [index('oauth_tokens_grant_idx').on(t.grantId)],
);

/** Bulk jobs (migration 0032): one change across many contracts of a shop (db/bulkJobRows.ts). */
export const bulkJobs = pgTable('bulk_jobs', {
  id: uuid('id').primaryKey().defaultRandom(),
  shopId: bigintId('shop_id')
    .notNull()
    .references(() => shops.id),
  seq: bigintId('seq').notNull().default(filledByDatabase),
  status: text('status').$type<BulkJobStatus>().notNull(),
  preview: boolean('preview').notNull(),
  selector: jsonb('selector').notNull(),
  change: jsonb('change').notNull(),
  createdBy: jsonb('created_by').notNull(),
  matched: integer('matched').notNull(),
  finalCounts: jsonb('final_counts'),
  finalTotals: jsonb('final_totals'),
  failure: text('failure'),
  createdAt: ts('created_at').notNull(),
  startedAt: ts('started_at'),
  finishedAt: ts('finished_at'),
  expiresAt: ts('expires_at'),
});

export const bulkJobItems = pgTable(
  'bulk_job_items',
  {
    jobId: uuid('job_id')
      .notNull()
      .references(() => bulkJobs.id, { onDelete: 'cascade' }),
    contractId: bigintId('contract_id').notNull(),
    status: text('status').$type<ItemStatus>().notNull().default('pending'),
    errorCode: text('error_code'),
    errorMessage: text('error_message'),
    errorDetails: jsonb('error_details'),
    currencyCode: text('currency_code'),
    totalBefore: decimalText('total_before'),
    totalAfter: decimalText('total_after'),
    eventId: bigintId('event_id'),
    leaseUntil: ts('lease_until'),
    notBefore: ts('not_before'),
  },
  (t) => [primaryKey({ columns: [t.jobId, t.contractId] })],
);
