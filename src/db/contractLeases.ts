import { Batcher, perDatabase } from './batcher.js';
import { isDatabaseUnavailable, type Database } from './client.js';
import { byOrd, CONTRACT_COLUMNS } from './contractRows.js';
import type { ContractRow } from './schema.js';

/**
 * Call leases (migration 0007): a change carried out on the platform holds its contract by a lease, not a row lock,
 * while the platform answers, so nothing is held in the database during a call. The write that follows checks the
 * contract's version and clears the lease (contractWrites.ts); a locked writer (platform sync) leaves a leased
 * contract alone. A lease lapses when its holder died.
 *
 * Taking or giving back a lease commits without waiting for the WAL to reach the disk (synchronous_commit off, for
 * that transaction alone): other transactions see it at once, which is all a lease is for, and the action's latency
 * loses a disk flush. A lease lost with a crash of the database is what a lapsed lease already is: the write that
 * follows checks the contract's version, and a platform change whose commit was lost is retried safely (the retry
 * finds the platform already there).
 */

const ASYNC_COMMIT = `(SELECT set_config('synchronous_commit', 'off', true)) AS async_commit`;

// A lease is taken when there is none or the last one lapsed (x.now), in one statement of its own transaction, for
// every change that asks at once. Two asking for one contract: one gets it (an UPDATE changes a row once).
const TAKE_LEASES = `
  UPDATE subscription_contracts c SET call_lease = x.lease, call_lease_until = x.until
    FROM unnest($1::int[], $2::bigint[], $3::bigint[], $4::uuid[], $5::timestamptz[], $6::timestamptz[]) AS x(ord, id, shop_id, lease, until, now)
         CROSS JOIN ${ASYNC_COMMIT}
   WHERE c.id = x.id AND c.shop_id = x.shop_id AND (c.call_lease_until IS NULL OR c.call_lease_until <= x.now)
  RETURNING x.ord::int AS ord, ${CONTRACT_COLUMNS}`;
const LEASE_HOLDER = `SELECT call_lease_until AS "until" FROM subscription_contracts WHERE id = $1 AND shop_id = $2`;
const RELEASE = `UPDATE subscription_contracts c SET call_lease = NULL, call_lease_until = NULL FROM ${ASYNC_COMMIT} WHERE c.id = $1 AND c.call_lease = $2`;

export type LeaseAsk = { contractId: string; shopId: string; lease: string; until: Date; now: Date };

/** The lease statement of one database, batched over concurrent changes: the contract where its lease was taken. */
export const contractLeases = perDatabase(
  (db: Database) =>
    new Batcher<LeaseAsk, ContractRow | undefined>(
      async (asks) => {
        const col = <T>(f: (a: LeaseAsk, i: number) => T) => asks.map(f);
        const rows = await db.prepared<ContractRow & { ord: number }>('svc_take_call_leases', TAKE_LEASES, [
          col((_, i) => i + 1),
          col((a) => a.contractId),
          col((a) => a.shopId),
          col((a) => a.lease),
          col((a) => a.until),
          col((a) => a.now),
        ]);
        for (const r of rows) r.version = Number(r.version);
        return byOrd(rows, asks.length);
      },
      { failsEveryInput: isDatabaseUnavailable },
    ),
);

/** Until when the contract is leased (null: not leased); undefined when the shop has no such contract. */
export async function leaseHolder(db: Database, shopId: string, contractId: string): Promise<Date | null | undefined> {
  const [held] = await db.prepared<{ until: Date | null }>('svc_call_lease_holder', LEASE_HOLDER, [contractId, shopId]);
  return held ? held.until : undefined;
}

/** Gives a lease back (a change that failed or had nothing to do); never fails the change for it. */
export async function releaseLease(db: Database, contractId: string, lease: string): Promise<void> {
  await db.prepared('svc_release_call_lease', RELEASE, [contractId, lease]).catch(() => {});
}
