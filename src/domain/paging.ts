import { z } from 'zod';
import { fitsInt8 } from './ids.js';
import { invalidRequest } from './errors.js';

/** Pages of every list (contracts, events): 1 to 100 items, 50 by default, and an opaque cursor. */
export const PAGE_LIMIT = { min: 1, max: 100, default: 50 } as const;

const limitText = `${PAGE_LIMIT.min} to ${PAGE_LIMIT.max}`;

/** The page size as a number (MCP arguments): optional, the default applies when absent. */
export const PageLimit = z.number().int().min(PAGE_LIMIT.min).max(PAGE_LIMIT.max);
/** The page size in a query string (API): text coerced to a number, defaulting to 50. */
export const PageLimitQuery = z.coerce.number().int().min(PAGE_LIMIT.min).max(PAGE_LIMIT.max).default(PAGE_LIMIT.default);
export const PAGE_LIMIT_DESCRIPTION = `Page size, ${limitText} (default ${PAGE_LIMIT.default}).`;

export const Cursor = z.string().max(200);

/** Cursors are opaque to clients: the last id of the page, base64url-encoded. */
export function encodeCursor(id: string): string {
  return Buffer.from(`id:${id}`).toString('base64url');
}

export function decodeCursor(cursor: string, path = 'cursor'): string {
  const m = /^id:(\d+)$/.exec(Buffer.from(cursor, 'base64url').toString());
  if (!m || !fitsInt8(m[1])) throw invalidRequest('The cursor is not valid; use nextCursor from a previous page.', [{ path, message: 'invalid cursor' }]);
  return m[1];
}

/** A page of `limit` from rows fetched with `limit + 1`: the items, and the cursor after the last when there are more. */
export function toPage<R extends { id: string }, T>(rows: R[], limit: number, map: (r: R) => T): { items: T[]; nextCursor: string | null } {
  const page = rows.slice(0, limit);
  return { items: page.map(map), nextCursor: rows.length > limit ? encodeCursor(page[page.length - 1].id) : null };
}
