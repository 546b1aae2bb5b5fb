import type { ContractState } from '../../domain/contract.js';
import { ServiceError } from '../../domain/errors.js';
import type { Step } from '../../domain/commands/plan.js';
import type { Executed } from '../../services/platform.js';
import type { ShopifyAdmin, ShopRef } from './admin.js';

/** Contract edits on the platform: its draft flow (subscriptionContractUpdate → draft mutations → commit). */
export class ShopifyEdits {
  constructor(readonly admin: ShopifyAdmin) {}

  async execute(_shop: ShopRef, _gid: string, _before: ContractState, _step: Step, _preview: boolean): Promise<Executed> {
    throw new ServiceError('platform_rejected', 'Contract edits are not available in platform mode yet.');
  }
}
