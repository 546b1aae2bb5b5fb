import type { FastifyInstance, FastifyRequest } from 'fastify';
import { validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { BULK_JOB_STATUSES, BulkJobResource, BulkJobResultResource, ITEM_STATUSES } from '../../domain/bulkJobs.js';
import { Cursor, PAGE_LIMIT_DESCRIPTION, PageLimitQuery } from '../../domain/paging.js';
import { cancelBulkJob, createBulkJob, CreateBulkJobBody, startBulkJob } from '../../services/bulkJobs.js';
import { bulkJobResultsCsv, getBulkJob, listBulkJobResults, listBulkJobs } from '../../services/bulkJobQueries.js';
import type { ServiceContext } from '../../services/context.js';
import type { ShopPrincipal } from '../../services/principal.js';
import { BULK_JOB_BODY_LIMIT } from '../api/v1/bulkJobs.js';
import { requireJsonBody } from '../body.js';
import { ErrorEnvelope } from '../errors.js';

const err = (d: string) => ErrorEnvelope.describe(d);
const readErrors = {
  400: err('invalid_request, naming the parameter'),
  401: err('unauthorized: missing, invalid or expired session token'),
  404: err('not_found: no such bulk job in this shop'),
  500: err('internal_error'),
  503: err('unavailable'),
} as const;
const changeErrors = {
  ...readErrors,
  409: err('invalid_state (not allowed from the job\'s status) or too_many_jobs (10 not yet finished)'),
  413: err('payload_too_large'),
  415: err('unsupported_media_type'),
} as const;

const JobParams = z.strictObject({ id: z.string().max(36).describe('The bulk job id.') });
const JobResponse = z.object({ bulkJob: BulkJobResource });
const NoBody = z.strictObject({}).nullish();

/**
 * Bulk jobs behind the admin (session token): the public API's routes (docs/bulk-jobs.md) over the same services,
 * with the merchant as the principal, so a job made here records `createdBy: { type: "admin" }` and its contracts'
 * events the job as their actor, exactly as a job made with a key. Registered inside the admin API, after its
 * session-token check.
 */
export function adminBulkJobRoutes(app: FastifyInstance, ctx: ServiceContext, principal: (req: FastifyRequest) => ShopPrincipal): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['Admin'];

  r.post('/bulk-jobs', {
    bodyLimit: BULK_JOB_BODY_LIMIT,
    schema: {
      tags,
      body: CreateBulkJobBody,
      response: { 201: JobResponse, ...changeErrors, 400: err('invalid_request (bill_now is refused) or unsupported_action'), 422: err('too_many_contracts') },
    },
    // The service validates the body, as it does for the API and MCP: one set of rules and messages.
    validatorCompiler: (route) => (route.httpPart === 'body' ? (data: unknown) => ({ value: data }) : validatorCompiler(route as never)),
    preValidation: requireJsonBody,
    handler: async (req, reply) => reply.code(201).send({ bulkJob: await createBulkJob(ctx, principal(req), req.body) }),
  });

  r.get('/bulk-jobs', {
    schema: {
      tags,
      querystring: z.strictObject({
        status: z.preprocess((v) => (typeof v === 'string' ? [v] : v), z.array(z.enum(BULK_JOB_STATUSES)).min(1).max(8)).optional(),
        limit: PageLimitQuery.describe(PAGE_LIMIT_DESCRIPTION),
        cursor: Cursor.optional(),
      }),
      response: { 200: z.object({ bulkJobs: z.array(BulkJobResource), nextCursor: z.string().nullable() }), ...readErrors },
    },
    handler: async (req) => listBulkJobs(ctx, principal(req), req.query),
  });

  r.get('/bulk-jobs/:id', {
    schema: { tags, params: JobParams, response: { 200: JobResponse, ...readErrors } },
    handler: async (req) => ({ bulkJob: await getBulkJob(ctx, principal(req), req.params.id) }),
  });

  r.get('/bulk-jobs/:id/results', {
    schema: {
      tags,
      params: JobParams,
      querystring: z.strictObject({ status: z.enum(ITEM_STATUSES).optional(), limit: PageLimitQuery.describe(PAGE_LIMIT_DESCRIPTION), cursor: Cursor.optional() }),
      response: { 200: z.object({ results: z.array(BulkJobResultResource), nextCursor: z.string().nullable() }), ...readErrors },
    },
    handler: async (req, reply) => {
      // Accept: text/csv: every result in one download (the page saves it as a file).
      if (/\btext\/csv\b/i.test(req.headers.accept ?? '')) {
        const csv = await bulkJobResultsCsv(ctx, principal(req), req.params.id, req.query.status);
        return reply
          .type('text/csv; charset=utf-8')
          .header('cache-control', 'no-store')
          .header('content-disposition', `attachment; filename="bulk-job-${req.params.id}.csv"`)
          .send(csv as never);
      }
      return listBulkJobResults(ctx, principal(req), req.params.id, req.query);
    },
  });

  r.post('/bulk-jobs/:id/start', {
    schema: { tags, params: JobParams, body: NoBody, response: { 200: JobResponse, ...changeErrors } },
    handler: async (req) => ({ bulkJob: await startBulkJob(ctx, principal(req), req.params.id) }),
  });

  r.post('/bulk-jobs/:id/cancel', {
    schema: { tags, params: JobParams, body: NoBody, response: { 200: JobResponse, ...changeErrors } },
    handler: async (req) => ({ bulkJob: await cancelBulkJob(ctx, principal(req), req.params.id) }),
  });
}
