import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { UuidId } from '../../domain/ids.js';
import { Cursor, PAGE_LIMIT_DESCRIPTION, PageLimitQuery } from '../../domain/paging.js';
import { RequestLogRecord, RequestLogStatus } from '../../domain/requestLog.js';
import { StoredText } from '../../domain/text.js';
import { parseUtcTimestamp, UtcTimestamp } from '../../domain/time.js';
import type { ShopPrincipal } from '../../services/principal.js';
import type { ServiceContext } from '../../services/context.js';
import { listRequestLog } from '../../services/listRequestLog.js';
import { ErrorEnvelope } from '../errors.js';

const RequestLogQuery = z.strictObject({
  keyId: UuidId('must be a key id from GET /admin/api/keys')
    .optional()
    .describe('Only this key\'s requests.'),
  connectionId: UuidId('must be a connection id from GET /admin/api/connections')
    .optional()
    .describe('Only this connected app\'s requests (OAuth, on /mcp).'),
  status: RequestLogStatus.optional().describe('2xx, 4xx, 5xx, or one status code such as 429; a refused MCP tool call counts with its mcpStatus.'),
  path: StoredText(200).optional().describe('Only requests whose path (query included) contains this text.'),
  before: UtcTimestamp.optional().describe('Only requests answered before this moment.'),
  cursor: Cursor.optional().describe('nextCursor of the page shown.'),
  limit: PageLimitQuery.describe(PAGE_LIMIT_DESCRIPTION),
});

const RequestLogResponse = z.object({
  requests: z.array(RequestLogRecord),
  nextCursor: z.string().nullable().describe('The older requests; null on the last page.'),
});

/**
 * The request log behind Settings → API → a key (session token): what each request of the shop's keys was and got,
 * newest first, for 14 days. Registered inside the admin API, after its session-token check.
 */
export function adminRequestLogRoutes(app: FastifyInstance, ctx: ServiceContext, principal: (req: FastifyRequest) => ShopPrincipal): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.get('/request-log', {
    schema: {
      tags: ['Admin'],
      querystring: RequestLogQuery,
      response: {
        200: RequestLogResponse,
        400: ErrorEnvelope.describe('invalid_request, naming the parameter'),
        401: ErrorEnvelope.describe('unauthorized: missing, invalid or expired session token'),
        500: ErrorEnvelope.describe('internal_error'),
        503: ErrorEnvelope.describe('unavailable'),
      },
    },
    handler: async (req) => {
      const { keyId, connectionId, status, path, before, cursor, limit } = req.query;
      return listRequestLog({
        ctx,
        input: { shopId: principal(req).shopId, keyId, connectionId, status, path: path || undefined, before: before ? parseUtcTimestamp(before)! : undefined, cursor, limit },
      });
    },
  });
}
