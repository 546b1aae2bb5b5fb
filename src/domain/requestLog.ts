import { z } from 'zod';
import { invalidRequest } from './errors.js';

/** How long a request stays in the log. */
export const REQUEST_LOG_RETENTION_DAYS = 14;
export const REQUEST_LOG_RETENTION_MS = REQUEST_LOG_RETENTION_DAYS * 24 * 60 * 60 * 1000;

/** Longest user agent and idempotency key kept; anything longer is cut (the API refuses idempotency keys over 255). */
export const MAX_USER_AGENT = 512;
export const MAX_IDEMPOTENCY_KEY = 255;
/** Longest path kept (query included). */
export const MAX_PATH = 2048;

/**
 * One request as the log keeps it, as the writer buffers it (short names: a batch is sent as one JSON array). Every
 * text in it is already free of secrets. `t` is milliseconds since the epoch, `d` the duration in microseconds.
 */
export type RequestLogEntry = {
  s: string; // shop id
  k: string | null; // key id (null: an OAuth request)
  f: string | null; // key fingerprint
  g: string | null; // OAuth grant id (the connection)
  t: number;
  m: string; // method
  p: string; // path, query included
  tool: string | null; // MCP tool(s)
  st: number; // HTTP status
  ms: number | null; // MCP: the status the API gives a refused tool call's error code
  e: string | null; // error code
  d: number;
  rid: string; // request id
  ik: string | null; // Idempotency-Key
  ip: string | null;
  ua: string | null; // User-Agent
};

/** A logged request as the admin API shows it. */
export const RequestLogRecord = z.object({
  id: z.string(),
  at: z.string().describe('When the answer went out (ISO 8601 UTC).'),
  keyId: z.string().nullable().describe('The API key the request came with; null for a request of a connected app (OAuth).'),
  fingerprint: z.string().nullable().describe('The key\'s fingerprint (first 12 hex digits of its SHA-256); null for a connected app.'),
  connectionId: z.string().nullable().describe('A connected app\'s request (OAuth, on /mcp): the connection\'s id; null for a key\'s.'),
  connectionName: z.string().nullable().describe('The connected app\'s name, as the merchant approved it.'),
  method: z.string(),
  path: z.string().describe('The URL as requested, query included, with anything that looks like a secret replaced.'),
  mcpTool: z.string().nullable().describe('MCP: the tool called (several, comma-separated, for a batch).'),
  status: z.number().int().describe('The HTTP status of the answer. An MCP exchange answers 200 even when a tool call in it was refused: see mcpStatus.'),
  mcpStatus: z
    .number()
    .int()
    .nullable()
    .describe('MCP: a refused tool call (or a request the protocol refused) travels in a 200 answer; this is the status the API gives its errorCode (403 for insufficient_scope, 404 for not_found …). null for every other request.'),
  errorCode: z.string().nullable(),
  durationMs: z.number(),
  requestId: z.string(),
  idempotencyKey: z.string().nullable(),
  ip: z.string().nullable(),
  userAgent: z.string().nullable(),
});
export type RequestLogRecord = z.infer<typeof RequestLogRecord>;

/** `2xx`, `4xx`, `5xx` (1xx and 3xx too) or one status code: the range of statuses it selects. */
export const RequestLogStatus = z
  .string()
  .regex(/^([1-5]xx|[1-5]\d\d)$/, 'must be 2xx, 4xx, 5xx or a status code such as 404');
export function statusRange(filter: string | undefined): { min: number; max: number } {
  if (!filter) return { min: 100, max: 599 };
  if (filter.endsWith('xx')) {
    const c = Number(filter[0]) * 100;
    return { min: c, max: c + 99 };
  }
  const code = Number(filter);
  return { min: code, max: code };
}

/** Where a page of the log ends: the last row's time and id, opaque to clients. */
export type RequestLogPosition = { atMs: number; id: string };

export function encodeLogCursor(p: RequestLogPosition): string {
  return Buffer.from(`log:${p.atMs}:${p.id}`).toString('base64url');
}

export function decodeLogCursor(cursor: string): RequestLogPosition {
  const m = /^log:(\d{1,15}):(\d{1,18})$/.exec(Buffer.from(cursor, 'base64url').toString());
  if (!m) throw invalidRequest('The cursor is not valid; use nextCursor from a previous page.', [{ path: 'cursor', message: 'invalid cursor' }]);
  return { atMs: Number(m[1]), id: m[2] };
}
