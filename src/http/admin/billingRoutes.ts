import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { Cursor } from '../../domain/paging.js';
import { BillingAttempt } from '../../domain/resources.js';
import { Money } from '../../domain/money.js';
import type { ShopPrincipal } from '../../services/principal.js';
import { listContractBillingAttempts } from '../../services/listBillingAttempts.js';
import type { ServiceContext } from '../../services/context.js';
import { getRenewalsOverview, OVERVIEW_LIMITS } from '../../services/renewalsOverview.js';
import { ContractIdParams } from '../api/v1/schemas.js';
import { ErrorEnvelope } from '../errors.js';

const err = (d: string) => ErrorEnvelope.describe(d);
const errors = {
  400: err('invalid_request, naming the field or parameter'),
  401: err('unauthorized: missing, invalid or expired session token'),
  500: err('internal_error'),
  503: err('unavailable'),
} as const;

const AttemptsQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100).default(20).describe('Page size, 1 to 100 (default 20).'),
  cursor: Cursor.optional().describe('nextCursor of the page shown.'),
});
const { days, ahead } = OVERVIEW_LIMITS;
const OverviewQuery = z.strictObject({
  days: z.coerce.number().int().min(days.min).max(days.max).default(days.default).describe(`Days of history up to today, ${days.min} to ${days.max}.`),
  ahead: z.coerce.number().int().min(ahead.min).max(ahead.max).default(ahead.default).describe(`Days after today to forecast, ${ahead.min} to ${ahead.max}.`),
});
const Billed = z.object({
  attempts: z.number().int(),
  succeeded: z.number().int(),
  failed: z.number().int(),
  failedByCode: z.array(z.object({ errorCode: z.string(), count: z.number().int() })),
  actionRequired: z.number().int().describe('Attempts waiting for the customer to authenticate.'),
  pending: z.number().int().describe('Attempts whose outcome has not arrived yet.'),
  recovered: z.number().int().describe('Successes after an unsuccessful attempt of the same cycle (a retry that worked).'),
  revenue: z.array(Money).describe('What the successes billed, per currency.'),
});
const Due = z.object({
  renewals: z.number().int().describe('Renewals due (a contract due twice counts twice).'),
  expectedRevenue: z.array(Money).describe('What they would bill at the contracts\' current totals, per currency.'),
});
const OverviewResponse = z.object({
  from: z.string(),
  today: z.string(),
  to: z.string(),
  days: z.array(z.object({ date: z.string(), billed: Billed.nullable(), due: Due.nullable() })),
  totals: z.object({ billed: Billed, due: Due }),
});

/**
 * Renewals in the admin (session token): a contract's billing attempts and the Renewals overview. (Settings →
 * Billing's dunning policy is GET/PUT /billing-policy, beside the other admin routes.) Registered inside the admin
 * API, after its session-token check.
 */
export function adminBillingRoutes(app: FastifyInstance, ctx: ServiceContext, principal: (req: FastifyRequest) => ShopPrincipal): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['Admin'];

  r.get('/contracts/:contract_id/billing-attempts', {
    schema: {
      tags,
      params: ContractIdParams,
      querystring: AttemptsQuery,
      response: { 200: z.object({ billingAttempts: z.array(BillingAttempt), nextCursor: z.string().nullable() }), ...errors, 404: err('not_found: no such contract in this shop') },
    },
    handler: async (req) => listContractBillingAttempts({ ctx, input: { principal: principal(req), contractId: req.params.contract_id, ...req.query } }),
  });

  r.get('/renewals', {
    schema: { tags, querystring: OverviewQuery, response: { 200: OverviewResponse, ...errors } },
    handler: async (req) => getRenewalsOverview({ ctx, input: { shopId: principal(req).shopId, ...req.query } }),
  });
}
