import type { Database } from '../../db/client.js';
import type { BillingOutcome } from '../../domain/billing.js';
import { ServiceError } from '../../domain/errors.js';
import { iso } from '../../domain/time.js';
import type { BillingAttemptRequest, BillingGateway } from '../../services/billingGateway.js';
import type { ServiceContext } from '../../services/context.js';
import { recordBillingOutcome } from '../../services/recordBillingOutcome.js';
import { platformUnavailable, type ShopifyAdmin, type ShopRef } from './admin.js';
import { outcomeOf, type PlatformAttempt } from './billingAttempts.js';
import { contractGid } from './contracts.js';
import * as doc from './documents.js';
import type { ShopDirectory } from './port.js';

/**
 * Renewals in platform mode: a billing attempt is the platform's (subscriptionBillingAttemptCreate), and its outcome
 * comes from the platform, by webhook (subscription_billing_attempts/success|failure|challenged, webhooksIn.ts) or,
 * for one still pending after PENDING_READ_AFTER_MS, by reading its state (pollPendingAttempts). Each outcome goes to
 * recordBillingOutcome like the test gateway's; the platform's side of what follows (the next billing date, dunning's
 * final action) is carried out by the port (port.ts, billing_outcome).
 */

/**
 * How long a billing call may wait for the shop's cost bucket, throttled retries included. Longer than an action's
 * budget: an attempt has no client waiting, and a storm of attempts is meant to queue for the bucket and go through
 * at its restore rate rather than fail. Past it the attempt is handed over again later with the same idempotency key.
 */
export const BILLING_BUDGET_MS = 120_000;
/** An attempt whose outcome has not come by webhook for this long is read from the platform. */
export const PENDING_READ_AFTER_MS = 10 * 60_000;

type UserError = { field: string[] | null; message: string; code: string | null };
type CreateAnswer = { subscriptionBillingAttemptCreate: { subscriptionBillingAttempt: PlatformAttempt | null; userErrors: UserError[] } };

export class ShopifyBillingGateway implements BillingGateway {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly admin: ShopifyAdmin,
    private readonly shops: ShopDirectory,
    private readonly opts: { budgetMs?: number } = {},
  ) {}

  /**
   * Creates the platform's attempt for the cycle (by its date, with `originTime` the cycle date) under svc's
   * idempotency key, waiting for the shop's cost bucket. A THROTTLED answer ran nothing and is tried again; a call
   * whose answer was lost is safe to repeat, since the platform answers a key it has seen with the attempt it made.
   * Answers the attempt's global id as the reference. An attempt the platform has already settled (asked again after
   * a crash) has its outcome recorded at once. A refusal (the contract terminated or unknown there, the cycle skipped)
   * is recorded as the attempt's failure, with the platform's code: no retry would make the platform accept it.
   */
  async createAttempt(req: BillingAttemptRequest): Promise<{ reference: string | null }> {
    const shop = await this.shops.get(req.shopId);
    const date = iso(req.cycleDate);
    const data = await this.admin.graphql<CreateAnswer>(
      shop,
      doc.CREATE_BILLING_ATTEMPT,
      { contractId: contractGid(req.contract.id), input: { idempotencyKey: req.idempotencyKey, originTime: date, billingCycleSelector: { date } } },
      { budgetMs: this.opts.budgetMs ?? BILLING_BUDGET_MS },
    );
    const answer = data.subscriptionBillingAttemptCreate;
    const attempt = answer.subscriptionBillingAttempt;
    const error = answer.userErrors[0];
    if (attempt) {
      const outcome = outcomeOf(attempt);
      if (outcome) await recordBillingOutcome(this.ctx, { shopId: req.shopId, attemptId: req.attemptId, outcome });
      return { reference: attempt.id };
    }
    // The platform's own limit on billing attempts (a userError, not the cost bucket's THROTTLED): nothing was
    // created; the attempt is handed over again later.
    // (https://shopify.dev/docs/api/admin-graphql/latest/enums/BillingAttemptUserErrorCode)
    if (!error || error.code === 'THROTTLED') throw platformUnavailable(error ? 'the platform throttled billing attempts' : 'no attempt in the answer', 60);
    const outcome: BillingOutcome = { kind: 'failed', errorCode: 'processing_error', platformErrorCode: error.code ?? 'INVALID', message: error.message.slice(0, 500) };
    await recordBillingOutcome(this.ctx, { shopId: req.shopId, attemptId: req.attemptId, outcome });
    return { reference: null };
  }
}

/** Reads attempts by their global ids (ATTEMPTS_PER_READ a call); those the platform does not have are left out. */
export async function readAttempts(admin: ShopifyAdmin, shop: ShopRef, ids: string[]): Promise<PlatformAttempt[]> {
  const out: PlatformAttempt[] = [];
  for (let i = 0; i < ids.length; i += doc.ATTEMPTS_PER_READ) {
    const data = await admin.graphql<{ nodes: (PlatformAttempt | Record<string, never> | null)[] }>(shop, doc.BILLING_ATTEMPTS, {
      ids: ids.slice(i, i + doc.ATTEMPTS_PER_READ),
    });
    for (const n of data.nodes) if (n && 'state' in n) out.push(n as PlatformAttempt);
  }
  return out;
}

/** A billing attempt webhook's payload, as far as svc reads it (webhookChecks.ts checked its shape). */
export type AttemptSignal = { admin_graphql_api_id?: unknown; idempotency_key?: unknown };

