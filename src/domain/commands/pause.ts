import { need } from '../permissions.js';
import { z } from 'zod';
import { stateOf } from '../contract.js';
import { iso, parseUtcTimestamp } from '../time.js';
import { defineCommand, SHOP_ACTORS, oneEvent } from './command.js';
import { FutureTimestamp, futureTimestamps } from './dates.js';

export const pause = defineCommand({
  name: 'pause',
  policy: { permission: need('contracts', 'write'), actors: SHOP_ACTORS },
  input: z
    .strictObject({ resumeAt: FutureTimestamp('When the contract resumes by itself').optional() })
    .meta({ description: 'Pause; without resumeAt the contract stays paused until resumed.' }),
  allowedFrom: ['ACTIVE', 'PAUSED'],
  events: ['contract.paused', 'contract.pause_updated'],
  check: (input, now) => futureTimestamps(input, ['resumeAt'], now),
  decide(contract, input, now) {
    const alreadyPaused = contract.status === 'PAUSED';
    const next = stateOf(contract);
    next.status = 'PAUSED';
    next.pausedAt = alreadyPaused && contract.pausedAt ? contract.pausedAt : now;
    next.resumeAt = input.resumeAt ? parseUtcTimestamp(input.resumeAt) : null;
    return oneEvent(contract, next, alreadyPaused ? 'contract.pause_updated' : 'contract.paused', {
      resumeAt: iso(next.resumeAt),
      previousResumeAt: alreadyPaused ? iso(contract.resumeAt) : undefined,
    });
  },
});
