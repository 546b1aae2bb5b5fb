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

/**
 * What a billing attempt webhook tells: the attempt is read from the platform (its `state` is what counts, and what
 * gives the order's name and amount or the challenge's URL, which the payload does not carry) and its outcome
 * recorded. The attempt is found by the payload's idempotency key, which only svc's own attempts have; one svc does
 * not know (another app's) is ignored. Still pending on the platform: thrown, so the inbox tries again shortly.
 */
export async function applyAttemptWebhook(
  ctx: ServiceContext,
  admin: ShopifyAdmin,
  shop: ShopRef,
  payload: { admin_graphql_api_id?: unknown; idempotency_key?: unknown },
): Promise<'done' | 'ignored'> {
  if (typeof payload.admin_graphql_api_id !== 'string' || typeof payload.idempotency_key !== 'string') return 'ignored';
  const attemptId = await attemptByKey(ctx.db, shop.id, payload.idempotency_key);
  if (!attemptId) return 'ignored';
  const [attempt] = await readAttempts(admin, shop, [payload.admin_graphql_api_id]);
  if (!attempt || attempt.idempotencyKey !== payload.idempotency_key) return 'ignored';
  const outcome = outcomeOf(attempt);
  if (!outcome) throw new ServiceError('platform_unavailable', 'The platform still reports the billing attempt as pending.');
  await recordBillingOutcome(ctx, { shopId: shop.id, attemptId, outcome });
  return 'done';
}

async function attemptByKey(db: Database, shopId: string, key: string): Promise<string | null> {
  const rows = await db.withSession((run) => run<{ id: string }>(`SELECT id::text AS id FROM billing_attempts WHERE shop_id = $1 AND idempotency_key = $2`, [shopId, key]));
  return rows[0]?.id ?? null;
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
      for (const attempt of await readAttempts(admin, shop, [...ours.keys()])) {
        const outcome = outcomeOf(attempt);
        const attemptId = ours.get(attempt.id);
        if (!outcome || !attemptId) continue;
        if ((await recordBillingOutcome(ctx, { shopId, attemptId, outcome })).changed) recorded++;
      }
    } catch (err) {
      // One shop's outage does not hold up the others; its attempts are read again next round.
      log?.error({ shop: shop.domain, err: { message: (err as Error).message } }, 'billing: reading pending attempts failed for a shop');
    }
  }
  return recorded;
}
