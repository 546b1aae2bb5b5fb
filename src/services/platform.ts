import type { ContractRow } from '../db/schema.js';
import type { MirrorMark } from '../db/contractWrites.js';
import type { Decision } from '../domain/commands/command.js';
import type { ContractState } from '../domain/contract.js';
import type { Step } from '../domain/commands/plan.js';
import type { PlatformState } from '../domain/commands/sync.js';

/**
 * What svc asks of the platform the contracts belong to. Services ask the port; nothing else knows which platform
 * runs. Two implementations: standalone (svc's own table is the truth, below) and the e-commerce platform's
 * (platform/shopify/port.ts: call it first, then commit the mirror).
 */
export interface PlatformPort {
  readonly name: 'standalone' | 'shopify';
  /**
   * True when carrying out a change calls outside svc: the change is then made under a lease of the contract
   * (services/changeContract.ts), so the platform sees one change at a time per contract and nothing is held in the
   * database while it answers.
   */
  readonly callsOut: boolean;
  /**
   * Makes one decided step true on the platform, before svc commits it. An implementation switches over
   * `step.command.name` exhaustively: a command it does not implement does not compile. Answers the decision to
   * commit (the platform's answer may correct it: the next billing date it set, the lines a draft priced) and, when
   * the platform answered with the contract, the contract as the platform now has it and its revision (whatever else
   * changed there is then recorded as a sync, actor platform). With `preview`, nothing may change on the platform:
   * the answer is what would be. Throws a ServiceError (409 invalid_state, 422 platform_rejected or invalid_edit,
   * 503 platform_unavailable) when the platform refuses or cannot be reached: nothing is then committed.
   */
  execute(execution: Execution): Promise<Executed>;
  /**
   * Runs before a change, outside any transaction: whatever execute needs from svc's own database (the shop, the
   * platform's access token) is loaded here. `retry` says execute asked for it (a refused token): the change is then
   * tried once more.
   */
  prepare?(shopId: string, failure?: unknown): Promise<{ retry: boolean }>;
}

/** One step to carry out: the contract as read (its id), its state right before the step, and the step. */
export type Execution = { shopId: string; contract: ContractRow; before: ContractState; step: Step; preview?: boolean };
export type Executed = { decision: Decision; platform?: { state: PlatformState; mark: MirrorMark } };

/** Standalone: svc's table is the truth, so a decided step is already all there is to do. */
export const standalonePlatform: PlatformPort = {
  name: 'standalone',
  callsOut: false,
  execute: async ({ step }) => ({ decision: step.decision }),
};
