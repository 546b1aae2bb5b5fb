import { inArray } from 'drizzle-orm';
import { Batcher, perDatabase } from './batcher.js';
import { isDatabaseUnavailable, type Database } from './client.js';
import { shops } from './schema.js';

/**
 * The inbox of webhooks a platform sent (table platform_webhooks), for any platform: receipts stored durably in
 * batches, rounds claimed under a lease by any number of instances, each delivery settled as done or to be tried
 * again. What a delivery means is the platform adapter's business (platform/shopify/webhooksIn.ts); how deliveries
 * are kept and taken is this file's.
 */

/** One delivery as received: its id, shop and topic, its payload (JSON text), and what it is about. */
export type ReceiptRow = {
  id: string;
  shop: string;
  topic: string;
  payload: string;
  /** A digest of (topic, shop, raw body), hex: a body received again under another id is a duplicate. */
  digest: string;
  receivedAt: Date;
  triggeredAt: Date | null;
  /** The contract a contract signal is about (fits a bigint), else null. */
  contract: string | null;
  /** A contract signal's revision, else null. */
  revision: string | null;
};

/** What storing a receipt did: new (`stored`), and whether the inbox has work to do for it (`pending`). */
export type Stored = { stored: boolean; pending: boolean };

/**
 * Stores receipts, new ones only: a webhook id or a digest already stored is a duplicate (either unique index). A
 * contract signal whose revision the mirror already holds (the echo of svc's own change, mostly, or a repeat) is
 * stored as processed: it says nothing the mirror does not, and so costs no round of the inbox. "Holds" is the
 * mirror's revision rule (domain/commands/sync.ts isNewerRevision) said in SQL: the mirror's revision is not older.
 */
const STORE_RECEIPTS = `
  INSERT INTO platform_webhooks (webhook_id, shop_domain, topic, payload, body_digest, received_at, triggered_at, processed_at)
  SELECT r.id, r.shop, r.topic, r.payload, decode(r.digest, 'hex'), r.received, r.triggered,
         CASE WHEN r.revision IS NOT NULL AND EXISTS (
                SELECT 1 FROM subscription_contracts c JOIN shops s ON s.id = c.shop_id
                 WHERE s.domain = r.shop AND c.id = r.contract::bigint AND c.platform_revision >= r.revision::numeric)
              THEN r.received END
    FROM unnest($1::text[], $2::text[], $3::text[], $4::jsonb[], $5::timestamptz[], $6::timestamptz[], $7::text[], $8::text[], $9::text[])
      AS r(id, shop, topic, payload, received, triggered, contract, revision, digest)
  ON CONFLICT DO NOTHING RETURNING webhook_id, processed_at IS NULL AS pending`;

/**
 * Receipts arriving together are stored in one statement (each caller still answers only once its row is
 * committed): under a burst the platform's deliveries cost the database one insert per batch, not per delivery.
 * Answers whether each was new, and whether it waits for the inbox; of one id (or one digest) twice in a batch, the
 * first.
 */
export const inboxReceipts = perDatabase(
  (db: Database) =>
    new Batcher<ReceiptRow, Stored>(
      async (rs) => {
        const col = <T>(f: (r: ReceiptRow) => T) => rs.map(f);
        const rows = await db.prepared<{ webhook_id: string; pending: boolean }>('svc_store_platform_webhooks', STORE_RECEIPTS, [
          col((r) => r.id),
          col((r) => r.shop),
          col((r) => r.topic),
          col((r) => r.payload),
          col((r) => r.receivedAt),
          col((r) => r.triggeredAt),
          col((r) => r.contract),
          col((r) => r.revision),
          col((r) => r.digest),
        ]);
        const fresh = new Map(rows.map((r) => [r.webhook_id, r.pending]));
        return rs.map((r) => {
          const pending = fresh.get(r.id);
          fresh.delete(r.id);
          return { stored: pending !== undefined, pending: pending ?? false };
        });
      },
      { failsEveryInput: isDatabaseUnavailable },
    ),
);

/** A stored delivery as a round takes it. */
export type Delivery = { webhook_id: string; shop_domain: string; topic: string; payload: Record<string, unknown>; triggered_at: Date | null; attempts: number };

// One statement, so its own transaction: the rows it takes are leased until $2 (any number of instances).
const CLAIM = `
  UPDATE platform_webhooks w SET lease_until = $2, attempts = w.attempts + 1
   WHERE w.webhook_id IN (
     SELECT webhook_id FROM platform_webhooks
      WHERE processed_at IS NULL AND (lease_until IS NULL OR lease_until < $1)
      ORDER BY received_at, webhook_id LIMIT $3 FOR UPDATE SKIP LOCKED)
   RETURNING w.webhook_id, w.shop_domain, w.topic, w.payload, w.triggered_at, w.attempts`;

/** Takes up to `limit` due deliveries, oldest first, leased until `until`. */
export function claimDeliveries(db: Database, now: Date, until: Date, limit: number): Promise<Delivery[]> {
  return db.prepared<Delivery>('svc_claim_platform_webhooks', CLAIM, [now, until, limit]);
}

/** Marks deliveries done; the digest of those of `releaseDigestOf` topics is let go (their bodies may come again). */
export async function markDone(db: Database, ids: string[], now: Date, releaseDigestOf: readonly string[]): Promise<void> {
  if (!ids.length) return;
  await db.prepared(
    'svc_platform_webhooks_done',
    `UPDATE platform_webhooks SET processed_at = $2, lease_until = NULL, last_error = NULL,
            body_digest = CASE WHEN topic = ANY($3::text[]) THEN NULL ELSE body_digest END
      WHERE webhook_id = ANY($1::text[])`,
    [ids, now, releaseDigestOf],
  );
}

/**
 * Deliveries to try again: each at its time, with its error; `counted` false gives its attempt back; `aside` set
 * marks it processed (set aside: tried enough).
 */
export type Retry = { id: string; at: Date; message: string; counted: boolean; aside: Date | null };

export async function scheduleRetries(db: Database, retries: Retry[]): Promise<void> {
  if (!retries.length) return;
  await db.prepared(
    'svc_platform_webhooks_retry',
    `UPDATE platform_webhooks w SET lease_until = r.at, last_error = r.message, processed_at = r.aside,
            attempts = w.attempts - CASE WHEN r.counted THEN 0 ELSE 1 END
       FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::boolean[], $5::timestamptz[]) AS r(id, at, message, counted, aside)
      WHERE w.webhook_id = r.id`,
    [retries.map((r) => r.id), retries.map((r) => r.at), retries.map((r) => r.message), retries.map((r) => r.counted), retries.map((r) => r.aside)],
  );
}

/** A shop svc knows, by domain: its id and whether it uninstalled. */
export type InboxShop = { id: string; domain: string; uninstalledAt: Date | null };

export async function shopsByDomain(db: Database, domains: string[]): Promise<Map<string, InboxShop>> {
  if (!domains.length) return new Map();
  const rows = await db.orm.select({ id: shops.id, domain: shops.domain, uninstalledAt: shops.uninstalledAt }).from(shops).where(inArray(shops.domain, domains));
  return new Map(rows.map((r) => [r.domain, r]));
}
