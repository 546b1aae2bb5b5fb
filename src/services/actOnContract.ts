import { randomUUID } from 'node:crypto';
import type { IdempotencyRecord } from '../db/contractWrites.js';
import { ServiceError } from '../domain/errors.js';
import { parseContractAction } from '../domain/actions.js';
import { assertContractId } from '../domain/contractId.js';
import type { Contract } from '../domain/resources.js';
import { assertMayChange, type Caller } from './caller.js';
import { changeAnswer, changeContract } from './changeContract.js';
import type { ServiceCall } from './context.js';
import { readContract } from './readContract.js';
import { submitBillingAttempt } from './submitBillingAttempt.js';

/**
 * Performs one action on one contract of the caller's shop. The body is validated here, so every surface gets the
 * same rules. The change goes through the one change path: actions on one contract are serialised, none is lost, and
 * the state, its events and (with `record`, an Idempotency-Key's claim) the result commit together or not at all.
 * Returns the contract after the action: with `record`, exactly what was recorded. bill_now's attempt (pending) is in
 * the contract's `billing.lastAttempt`, handed to the gateway once committed.
 */
export async function actOnContract(call: ServiceCall<ActionInput>): Promise<Contract> {
  return (await actOnContractRendered(call)).contract;
}

type ActionInput = { caller: Caller; contractId: string; body: unknown; record?: IdempotencyRecord };

/**
 * actOnContract, with the contract also as the JSON its event holds when the action changed it (`json`): the API
 * answers with that text instead of writing the same contract to JSON a second time.
 */
export async function actOnContractRendered({ ctx, input }: ServiceCall<ActionInput>): Promise<{ contract: Contract; json?: string }> {
  const { caller, contractId } = input;
  assertContractId(contractId);
  assertMayChange(caller);
  let command = parseContractAction(input.body, ctx.clock.now());
  if (command.name === 'bill_now') {
    if (!ctx.billing) throw new ServiceError('invalid_state', 'Billing is turned off on this service (BILLING=off): nothing can be billed.');
    // The attempt's id is svc's, fresh for this request.
    command = { name: 'bill_now', input: { attemptId: randomUUID() } };
  }
  const read = await readContract(ctx, caller, contractId);
  const committed = await changeContract(ctx, {
    shopId: caller.shopId,
    contractId,
    read,
    request: { command, actor: caller.actor },
    record: input.record,
  });
  if (command.name === 'bill_now' && committed!.changed) {
    // Committed: now charged. A gateway that cannot take it now leaves it pending; the worker hands it over again.
    const attempt = committed!.row.billingLastAttempt!;
    await submitBillingAttempt(ctx, committed!.row, attempt).catch((err: unknown) =>
      ctx.warn?.({ err: { message: (err as Error).message }, attemptId: attempt.id }, 'could not hand a billing attempt to the gateway'),
    );
  }
  // The contract its events and its record have (rendered once, by the change path).
  return changeAnswer(committed!);
}
