import type { FastifyInstance, FastifyRequest } from 'fastify';
import { validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { BULK_JOB_STATUSES, BulkJobResource, BulkJobResultResource, ITEM_STATUSES } from '../../../domain/bulkJobs.js';
import { Cursor, PAGE_LIMIT_DESCRIPTION, PageLimitQuery } from '../../../domain/paging.js';
import { cancelBulkJob, createBulkJob, CreateBulkJobBody, startBulkJob } from '../../../services/bulkJobs.js';
import { bulkJobResultsCsv, getBulkJob, listBulkJobResults, listBulkJobs } from '../../../services/bulkJobQueries.js';
import type { ServiceContext } from '../../../services/context.js';
import type { ShopPrincipal } from '../../../services/principal.js';
import { requireJsonBody } from '../../body.js';
import { ErrorEnvelope } from '../../errors.js';
import { authErrors, readErrors } from './schemas.js';

/** A bulk job's body may list up to 100,000 contract ids. */
export const BULK_JOB_BODY_LIMIT = 2 * 1024 * 1024;

const security = [{ bearerAuth: [] }];
const tags = ['Bulk jobs'];
const err = (d: string) => ErrorEnvelope.describe(d);
const JobParams = z.strictObject({ id: z.string().max(36).describe('The bulk job id.') });
const JobResponse = z.object({ bulkJob: BulkJobResource });
const notFound = { 404: err('not_found: no such bulk job in this shop') };
const changeErrors = {
  ...authErrors,
  ...notFound,
  409: err('invalid_state (not allowed from the job\'s status), too_many_jobs (10 not yet finished) or idempotency_in_progress'),
  415: err('unsupported_media_type'),
  422: err('idempotency_key_reused'),
} as const;

/** Bodies are read by the services (MCP and the admin share the rules); the schemas here document them. */
const servicesReadTheBody = (route: { httpPart?: string }) => (route.httpPart === 'body' ? (data: unknown) => ({ value: data }) : validatorCompiler(route as never));

/** The public API's bulk jobs (docs/product.md §15): thin adapters over services/bulkJobs.ts. */
export async function bulkJobRoutes(app: FastifyInstance, opts: { ctx: ServiceContext }): Promise<void> {
  const { ctx } = opts;
  const r = app.withTypeProvider<ZodTypeProvider>();
  const principal = (req: FastifyRequest): ShopPrincipal => req.principal!;

  r.post('/bulk-jobs', {
    bodyLimit: BULK_JOB_BODY_LIMIT,
    schema: {
      operationId: 'createBulkJob',
      summary: 'Make a bulk job',
      description:
        'One change (an action but bill_now, or edit operations naming lines by variant) across the contracts a selector ' +
        'matches (up to 100,000: by ids, or by filter), fixed now. With "preview": true every contract is decided and nothing ' +
        'changes anywhere: read the results, then start it. Otherwise it is queued and runs, one job per shop at a time. ' +
        'Each contract is changed at most once, with its usual event (actor bulk_job) and webhooks.',
      tags,
      security,
      body: CreateBulkJobBody,
      response: {
        201: JobResponse.describe('The job.'),
        ...changeErrors,
        400: err('invalid_request (the body; bill_now is refused), unsupported_action or key_in_url'),
        413: err('payload_too_large: body over 2 MiB'),
        422: err('too_many_contracts (the selector matches more than 100,000) or idempotency_key_reused'),
      },
    },
    validatorCompiler: servicesReadTheBody,
    preValidation: requireJsonBody,
    handler: async (req, reply) => reply.code(201).send({ bulkJob: await createBulkJob(ctx, principal(req), req.body) }),
  });

  r.get('/bulk-jobs', {
    schema: {
      operationId: 'listBulkJobs',
      summary: 'List bulk jobs',
      description: 'The shop\'s bulk jobs, newest first, optionally of some statuses (repeat status), paged.',
      tags,
      security,
      querystring: z.strictObject({
        status: z.preprocess((v) => (typeof v === 'string' ? [v] : v), z.array(z.enum(BULK_JOB_STATUSES)).min(1).max(8)).optional().describe('Only jobs with this status; repeat it for several.'),
        limit: PageLimitQuery.describe(PAGE_LIMIT_DESCRIPTION),
        cursor: Cursor.optional().describe('nextCursor from the previous page.'),
      }),
      response: { 200: z.object({ bulkJobs: z.array(BulkJobResource), nextCursor: z.string().nullable() }).describe('A page of jobs.'), ...authErrors },
    },
    handler: async (req) => listBulkJobs(ctx, principal(req), req.query),
  });

  r.get('/bulk-jobs/:id', {
    schema: { operationId: 'getBulkJob', summary: 'Get a bulk job', description: 'Its status, counts (they always add up to matched) and totals.', tags, security, params: JobParams, response: { 200: JobResponse.describe('The job.'), ...authErrors, ...notFound } },
    handler: async (req) => ({ bulkJob: await getBulkJob(ctx, principal(req), req.params.id) }),
  });

  r.get('/bulk-jobs/:id/results', {
    schema: {
      operationId: 'listBulkJobResults',
      summary: 'List a bulk job\'s results',
      description:
        'Each contract\'s outcome in contract id order: pending, succeeded (in a preview: would), failed or skipped, with why, ' +
        'and its next order total before and after. With Accept: text/csv, every result in one CSV download ' +
        '(contractId,status,code,message,totalBefore,totalAfter,currencyCode).',
      tags,
      security,
      params: JobParams,
      querystring: z.strictObject({
        status: z.enum(ITEM_STATUSES).optional().describe('Only results with this status.'),
        limit: PageLimitQuery.describe(PAGE_LIMIT_DESCRIPTION),
        cursor: Cursor.optional().describe('nextCursor from the previous page (JSON only).'),
      }),
      response: { 200: z.object({ results: z.array(BulkJobResultResource), nextCursor: z.string().nullable() }).describe('A page of results (or text/csv).'), ...readErrors, ...notFound },
    },
    handler: async (req, reply) => {
      if (/\btext\/csv\b/i.test(req.headers.accept ?? '')) {
        const csv = await bulkJobResultsCsv(ctx, principal(req), req.params.id, req.query.status);
        return reply
          .type('text/csv; charset=utf-8')
          .header('content-disposition', `attachment; filename="bulk-job-${req.params.id}.csv"`)
          .send(csv as never);
      }
      return listBulkJobResults(ctx, principal(req), req.params.id, req.query);
    },
  });

  r.post('/bulk-jobs/:id/start', {
    schema: {
      operationId: 'startBulkJob',
      summary: 'Start a previewed bulk job',
      description: 'Runs the previewed change on the same contracts, each decided again at its turn (as it then is). Only from previewed.',
      tags,
      security,
      params: JobParams,
      body: z.strictObject({}).nullish(),
      response: { 200: JobResponse.describe('The job, queued.'), ...changeErrors },
    },
    handler: async (req) => ({ bulkJob: await startBulkJob(ctx, principal(req), req.params.id) }),
  });

  r.post('/bulk-jobs/:id/cancel', {
    schema: {
      operationId: 'cancelBulkJob',
      summary: 'Cancel a bulk job',
      description: 'A previewing, previewed (discarding the preview), queued or running job: contracts not yet done are skipped (job_cancelled); those done stay done.',
      tags,
      security,
      params: JobParams,
      body: z.strictObject({}).nullish(),
      response: { 200: JobResponse.describe('The job, cancelled.'), ...changeErrors },
    },
    handler: async (req) => ({ bulkJob: await cancelBulkJob(ctx, principal(req), req.params.id) }),
  });
}
