import { z } from 'zod';
import { BillingInterval } from '../../contract.js';
import { iso, parseUtcTimestamp } from '../../time.js';
import { FutureTimestamp } from '../dates.js';
import { defineEditOperation } from './operation.js';

/**
 * The longest period a client may set, per interval: 5 years, as far ahead as a resume or a reschedule may be
 * (docs/product.md §3). Longer periods put renewals past any date a calendar of the API can write.
 */
export const MAX_INTERVAL_COUNT = { DAY: 1825, WEEK: 260, MONTH: 60, YEAR: 5 } as const;
const PERIOD_RULE = `must make a period of at most 5 years: DAY 1 to ${MAX_INTERVAL_COUNT.DAY}, WEEK 1 to ${MAX_INTERVAL_COUNT.WEEK}, MONTH 1 to ${MAX_INTERVAL_COUNT.MONTH}, YEAR 1 to ${MAX_INTERVAL_COUNT.YEAR}`;

export const setFrequency = defineEditOperation({
  op: 'set_frequency',
  input: z
    .strictObject({
      op: z.literal('set_frequency'),
      interval: BillingInterval,
      intervalCount: z
        .number()
        .int()
        .min(1)
        .max(MAX_INTERVAL_COUNT.DAY, PERIOD_RULE)
        .describe(`Every how many intervals: a period of at most 5 years (DAY 1 to ${MAX_INTERVAL_COUNT.DAY}, WEEK 1 to ${MAX_INTERVAL_COUNT.WEEK}, MONTH 1 to ${MAX_INTERVAL_COUNT.MONTH}, YEAR 1 to ${MAX_INTERVAL_COUNT.YEAR}).`),
      nextBillingDate: FutureTimestamp('Optional: the next billing date under the new frequency').optional(),
    })
    // Past the largest of all (DAY's) the count's own maximum has said so already.
    .refine((o) => o.intervalCount > MAX_INTERVAL_COUNT.DAY || o.intervalCount <= MAX_INTERVAL_COUNT[o.interval], { path: ['intervalCount'], message: PERIOD_RULE })
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
