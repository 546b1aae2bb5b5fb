import type { RunSql } from './client.js';
import type { Database } from './client.js';
import type { MirrorMark } from './contractWrites.js';
import type { PlatformState } from '../domain/commands/sync.js';

/** A contract as a platform has it, platform-neutral: what the mirror writes (services/platformSync.ts). */
export type PlatformContract = { id: string; createdAt: Date; state: PlatformState; mark: MirrorMark };

/** What the mirror holds of these contracts: the platform revision, and whether a change holds the contract now. */
export async function mirroredRevisions(db: Database, shopId: string, ids: string[], now: Date): Promise<Map<string, { revision: string | null; leased: boolean }>> {
  const rows = await db.prepared<{ id: string; revision: string | null; leased: boolean }>(
    'svc_mirrored_revisions',
    `SELECT id::text AS id, platform_revision::text AS revision, coalesce(call_lease_until > $3, false) AS leased
       FROM subscription_contracts WHERE shop_id = $1 AND id = ANY($2::bigint[])`,
    [shopId, ids, now],
  );
  return new Map(rows.map((r) => [r.id, { revision: r.revision, leased: r.leased }]));
}

/** Inserts contracts the mirror has not seen, leaving any it has alone; answers the ids inserted. */
export async function insertMirroredContracts(run: RunSql, shopId: string, contracts: PlatformContract[], now: Date): Promise<string[]> {
  if (!contracts.length) return [];
  const col = <T>(f: (c: PlatformContract) => T) => contracts.map(f);
  const json = (v: unknown) => JSON.stringify(v);
  const inserted = await run<{ id: string }>(
    `INSERT INTO subscription_contracts (id, shop_id, status, customer_id, customer_email, billing_interval, billing_interval_count,
            delivery_interval, delivery_interval_count, next_billing_date, lines, shipping_address, delivery_price, discounts, totals,
            created_at, updated_at, version, platform_revision, platform_updated_at)
     SELECT x.id, $1, x.status, x.customer_id, x.customer_email, x.billing_interval, x.billing_interval_count,
            x.delivery_interval, x.delivery_interval_count, x.next_billing_date, x.lines, x.shipping_address, x.delivery_price,
            x.discounts, x.totals, x.created_at, $2, 0, x.platform_revision, x.platform_updated_at
       FROM unnest($3::bigint[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[], $9::text[], $10::int[],
                   $11::timestamptz[], $12::json[], $13::json[], $14::json[], $15::json[], $16::json[],
                   $17::timestamptz[], $18::numeric[], $19::timestamptz[])
            AS x(id, status, customer_id, customer_email, billing_interval, billing_interval_count, delivery_interval,
                 delivery_interval_count, next_billing_date, lines, shipping_address, delivery_price, discounts, totals,
                 created_at, platform_revision, platform_updated_at)
     ON CONFLICT (id) DO NOTHING
     RETURNING id::text`,
    [
      shopId,
      now,
      col((c) => c.id),
      col((c) => c.state.status),
      col((c) => c.state.customerId),
      col((c) => c.state.customerEmail),
      col((c) => c.state.billingInterval),
      col((c) => c.state.billingIntervalCount),
      col((c) => c.state.deliveryInterval),
      col((c) => c.state.deliveryIntervalCount),
      col((c) => c.state.nextBillingDate),
      col((c) => json(c.state.lines)),
      col((c) => json(c.state.shippingAddress)),
      col((c) => json(c.state.deliveryPrice)),
      col((c) => json(c.state.discounts)),
      col((c) => json(c.state.totals)),
      col((c) => c.createdAt),
      col((c) => c.mark.platformRevision),
      col((c) => c.mark.platformUpdatedAt),
    ],
  );
  return inserted.map((r) => r.id);
}
