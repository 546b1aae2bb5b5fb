import { need } from '../permissions.js';
import { z } from 'zod';
import { stateOf, withoutDunning, type ContractState } from '../contract.js';
import { ServiceError } from '../errors.js';
import { addInterval, isoString } from '../time.js';
import { defineCommand, oneEvent } from './command.js';
import { attemptData, attemptNumber, newAttempt } from './billingSteps.js';

/**
 * The bill_now action: bills the current cycle now, and the schedule restarts from this moment (the next billing
 * date is now plus one interval). The cycle is named by this moment; a failed cycle being retried is replaced by it.
 *
 * A retried request must not charge the customer twice: within RECENT_BILL_NOW_MS of a bill_now that succeeded,
 * another is refused with 409 recently_billed unless the client says `again: true` (docs/renewals.md). A bill_now
 * whose payment failed refuses nothing.
 *
 * What the service resolves before deciding (never a client): `attemptId`, a fresh id; `billedNow`, the contract's
 * latest bill_now that succeeded, from its billing attempts (the contract's own latest attempt, read under its lock,
 * counts too).
 */
export type BillNowInput = { again?: boolean; attemptId?: string; billedNow?: SucceededBillNow | null };

/** A bill_now that succeeded: when its payment succeeded, and the order it made. */
export type SucceededBillNow = { at: Date; orderName: string | null };

/** How long after a bill_now that succeeded another is refused without `again`. */
export const RECENT_BILL_NOW_MS = 24 * 3_600_000;

export const billNow = defineCommand({
  name: 'bill_now',
  policy: {
    permission: need('billing', 'write'),
    actors: ['api_key', 'mcp', 'oauth', 'admin'],
    needs: ['attempt_id', 'billed_now'],
    after: 'hand_to_gateway',
  },
  input: z
    .strictObject({
      again: z
        .boolean()
        .optional()
        .describe(
          'true: bill even though a bill_now of this contract succeeded less than 24 hours ago. Without it such a ' +
            'request is refused with 409 recently_billed (a retried request never charges twice).',
        ),
    })
    .meta({ description: 'Bill the current cycle now; the schedule restarts from now (nextBillingDate = now + one interval).' }) as unknown as z.ZodType<BillNowInput>,
  allowedFrom: ['ACTIVE'],
  events: ['billing.attempted'],
  decide(contract, input, now) {
    if (!input.attemptId) throw new Error('bill_now needs an attempt id from the service');
    if (input.again !== true) refuseIfRecentlyBilled(latestBillNow(contract, input.billedNow ?? null), now);
    const attempt = newAttempt(contract, { id: input.attemptId, cycleDate: now, attempt: attemptNumber(contract, now), trigger: 'bill_now', now });
    const next = withoutDunning(stateOf(contract));
    next.nextBillingDate = addInterval(now, contract.billingInterval, contract.billingIntervalCount);
    next.billingCycleDate = now;
    next.billingLastAttempt = attempt;
    return oneEvent(contract, next, 'billing.attempted', attemptData(attempt, contract, next));
  },
});

/** The later of the resolved bill_now and the contract's latest attempt, when that is a bill_now that succeeded. */
function latestBillNow(contract: ContractState, resolved: SucceededBillNow | null): SucceededBillNow | null {
  const last = contract.billingLastAttempt;
  const own = last && last.trigger === 'bill_now' && last.status === 'succeeded' ? { at: new Date(last.completedAt ?? last.createdAt), orderName: last.order?.name ?? null } : null;
  if (!own) return resolved;
  if (!resolved) return own;
  return own.at.getTime() >= resolved.at.getTime() ? own : resolved;
}

function refuseIfRecentlyBilled(billed: SucceededBillNow | null, now: Date): void {
  if (!billed || now.getTime() - billed.at.getTime() >= RECENT_BILL_NOW_MS) return;
  const order = billed.orderName ? ` (order ${billed.orderName})` : '';
  throw new ServiceError(
    'recently_billed',
    `This contract was billed by bill_now at ${isoString(billed.at)}${order}, less than 24 hours ago. To bill it again, send "again": true.`,
  );
}
