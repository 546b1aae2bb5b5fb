import { randomUUID } from 'node:crypto';
import type { IdempotencyRecord } from '../db/contractWrites.js';
import { EditBody, parseOperations } from '../domain/commands/edit.js';
import { checkCommand } from '../domain/commands/plan.js';
import type { Command } from '../domain/commands/registry.js';
import { assertContractId } from '../domain/contractId.js';
import { parseInput } from '../domain/errors.js';
import type { Contract } from '../domain/resources.js';
import { assertMayChange, type Caller } from './caller.js';
import { catalogFor } from './catalog.js';
import { changeAnswer, changeContract } from './changeContract.js';
import type { ServiceCall } from './context.js';
import { readContract } from './readContract.js';

/**
 * Edits one contract of the caller's shop (lines, frequency, address, discounts): the body validated here for every
 * surface, the shop's catalog looked up for what the edit names (standalone mode; the platform prices a draft in
 * platform mode), then the `edit` command through the one change path: all operations or none, with its
 * contract.updated event and (with `record`) the Idempotency-Key's result in the same commit. With `preview` the
 * contract is answered exactly as it would be and nothing changes anywhere.
 */
export async function editContract(call: ServiceCall<EditInput>): Promise<{ contract: Contract; preview: boolean }> {
  const { contract, preview } = await editContractRendered(call);
  return { contract, preview };
}

type EditInput = { caller: Caller; contractId: string; body: unknown; record?: IdempotencyRecord };

/** editContract, with the contract also as the JSON its event holds (`json`), for the API to answer with as it is. */
export async function editContractRendered({ ctx, input }: ServiceCall<EditInput>): Promise<{ contract: Contract; preview: boolean; json?: string }> {
  const { caller, contractId } = input;
  assertContractId(contractId);
  assertMayChange(caller);
  const body = parseInput(EditBody, input.body);
  const operations = parseOperations(body.operations);
  const preview = body.preview === true;
  const newIds = operations.map(() => randomUUID());
  checkCommand({ name: 'edit', input: { operations, preview, catalog: null, newIds } }, ctx.clock.now());
  // The contract first: its read confirms the caller's key (services/caller.ts) before anything of the shop is read.
  const read = await readContract(ctx, caller, contractId);
  const catalog = ctx.platform.callsOut ? null : await catalogFor(ctx, caller.shopId, operations);
  const command: Command = { name: 'edit', input: { operations, preview, catalog, newIds } };
  const done = await changeContract(ctx, {
    shopId: caller.shopId,
    contractId,
    read,
    request: { command, actor: caller.actor },
    record: preview ? undefined : input.record,
    preview,
  });
  return { ...changeAnswer(done!), preview };
}
