import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ATTEMPT_STATUSES, BillingPolicySchema } from '../../../domain/billing.js';
import { Cursor, PAGE_LIMIT_DESCRIPTION, PageLimitQuery } from '../../../domain/paging.js';
import { BillingAttempt, Line, Money } from '../../../domain/resources.js';
import { UtcTimestamp } from '../../../domain/time.js';
import { getBillingPolicy } from '../../../services/billingPolicy.js';
import type { ShopPrincipal } from '../../../services/principal.js';
import type { ServiceContext } from '../../../services/context.js';
import { listBillingAttempts, listContractBillingAttempts } from '../../../services/listBillingAttempts.js';
import { getUpcomingRenewals } from '../../../services/upcomingRenewals.js';
import { authErrors, ContractIdParams, readErrors } from './schemas.js';

const security = [{ bearerAuth: [] }];
const tags = ['Renewals'];

const PageQuery = {
  limit: PageLimitQuery.describe(PAGE_LIMIT_DESCRIPTION),
  cursor: Cursor.optional().describe('nextCursor from the previous page.'),
};
const AttemptPage = z.object({ billingAttempts: z.array(BillingAttempt), nextCursor: z.string().nullable() });
const UpcomingQuery = z.strictObject({
  count: z.coerce.number().int().min(1).max(24).default(6).describe('How many renewals, 1 to 24 (default 6).'),
});
const Upcoming = z.object({
  upcoming: z.array(
    z.object({
      date: z.string().meta({ format: 'date-time' }).describe('When svc bills this renewal.'),
      skipped: z.boolean(),
      lines: z.array(Line),
      total: Money.describe('What the renewal bills, as the contract stands now.'),
    }),
  ),
});

/**
 * Renewals, read side, for integrators: the billing attempts (a contract's, or the shop's), a contract's upcoming
 * renewals, and the shop's dunning policy. A read-only key may read all of them. bill_now is an action
 * (contracts.ts).
 */
export async function billingRoutes(app: FastifyInstance, opts: { ctx: ServiceContext }): Promise<void> {
  const { ctx } = opts;
  const r = app.withTypeProvider<ZodTypeProvider>();
  const principal = (req: FastifyRequest): ShopPrincipal => req.principal!;

  r.get('/subscription-contracts/:contract_id/billing-attempts', {
    schema: {
      operationId: 'listContractBillingAttempts',
      summary: 'List a contract\'s billing attempts',
      description: 'Every billing attempt of the contract, newest first: its cycle, number, trigger, status and outcome (the order, or the error).',
      tags,
      security,
      params: ContractIdParams,
      querystring: z.strictObject(PageQuery),
      response: { 200: AttemptPage.describe('A page of attempts, newest first; nextCursor is null on the last page.'), ...readErrors },
    },
    handler: async (req) => listContractBillingAttempts({ ctx, input: { principal: principal(req), contractId: req.params.contract_id, ...req.query } }),
  });

  r.get('/billing-attempts', {
    schema: {
      operationId: 'listBillingAttempts',
      summary: 'List the shop\'s billing attempts',
      description: 'The shop\'s billing attempts, newest first, optionally only those with one status or created since a moment.',
      tags,
      security,
      querystring: z.strictObject({
        status: z.enum(ATTEMPT_STATUSES).optional().describe('Only attempts with this status.'),
        since: UtcTimestamp.optional().describe('Only attempts created at or after this moment (ISO 8601 UTC, ending in Z).'),
        ...PageQuery,
      }),
      response: { 200: AttemptPage.describe('A page of attempts, newest first; nextCursor is null on the last page.'), ...authErrors },
    },
    handler: async (req) => listBillingAttempts({ ctx, input: { principal: principal(req), ...req.query } }),
  });

  r.get('/subscription-contracts/:contract_id/upcoming', {
    schema: {
      operationId: 'getUpcomingRenewals',
      summary: 'Get a contract\'s upcoming renewals',
      description:
        'The next renewals as svc will make them: dates, what each delivers and bills. None for a cancelled, expired or ' +
        'failed contract, or one paused with no resume date; from the resume date for one paused until then.',
      tags,
      security,
      params: ContractIdParams,
      querystring: UpcomingQuery,
      response: { 200: Upcoming.describe('The upcoming renewals, soonest first.'), ...readErrors },
    },
    handler: async (req) => getUpcomingRenewals({ ctx, input: { principal: principal(req), contractId: req.params.contract_id, count: req.query.count } }),
  });

  r.get('/billing-policy', {
    schema: {
      operationId: 'getBillingPolicy',
      summary: 'Get the shop\'s billing policy',
      description:
        'How svc recovers a failed payment: the waits before each payment retry, how out-of-stock failures are retried, ' +
        'and what happens to the contract after the last failure. The merchant sets it in Settings → Billing.',
      tags,
      security,
      response: { 200: BillingPolicySchema.describe('The shop\'s dunning policy.'), ...authErrors },
    },
    handler: async (req) => getBillingPolicy({ ctx, input: { principal: principal(req) } }),
  });
}
