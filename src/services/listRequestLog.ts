import { selectRequestLog, type RequestLogRow } from '../db/requestLog.js';
import { decodeLogCursor, encodeLogCursor, statusRange, type RequestLogRecord } from '../domain/requestLog.js';
import { isoString } from '../domain/time.js';
import type { ServiceCall } from './context.js';

export type ListRequestLogInput = {
  shopId: string;
  keyId?: string;
  /** Only one connected app's requests (its connection id). */
  connectionId?: string;
  /** 2xx, 4xx, 5xx or one status code (of a refused MCP tool call: its mcpStatus). */
  status?: string;
  /** Only requests whose path (query included) contains this text. */
  path?: string;
  /** Only requests before this moment. */
  before?: Date;
  cursor?: string;
  limit: number;
};

/** Far enough in the future to stand for "no upper bound" in the (time, id) comparison. */
const NO_BOUND = { at: new Date(Date.UTC(9999, 0, 1)), id: '0' };

function toRecord(r: RequestLogRow): RequestLogRecord {
  return {
    id: r.id,
    at: isoString(r.at),
    keyId: r.key_id,
    fingerprint: r.key_fingerprint,
    connectionId: r.grant_id,
    connectionName: r.connection_name,
    method: r.method,
    path: r.path,
    mcpTool: r.mcp_tool,
    status: r.status,
    mcpStatus: r.mcp_status,
    errorCode: r.error_code,
    durationMs: Math.round(r.duration_us / 100) / 10,
    requestId: r.request_id,
    idempotencyKey: r.idempotency_key,
    ip: r.ip,
    userAgent: r.user_agent,
  };
}

/**
 * A shop's request log, newest first, one page at a time: only the shop's own rows (a key id of another shop finds
 * nothing). `before` and the cursor both bound the page from above; the lower of the two applies.
 */
export async function listRequestLog({ ctx, input }: ServiceCall<ListRequestLogInput>): Promise<{ requests: RequestLogRecord[]; nextCursor: string | null }> {
  const { min, max } = statusRange(input.status);
  let upTo = input.before ? { at: input.before, id: '0' } : NO_BOUND;
  if (input.cursor) {
    const c = decodeLogCursor(input.cursor);
    if (c.atMs < upTo.at.getTime() || (c.atMs === upTo.at.getTime() && BigInt(c.id) < BigInt(upTo.id))) upTo = { at: new Date(c.atMs), id: c.id };
  }
  const rows = await selectRequestLog(ctx.db, {
    shopId: input.shopId,
    keyId: input.keyId,
    grantId: input.connectionId,
    statusMin: min,
    statusMax: max,
    pathContains: input.path ?? '',
    upTo,
    limit: input.limit + 1,
  });
  const page = rows.slice(0, input.limit);
  const last = page[page.length - 1];
  return { requests: page.map(toRecord), nextCursor: rows.length > input.limit ? encodeLogCursor({ atMs: last.at.getTime(), id: last.id }) : null };
}
