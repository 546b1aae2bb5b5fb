import { assertContractId } from '../domain/contractId.js';
import { isResumeDue } from '../domain/contract.js';
import { contractJsonOf, parseJsonParts, toContract, type Contract } from '../domain/resources.js';
import type { Caller } from './caller.js';
import type { ServiceCall } from './context.js';
import { currentContract, readContract, readContractText } from './readContract.js';

/** One contract of the caller's shop, as it is now (a due scheduled resume applied first). */
export async function getContract({ ctx, input }: ServiceCall<{ caller: Caller; contractId: string }>): Promise<Contract> {
  assertContractId(input.contractId);
  return toContract(await currentContract(ctx, await readContract(ctx, input.caller, input.contractId)));
}

/**
 * getContract as JSON text (the API's GET): read with the json columns as text and written around them, never parsed
 * (domain/resources.ts contractJsonOf). A contract whose resume is due is resumed first, as getContract does.
 */
export async function getContractJson({ ctx, input }: ServiceCall<{ caller: Caller; contractId: string }>): Promise<string> {
  assertContractId(input.contractId);
  const text = await readContractText(ctx, input.caller, input.contractId);
  if (!isResumeDue(text, ctx.clock.now())) return contractJsonOf(text);
  return JSON.stringify(toContract(await currentContract(ctx, parseJsonParts(text))));
}
