import { PAYMENT_BEHAVIOURS, type PaymentBehaviour } from '../db/schema.js';
import { assertContractId } from '../domain/contractId.js';
import { invalidRequest, MESSAGES, ServiceError } from '../domain/errors.js';
import type { ServiceContext } from './context.js';

/** A behaviour of the test gateway's simulated payment method, or 400 naming the six. */
export function parsePaymentBehaviour(value: string): PaymentBehaviour {
  if ((PAYMENT_BEHAVIOURS as readonly string[]).includes(value)) return value as PaymentBehaviour;
  throw invalidRequest(`Unknown payment behaviour "${value.slice(0, 40)}": one of ${PAYMENT_BEHAVIOURS.join(', ')}.`, [{ path: 'behaviour', message: `one of ${PAYMENT_BEHAVIOURS.join(', ')}` }]);
}

/**
 * Sets how the test gateway answers for these contracts of a shop (standalone mode; the operator's CLI). Not a change
 * of the contract a client sees: no event, no version. Answers how many contracts it set; not_found when one id is not
 * the shop's.
 */
export async function setPaymentBehaviour(ctx: ServiceContext, input: { shopId: string; contractIds: string[]; behaviour: PaymentBehaviour }): Promise<number> {
  for (const id of input.contractIds) assertContractId(id);
  const rows = await ctx.db.withSession((run) =>
    run<{ id: string }>(`UPDATE subscription_contracts SET payment_behaviour = $3 WHERE shop_id = $1 AND id = ANY($2::bigint[]) RETURNING id::text`, [
      input.shopId,
      input.contractIds,
      input.behaviour,
    ]),
  );
  if (rows.length !== input.contractIds.length) throw new ServiceError('not_found', MESSAGES.contractNotFound);
  return rows.length;
}
