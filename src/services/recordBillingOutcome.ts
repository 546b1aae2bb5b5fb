import { attemptRows } from '../db/billingRows.js';
import { DEFAULT_BILLING_POLICY, type BillingOutcome } from '../domain/billing.js';
import { billingOutcome } from '../domain/commands/billingOutcome.js';
import { parseInput, ServiceError } from '../domain/errors.js';
import type { ServiceContext } from './context.js';
import { SYSTEM } from './principal.js';
import { runDecided } from './runner.js';

export type OutcomeReport = {
  shopId: string;
  /**
   * svc's id of the attempt. (Sources that know only their own reference for it map it first: the platform's
   * poll and webhooks do, by the attempt's reference or idempotency key.)
   */
  attemptId: string;
  outcome: BillingOutcome;
};

/**
 * THE entry point of every billing outcome, whatever its source (the test gateway, the platform's webhooks, a poll
 * of a pending attempt): it goes through the runner as the billing_outcome command (actor billing), so the
 * attempt, the contract (its schedule, its dunning, a final action), the events and their webhooks commit together.
 * Idempotent: an outcome already recorded, or one for an attempt that is no longer the contract's latest, changes
 * nothing (`changed: false`). Concurrent outcomes are written together (the change path's group commit). Throws
 * not_found for an attempt svc does not know in that shop.
 */
export async function recordBillingOutcome(ctx: ServiceContext, report: OutcomeReport): Promise<{ changed: boolean; contractId: string }> {
  const found = await attemptRows(ctx.db).load({ shopId: report.shopId, attemptId: report.attemptId });
  if (!found) throw new ServiceError('not_found', 'No billing attempt with this id exists for this shop.');
  const contractId = found.contract.id;
  // Settled already, and not an action_required attempt the customer came back to: nothing to plan.
  if (found.attemptStatus !== 'pending' && !(found.attemptStatus === 'action_required' && report.outcome.kind !== 'action_required')) {
    return { changed: false, contractId };
  }
  const committed = await runDecided(
    ctx,
    SYSTEM.billing,
    { shopId: report.shopId, contractId, read: found.contract },
    // Checked by the command's schema: an outcome comes from outside (a gateway, the platform).
    { name: 'billing_outcome', input: parseInput(billingOutcome.input, { attemptId: found.attemptId, outcome: report.outcome, policy: found.policy ?? DEFAULT_BILLING_POLICY }) },
    { background: true },
  );
  return { changed: !!committed?.changed, contractId };
}
