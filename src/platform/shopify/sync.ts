import { commitContractChange, commitContractChangeIn, commitContractChanges, type ContractChange } from '../../db/commitContractChange.js';
import type { RunSql } from '../../db/client.js';
import type { ContractRow } from '../../db/schema.js';
import { PLATFORM, planSync, type ContractPlan, type MirroredContract, type MirrorUpdate } from '../../domain/changes.js';
import type { ContractState } from '../../domain/contract.js';
import { ServiceError } from '../../domain/errors.js';
import type { Interval } from '../../domain/time.js';
import type { ServiceContext } from '../../services/context.js';
import { isNewerRevision, type MirrorFields } from './contracts.js';

/**
 * Platform sync: what the platform says a contract is now, applied to the mirror through the one change path
 * (PRODUCT §9). Applied only when the platform's revision is newer than the mirror's, under the contract's row lock,
 * so a late, repeated or out-of-order signal changes nothing, and the echo of svc's own action (whose revision the
 * action recorded) records no second event.
 */

export type SyncOutcome = 'created' | 'changed' | 'unchanged';

export const mirrored = (r: Pick<ContractRow, keyof MirroredContract>): MirroredContract => ({
  status: r.status as ContractState['status'],
  billingInterval: r.billingInterval as Interval,
  billingIntervalCount: r.billingIntervalCount,
  nextBillingDate: r.nextBillingDate,
  pausedAt: r.pausedAt,
  resumeAt: r.resumeAt,
  cancelledAt: r.cancelledAt,
  cancellationReason: r.cancellationReason,
  lines: r.lines,
  customerId: r.customerId,
  customerEmail: r.customerEmail,
});

export const mirrorOf = (f: MirrorFields): MirrorUpdate => ({
  platformRevision: f.platformRevision,
  platformUpdatedAt: f.platformUpdatedAt,
  lines: f.lines,
  billingInterval: f.billingInterval as Interval,
  billingIntervalCount: f.billingIntervalCount,
  customerId: f.customerId,
  customerEmail: f.customerEmail,
});

/**
 * Applies the platform's contract to the mirror. A contract svc has not seen is inserted; with `announce` (a
 * webhook or reconciliation found it, not the install's import) it gets a contract.created event, which reaches
 * the merchant's webhooks like any other.
 */
export async function syncContract(ctx: ServiceContext, shopId: string, f: MirrorFields, opts: { announce: boolean }): Promise<SyncOutcome> {
  for (let attempt = 0; ; attempt++) {
    try {
      const done = await commitContractChange(ctx.db, syncChange(ctx, shopId, f));
      return done?.changed ? 'changed' : 'unchanged';
    } catch (err) {
      if (!(err instanceof ServiceError && err.code === 'not_found') || attempt > 0) throw err;
    }
    // The row and its contract.created commit together: a failure between them would leave a contract no later sync
    // announces (its revision is the mirror's from then on).
    const created = await ctx.db.transaction(async (run) => {
      if (!(await insertRows(run, ctx, shopId, [f]))) return false;
      if (opts.announce) await commitContractChangeIn(run, announceCreated(ctx, shopId, f.id));
      return true;
    });
    if (created) return 'created';
    // Another writer inserted it meanwhile: apply it as a change (once more around the loop).
  }
}

/** The platform's contract as a change of the mirror's row: applied only when its revision is newer. */
function syncChange(ctx: ServiceContext, shopId: string, f: MirrorFields): ContractChange {
  return {
    shopId,
    contractId: f.id,
    now: ctx.clock.now(),
    optimistic: false,
    plan: (row) => {
      if (!isNewerRevision(f.platformRevision, row.platformRevision)) return null;
      // svc's own fields (pausedAt, resumeAt, cancellation) are the row's; the rest is the platform's.
      return planSync(mirrored(row), mirrored({ ...row, ...f }), f.platformUpdatedAt, mirrorOf(f));
    },
  };
}

/**
 * syncContract for several distinct contracts read together, the ones svc holds applied in one transaction
 * (commitContractChanges); one svc has not seen yet goes through syncContract. Answers each contract's outcome, or
 * the error its sync met (ContractBusy while an action holds it), by contract id.
 */
