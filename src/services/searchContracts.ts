import { and, asc, desc, eq, gt, lt, or, sql, type SQL } from 'drizzle-orm';
import { matching } from '../db/contractFilterSql.js';
import { CONTRACT_ROW, contracts } from '../db/schema.js';
import type { ContractStatus } from '../domain/contract.js';
import { criteriaOf, type ContractFilter } from '../domain/contractFilter.js';
import { fitsInt8 } from '../domain/ids.js';
import { invalidRequest } from '../domain/errors.js';
import { PAGE_LIMIT } from '../domain/paging.js';
import { toContract, type Contract } from '../domain/resources.js';
import type { ShopPrincipal } from './principal.js';
import type { ServiceCall } from './context.js';
import { resumeDueOfShop } from './listContracts.js';

/** The longest search text: an email address is at most 254 characters. */
export const SEARCH_QUERY_MAX = 254;

export type ContractSearchPage = { contracts: Contract[]; nextCursor: string | null; previousCursor: string | null };

/**
 * The admin's contract list: a shop's contracts newest first, found by what a merchant has at hand (a contract id, or
 * the start of the customer's email in any case), and by the filter a bulk job's selector takes (statuses, customer,
 * exact email, variant, next billing dates: domain/contractFilter.ts), a page at a time both ways. A query of digits
 * (a leading "#" allowed, as the admin writes ids) finds the contract with that id and any email that starts with
 * those digits. Emails match by prefix, which the index of migration 0014 serves; a substring would read every
 * contract of the shop.
 */
export async function searchContracts({
  ctx,
  input,
}: ServiceCall<{ principal: ShopPrincipal; query?: string; status?: ContractStatus | ContractStatus[]; limit?: number; cursor?: string } & Omit<ContractFilter, 'status'>>): Promise<ContractSearchPage> {
  const shopId = input.principal.shopId;
  const limit = input.limit ?? PAGE_LIMIT.default;
  const cursor = input.cursor ? decodeSearchCursor(input.cursor) : null;
  await resumeDueOfShop(ctx, shopId);

  const where: SQL[] = [matching(shopId, criteriaOf({ ...input, status: typeof input.status === 'string' ? [input.status] : input.status }))];
  const match = queryCondition(input.query);
  if (match) where.push(match);
  // Newest first: "older" pages read down from the cursor, "newer" ones up from it (and are turned back around).
  const newer = cursor?.towards === 'newer';
  if (cursor) where.push(newer ? gt(contracts.id, cursor.id) : lt(contracts.id, cursor.id));
  const rows = await ctx.db.orm
    .select(CONTRACT_ROW)
    .from(contracts)
    .where(and(...where))
    .orderBy(newer ? asc(contracts.id) : desc(contracts.id))
    .limit(limit + 1);

  const more = rows.length > limit;
  const page = rows.slice(0, limit);
  if (newer) page.reverse();
  const first = page[0]?.id;
  const last = page[page.length - 1]?.id;
  return {
    contracts: page.map((row) => toContract(row)),
    nextCursor: last !== undefined && (newer || more) ? encodeSearchCursor('older', last) : null,
    previousCursor: first !== undefined && (newer ? more : cursor !== null) ? encodeSearchCursor('newer', first) : null,
  };
}

function queryCondition(raw: string | undefined): SQL | null {
  const text = raw?.trim() ?? '';
  if (!text) return null;
  const id = /^#?(\d+)$/.exec(text)?.[1];
  // LIKE's own characters in what the merchant typed are matched as themselves.
  const prefix = text.replace(/[\\%_]/g, (c) => `\\${c}`) + '%';
  const email = sql`lower(${contracts.customerEmail}) LIKE lower(${prefix}) ESCAPE '\\'`;
  return id && fitsInt8(id) ? or(eq(contracts.id, id), email)! : email;
}

type SearchCursor = { towards: 'older' | 'newer'; id: string };

/** Cursors are opaque to clients: which way the page goes and the id it starts after, base64url-encoded. */
export const encodeSearchCursor = (towards: SearchCursor['towards'], id: string): string => Buffer.from(`${towards}:${id}`).toString('base64url');

function decodeSearchCursor(cursor: string): SearchCursor {
  const m = /^(older|newer):(\d+)$/.exec(Buffer.from(cursor, 'base64url').toString());
  if (!m || !fitsInt8(m[2])) {
    throw invalidRequest('The cursor is not valid; use nextCursor or previousCursor from a previous page.', [{ path: 'cursor', message: 'invalid cursor' }]);
  }
  return { towards: m[1] as SearchCursor['towards'], id: m[2] };
}
