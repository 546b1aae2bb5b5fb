import { Readable } from 'node:stream';
import { itemRows, jobRow, jobRows, type ItemRow } from '../db/bulkJobRows.js';
import { ITEM_STATUSES, type BulkJobStatus, type ItemStatus } from '../domain/bulkJobs.js';
import { ServiceError } from '../domain/errors.js';
import { decodeCursor, encodeCursor, PAGE_LIMIT } from '../domain/paging.js';
import { toBulkJob, type BulkJob } from './bulkJobs.js';
import type { ServiceContext } from './context.js';
import type { ShopPrincipal } from './principal.js';

/** Reads of a shop's bulk jobs: one, a page of them, a page of one's results, or all its results as CSV. */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const notFound = () => new ServiceError('not_found', 'No bulk job with this id exists for this shop.');

export async function getBulkJob(ctx: ServiceContext, principal: ShopPrincipal, jobId: string): Promise<BulkJob> {
  return ctx.db.withSession(async (run) => {
    const row = UUID.test(jobId) ? await jobRow(run, principal.shopId, jobId) : null;
    if (!row) throw notFound();
    return toBulkJob(run, row);
  });
}

/** The shop's jobs, newest first, optionally of some statuses, paged. */
export async function listBulkJobs(
  ctx: ServiceContext,
  principal: ShopPrincipal,
  query: { status?: BulkJobStatus[]; limit?: number; cursor?: string },
): Promise<{ bulkJobs: BulkJob[]; nextCursor: string | null }> {
  const limit = query.limit ?? PAGE_LIMIT.default;
  const before = query.cursor ? decodeCursor(query.cursor) : null;
  return ctx.db.withSession(async (run) => {
    const rows = await jobRows(run, principal.shopId, { before, statuses: query.status ?? null, limit: limit + 1 });
    const page = rows.slice(0, limit);
    const bulkJobs = [];
    for (const r of page) bulkJobs.push(await toBulkJob(run, r));
    return { bulkJobs, nextCursor: rows.length > limit ? encodeCursor(page[page.length - 1].seq) : null };
  });
}

export type BulkJobResult = {
  contractId: string;
  status: ItemStatus;
  error?: { code: string; message: string; details?: { path: string; message: string }[] };
  before?: { total: string; currencyCode: string };
  after?: { total: string; currencyCode: string };
  eventId?: string;
};

function toResult(r: ItemRow): BulkJobResult {
  const out: BulkJobResult = { contractId: r.contractId, status: r.status };
  if (r.errorCode) out.error = { code: r.errorCode, message: r.errorMessage ?? '', ...(r.errorDetails && { details: r.errorDetails }) };
  if (r.currencyCode && r.totalBefore !== null && r.totalAfter !== null) {
    out.before = { total: r.totalBefore, currencyCode: r.currencyCode };
    out.after = { total: r.totalAfter, currencyCode: r.currencyCode };
  }
  if (r.eventId) out.eventId = r.eventId;
  return out;
}

async function ownJobId(ctx: ServiceContext, principal: ShopPrincipal, jobId: string): Promise<string> {
  const row = UUID.test(jobId) ? await ctx.db.withSession((run) => jobRow(run, principal.shopId, jobId)) : null;
  if (!row) throw notFound();
  return row.id;
}

/** A page of a job's results in contract id order, optionally of one status. */
export async function listBulkJobResults(
  ctx: ServiceContext,
  principal: ShopPrincipal,
  jobId: string,
  query: { status?: ItemStatus; limit?: number; cursor?: string },
): Promise<{ results: BulkJobResult[]; nextCursor: string | null }> {
  const id = await ownJobId(ctx, principal, jobId);
  const limit = query.limit ?? PAGE_LIMIT.default;
  const after = query.cursor ? decodeCursor(query.cursor) : null;
  const rows = await ctx.db.withSession((run) => itemRows(run, id, { after, status: query.status ?? null, limit: limit + 1 }));
  const page = rows.slice(0, limit);
  return { results: page.map(toResult), nextCursor: rows.length > limit ? encodeCursor(page[page.length - 1].contractId) : null };
}

export const RESULTS_CSV_HEADER = 'contractId,status,code,message,totalBefore,totalAfter,currencyCode';

/** A CSV field: quoted when it holds a comma, a quote or a line break; a leading =, +, - or @ defused for spreadsheets. */
function csvField(v: string | null): string {
  if (v === null) return '';
  const safe = /^[=+\-@\t\r]/.test(v) && !/^-?\d/.test(v) ? `'${v}` : v;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

/** Every result of a job as CSV, all pages in one download, read a page at a time as the client takes it. */
export async function bulkJobResultsCsv(ctx: ServiceContext, principal: ShopPrincipal, jobId: string, status?: ItemStatus): Promise<Readable> {
  const id = await ownJobId(ctx, principal, jobId);
  let after: string | null = null;
  let headerSent = false;
  return new Readable({
    async read() {
      try {
        if (!headerSent) {
          headerSent = true;
          this.push(`${RESULTS_CSV_HEADER}\r\n`);
          return;
        }
        const rows = await ctx.db.withSession((run) => itemRows(run, id, { after, status: status ?? null, limit: 5000 }));
        if (!rows.length) {
          this.push(null);
          return;
        }
        after = rows[rows.length - 1].contractId;
        this.push(
          rows
            .map((r) => [r.contractId, r.status, r.errorCode, r.errorMessage, r.totalBefore, r.totalAfter, r.currencyCode].map(csvField).join(','))
            .join('\r\n') + '\r\n',
        );
      } catch (err) {
        this.destroy(err as Error);
      }
    },
  });
}

export { ITEM_STATUSES };
