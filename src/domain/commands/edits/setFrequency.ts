import { z } from 'zod';
import { BillingInterval } from '../../contract.js';
import { iso, parseUtcTimestamp } from '../../time.js';
import { FutureTimestamp } from '../dates.js';
import { defineEditOperation } from './operation.js';

export const setFrequency = defineEditOperation({
  op: 'set_frequency',
  input: z
    .strictObject({
      op: z.literal('set_frequency'),
      interval: BillingInterval,
      intervalCount: z.number().int().min(1).max(365).describe('Every how many intervals, 1 to 365.'),
      nextBillingDate: FutureTimestamp('Optional: the next billing date under the new frequency').optional(),
    })
    .meta({ title: 'SetFrequency', description: 'Bill and deliver every intervalCount intervals; the next billing date stays unless given.' }),
  apply(contract, input) {
    const next = input.nextBillingDate ? parseUtcTimestamp(input.nextBillingDate)! : contract.nextBillingDate;
    const policy = (interval: string, intervalCount: number) => ({ interval, intervalCount });
    return {
      contract: {
        ...contract,
        billingInterval: input.interval,
        billingIntervalCount: input.intervalCount,
        deliveryInterval: input.interval,
        deliveryIntervalCount: input.intervalCount,
        nextBillingDate: next,
      },
      change: {
        op: 'set_frequency',
        before: { billingPolicy: policy(contract.billingInterval, contract.billingIntervalCount), deliveryPolicy: policy(contract.deliveryInterval, contract.deliveryIntervalCount), nextBillingDate: iso(contract.nextBillingDate) },
        after: { billingPolicy: policy(input.interval, input.intervalCount), deliveryPolicy: policy(input.interval, input.intervalCount), nextBillingDate: iso(next) },
      },
    };
  },
});