export async function syncContracts(ctx: ServiceContext, shopId: string, fs: MirrorFields[], opts: { announce: boolean }): Promise<Map<string, SyncOutcome | Error>> {
  const out = new Map<string, SyncOutcome | Error>();
  const results = await commitContractChanges(ctx.db, fs.map((f) => syncChange(ctx, shopId, f)));
  for (const [i, f] of fs.entries()) {
    const r = results[i];
    if (r instanceof ServiceError && r.code === 'not_found') {
      try {
        out.set(f.id, await syncContract(ctx, shopId, f, opts));
      } catch (err) {
        out.set(f.id, err as Error);
      }
    } else out.set(f.id, r instanceof ServiceError ? r : r.changed ? 'changed' : 'unchanged');
  }
  return out;
}

/** contract.created (actor platform): a change of the row just inserted. */
function announceCreated(ctx: ServiceContext, shopId: string, contractId: string): ContractChange {
  return {
    shopId,
    contractId,
    now: ctx.clock.now(),
    optimistic: false,
    plan: (row): ContractPlan => {
      const state = mirrored(row);
      return { state, events: [{ type: 'contract.created', actor: PLATFORM, from: state.status, to: state.status, data: {}, after: state }] };
    },
  };
}

/**
 * Inserts contracts svc has not seen (the install's import, in batches), leaving any it has alone: those follow the
 * platform through syncContract. Returns how many were new.
 */
export async function insertContracts(ctx: ServiceContext, shopId: string, rows: MirrorFields[]): Promise<number> {
  if (!rows.length) return 0;
  return ctx.db.withSession((run) => insertRows(run, ctx, shopId, rows));
}

async function insertRows(run: RunSql, ctx: ServiceContext, shopId: string, rows: MirrorFields[]): Promise<number> {
  const now = ctx.clock.now();
  const col = <T>(f: (r: MirrorFields) => T) => rows.map(f);
  const inserted = await run<{ id: string }>(
    `INSERT INTO subscription_contracts (id, shop_id, status, customer_id, customer_email, billing_interval, billing_interval_count,
            next_billing_date, lines, created_at, updated_at, version, platform_revision, platform_updated_at)
     SELECT x.id, $1, x.status, x.customer_id, x.customer_email, x.billing_interval, x.billing_interval_count,
            x.next_billing_date, x.lines, x.created_at, $2, 0, x.platform_revision, x.platform_updated_at
       FROM unnest($3::bigint[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[], $9::timestamptz[], $10::jsonb[],
                   $11::timestamptz[], $12::numeric[], $13::timestamptz[])
            AS x(id, status, customer_id, customer_email, billing_interval, billing_interval_count, next_billing_date, lines,
                 created_at, platform_revision, platform_updated_at)
     ON CONFLICT (id) DO NOTHING
     RETURNING id::text`,
    [
      shopId,
      now,
      col((r) => r.id),
      col((r) => r.status),
      col((r) => r.customerId),
      col((r) => r.customerEmail),
      col((r) => r.billingInterval),
      col((r) => r.billingIntervalCount),
      col((r) => r.nextBillingDate),
      col((r) => JSON.stringify(r.lines)),
      col((r) => r.createdAt),
      col((r) => r.platformRevision),
      col((r) => r.platformUpdatedAt),
    ],
  );
  return inserted.length;
}

/** What the mirror holds of these contracts: the platform revision, and whether an action holds the contract now. */
export async function mirroredRevisions(ctx: ServiceContext, shopId: string, ids: string[]): Promise<Map<string, { revision: string | null; leased: boolean }>> {
  const rows = await ctx.db.prepared<{ id: string; revision: string | null; leased: boolean }>(
    'svc_mirrored_revisions',
    `SELECT id::text AS id, platform_revision::text AS revision, coalesce(call_lease_until > $3, false) AS leased
       FROM subscription_contracts WHERE shop_id = $1 AND id = ANY($2::bigint[])`,
    [shopId, ids, ctx.clock.now()],
  );
  return new Map(rows.map((r) => [r.id, { revision: r.revision, leased: r.leased }]));
}
