import type { ContractPlan } from '../domain/changes.js';
import type { ContractRow } from '../db/schema.js';

/**
 * What svc asks of the platform the contracts belong to (PRODUCT §9). Services ask the port; nothing else knows
 * which platform runs. Two implementations: standalone (svc's own table is the truth, below) and the e-commerce
 * platform's (call it first, then commit the mirror).
 */
export interface PlatformPort {
  readonly name: 'standalone' | 'shopify';
  /**
   * True when carrying out a change calls outside svc: the change path then leases the contract for the change
   * (commitContractChange.ts), so the platform sees one change at a time per contract.
   */
  readonly callsOut: boolean;
  /**
   * Makes a planned change true on the platform, before svc commits it: each planned event is one step (resumed,
   * paused, cancelled, skipped, rescheduled, with its data). Returns the plan to commit (the platform's answer may
   * correct it, e.g. the next billing date it set). Throws a ServiceError (409 invalid_state, 422
   * platform_rejected, 503 platform_unavailable) when the platform refuses or cannot be reached: nothing is then
   * committed.
   */
  carryOut(change: { shopId: string; contract: ContractRow; plan: ContractPlan }): Promise<ContractPlan>;
  /**
   * Runs before a change, outside any transaction: whatever carryOut needs from svc's own database (the shop, the
   * platform's access token) is loaded here, since carryOut may run inside a transaction (the change path's locked
   * fallback, when a leased write lost) and must not wait for another connection. `retry` says carryOut asked for it
   * (a refused token): the change is then tried once more.
   */
  prepare?(shopId: string, failure?: unknown): Promise<{ retry: boolean }>;
}

/** Standalone: svc's table is the truth, so a planned change is already all there is to do. */
export const standalonePlatform: PlatformPort = {
  name: 'standalone',
  callsOut: false,
  carryOut: async ({ plan }) => plan,
};