/**
 * What a shop's billing attempt webhooks tell: each attempt is read from the platform (its `state` is what counts,
 * and what gives the order's name and amount or the challenge's URL, which the payload does not carry; one read for
 * ATTEMPTS_PER_READ attempts) and its outcome recorded, the outcomes together (the change path commits them as one
 * group). An attempt is found by the payload's idempotency key, which only svc's own attempts have; one svc does not
 * know (another app's) is ignored, and so is a repeat within the batch. Answers the failure of each signal that
 * failed; an attempt the platform still reports pending is one, so the inbox looks again shortly.
 */
export async function applyAttemptSignals<S extends { payload: AttemptSignal }>(
  ctx: ServiceContext,
  admin: ShopifyAdmin,
  shop: ShopRef,
  signals: S[],
): Promise<Map<S, unknown>> {
  const failures = new Map<S, unknown>();
  const valid = signals.filter((s) => typeof s.payload.admin_graphql_api_id === 'string' && typeof s.payload.idempotency_key === 'string');
  if (!valid.length) return failures;
  const keys = [...new Set(valid.map((s) => s.payload.idempotency_key as string))];
  const ours = await attemptsByKey(ctx.db, shop.id, keys);
  // One signal per attempt svc knows (the rest are repeats, or another app's).
  const byGid = new Map<string, { attemptId: string; key: string; signals: S[] }>();
  for (const s of valid) {
    const attemptId = ours.get(s.payload.idempotency_key as string);
    if (!attemptId) continue;
    const gid = s.payload.admin_graphql_api_id as string;
    const entry = byGid.get(gid) ?? { attemptId, key: s.payload.idempotency_key as string, signals: [] };
    entry.signals.push(s);
    byGid.set(gid, entry);
  }
  if (!byGid.size) return failures;
  const failAll = (list: S[], err: unknown) => list.forEach((s) => failures.set(s, err));
  let read: PlatformAttempt[];
  try {
    read = await readAttempts(admin, shop, [...byGid.keys()]);
  } catch (err) {
    failAll([...byGid.values()].flatMap((e) => e.signals), err);
    return failures;
  }
  const found = new Map(read.map((a) => [a.id, a]));
  await Promise.all(
    [...byGid].map(async ([gid, entry]) => {
      const attempt = found.get(gid);
      // Not the platform's (any more), or not the attempt the key names: nothing svc can take from it.
      if (!attempt || attempt.idempotencyKey !== entry.key) return;
      const outcome = outcomeOf(attempt);
      if (!outcome) return failAll(entry.signals, new ServiceError('platform_unavailable', 'The platform still reports the billing attempt as pending.'));
      try {
        await recordBillingOutcome(ctx, { shopId: shop.id, attemptId: entry.attemptId, outcome });
      } catch (err) {
        failAll(entry.signals, err);
      }
    }),
  );
  return failures;
}

async function attemptsByKey(db: Database, shopId: string, keys: string[]): Promise<Map<string, string>> {
  const rows = await db.withSession((run) =>
    run<{ id: string; key: string }>(`SELECT id::text AS id, idempotency_key AS key FROM billing_attempts WHERE shop_id = $1 AND idempotency_key = ANY($2::text[])`, [shopId, keys]),
  );
  return new Map(rows.map((r) => [r.key, r.id]));
}

/** Attempts read per round of the poller. */
const POLL_BATCH = 500;

/**
 * The attempts still pending PENDING_READ_AFTER_MS after they were handed to the platform (their webhook late or
 * lost; a challenged attempt, whose webhook comes only once the buyer is back) are read, their shop's at a time, and
 * the outcome of each one settled there is recorded. Never a shop that uninstalled the app (its token is gone, and it
 * is billed no more). Answers how many outcomes were recorded.
 */
export async function pollPendingAttempts(ctx: ServiceContext, admin: ShopifyAdmin, log?: { error(o: object, m: string): void }): Promise<number> {
  const before = new Date(ctx.clock.now().getTime() - PENDING_READ_AFTER_MS);
  const rows = await ctx.db.withSession((run) =>
    run<{ id: string; shop_id: string; domain: string; reference: string }>(
      `SELECT b.id::text AS id, b.shop_id::text AS shop_id, s.domain, b.platform_reference AS reference
         FROM billing_attempts b JOIN shops s ON s.id = b.shop_id AND s.uninstalled_at IS NULL
        WHERE b.status = 'pending' AND b.platform_reference IS NOT NULL AND coalesce(b.submitted_at, b.created_at) <= $1
        ORDER BY b.created_at LIMIT $2`,
      [before, POLL_BATCH],
    ),
  );
  const byShop = new Map<string, typeof rows>();
  for (const r of rows) byShop.set(r.shop_id, [...(byShop.get(r.shop_id) ?? []), r]);
  let recorded = 0;
  for (const [shopId, list] of byShop) {
    const shop = { id: shopId, domain: list[0].domain };
    try {
      const ours = new Map(list.map((r) => [r.reference, r.id]));
      const settled = (await readAttempts(admin, shop, [...ours.keys()])).flatMap((attempt) => {
        const outcome = outcomeOf(attempt);
        const attemptId = ours.get(attempt.id);
        return outcome && attemptId ? [{ attemptId, outcome }] : [];
      });
      // Recorded together: the change path commits them as one group.
      const results = await Promise.allSettled(settled.map((o) => recordBillingOutcome(ctx, { shopId, ...o })));
      for (const r of results) {
        if (r.status === 'fulfilled' && r.value.changed) recorded++;
        else if (r.status === 'rejected') log?.error({ shop: shop.domain, err: { message: (r.reason as Error).message } }, 'billing: recording a pending attempt’s outcome failed');
      }
    } catch (err) {
      // One shop's outage does not hold up the others; its attempts are read again next round.
      log?.error({ shop: shop.domain, err: { message: (err as Error).message } }, 'billing: reading pending attempts failed for a shop');
    }
  }
  return recorded;
}
