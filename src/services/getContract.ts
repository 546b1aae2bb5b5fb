import type { ContractText } from '../db/contractColumns.js';
import type { ContractRow } from '../db/schema.js';
import { assertContractId } from '../domain/contractId.js';
import { isResumeDue } from '../domain/contract.js';
import { contractJsonOf, parseJsonParts, toContract, type Contract } from '../domain/resources.js';
import type { ServiceCall, ServiceContext } from './context.js';
import type { ShopPrincipal } from './principal.js';
import { currentContract, readContract } from './readContract.js';

/** One contract of the principal's shop, as it is now (a due scheduled resume applied first). */
export async function getContract({ ctx, input }: ServiceCall<{ principal: ShopPrincipal; contractId: string }>): Promise<Contract> {
  assertContractId(input.contractId);
  return toContract(await currentContract(ctx, await readContract(ctx, input.principal, input.contractId)));
}

/**
 * A contract as JSON text, as it is now, from its row read with the json columns as text (the API's GET, after the
 * runner's first read): written around them, never parsed (domain/resources.ts contractJsonOf). A contract whose
 * resume is due is resumed first.
 */
export function contractJsonNow(ctx: ServiceContext, text: ContractText<ContractRow>): string | Promise<string> {
  if (!isResumeDue(text, ctx.clock.now())) return contractJsonOf(text);
  return currentContract(ctx, parseJsonParts(text)).then((row) => JSON.stringify(toContract(row)));
}
