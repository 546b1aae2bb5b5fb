import { assertContractId } from '../domain/contractId.js';
import { upcomingRenewals } from '../domain/upcoming.js';
import { isoString } from '../domain/time.js';
import type { Line } from '../domain/contract.js';
import type { Money } from '../domain/money.js';
import type { ShopPrincipal } from './principal.js';
import type { ServiceCall } from './context.js';
import { currentContract, readContract } from './readContract.js';

export type UpcomingRenewalOut = { date: string; skipped: boolean; lines: Line[]; total: Money };

/** The next `count` (1–24) renewals of one contract of the caller's shop, as svc will make them (domain/upcoming.ts). */
export async function getUpcomingRenewals({ ctx, input }: ServiceCall<{ principal: ShopPrincipal; contractId: string; count?: number }>): Promise<{ upcoming: UpcomingRenewalOut[] }> {
  assertContractId(input.contractId);
  const row = await currentContract(ctx, await readContract(ctx, input.principal, input.contractId));
  const upcoming = upcomingRenewals(row, ctx.clock.now(), input.count ?? 6);
  return { upcoming: upcoming.map((u) => ({ date: isoString(u.date), skipped: u.skipped, lines: u.lines, total: u.total })) };
}
