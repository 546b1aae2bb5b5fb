import { assertContractId } from '../domain/contractId.js';
import { toContract, type Contract } from '../domain/resources.js';
import type { Caller } from './caller.js';
import type { ServiceCall } from './context.js';
import { currentContract, readContract } from './readContract.js';

/** One contract of the caller's shop, as it is now (a due scheduled resume applied first). */
export async function getContract({ ctx, input }: ServiceCall<{ caller: Caller; contractId: string }>): Promise<Contract> {
  assertContractId(input.contractId);
  return toContract(await currentContract(ctx, await readContract(ctx, input.caller, input.contractId)));
}
