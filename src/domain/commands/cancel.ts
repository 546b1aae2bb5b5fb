import { need } from '../permissions.js';
import { z } from 'zod';
import { stateOf } from '../contract.js';
import { StoredText } from '../text.js';
import { defineCommand, SHOP_ACTORS, oneEvent } from './command.js';

export const cancel = defineCommand({
  name: 'cancel',
  policy: { permission: need('contracts', 'write'), actors: SHOP_ACTORS },
  input: z
    .strictObject({ reason: StoredText(500).optional().describe('Why the contract was cancelled, up to 500 characters.') })
    .meta({ description: 'Cancel the contract. Final.' }),
  allowedFrom: ['ACTIVE', 'PAUSED', 'FAILED'],
  events: ['contract.cancelled'],
  decide(contract, input, now) {
    const next = stateOf(contract);
    next.status = 'CANCELLED';
    next.cancelledAt = now;
    next.cancellationReason = input.reason ?? null;
    next.pausedAt = null;
    next.resumeAt = null;
    return oneEvent(contract, next, 'contract.cancelled', { reason: next.cancellationReason });
  },
});
