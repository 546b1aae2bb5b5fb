import { Batcher, perDatabase } from './batcher.js';
import { isDatabaseUnavailable, type Database } from './client.js';
import { CONTRACT_COLUMNS } from './contractColumns.js';
import type { ContractRow } from './schema.js';

/**
 * The contract reads every API and MCP request makes, batched over concurrent callers (see Batcher) and prepared by
 * name. Raw SQL: a batch is an `unnest` of arrays, which the query builder cannot express. Ids leave as text, so
 * both drivers give the same row.
 */

export { CONTRACT_COLUMNS };

/** The state that decides whether a key may be used now: read by the request, never cached. */
export type KeyState = { revokedAt: Date | null; plan: string; uninstalled: boolean };
/** A key's state and the contract it asked for (null: none of the key's shop has that id). */
export type ContractWithKeyState = KeyState & { contract: ContractRow | null };

// The key's state and the contract in one statement: a request whose key the process has cached confirms it and
// reads in one round trip. The contract is joined by its primary key alone (a plan that cannot go wrong, with or
// without statistics) and counts only if it belongs to the key's own shop (checked below), so a key can never read
// another shop's contract.
const CONTRACTS_WITH_KEY_STATES = `
  SELECT q.ord::int AS ord, k.revoked_at AS "revokedAt", s.plan, s.uninstalled_at IS NOT NULL AS uninstalled, k.shop_id::text AS "keyShopId", ${CONTRACT_COLUMNS}
    FROM unnest($1::uuid[], $2::bigint[]) WITH ORDINALITY AS q(key_id, contract_id, ord)
    JOIN api_keys k ON k.id = q.key_id
    JOIN shops s ON s.id = k.shop_id
    LEFT JOIN subscription_contracts c ON c.id = q.contract_id`;

const CONTRACTS_OF_SHOPS = `
  SELECT q.ord::int AS ord, ${CONTRACT_COLUMNS}
    FROM unnest($1::bigint[], $2::bigint[]) WITH ORDINALITY AS q(shop_id, contract_id, ord)
    JOIN subscription_contracts c ON c.id = q.contract_id AND c.shop_id = q.shop_id`;

/**
 * Rows of a batch back in input order, by their `ord` (1-based); undefined where no row matched. Each row is given as
 * it came, `ord` and all: copying it without `ord` cost more than the rest of placing it.
 */
export function byOrd<T>(rows: (T & { ord: number })[], n: number): (T | undefined)[] {
  const out = new Array<T | undefined>(n);
  for (const r of rows) out[r.ord - 1] = r;
  return out;
}

/**
 * The key's state and, when it is the key's shop's, the contract: the row itself (it carries the key's columns
 * besides the contract's, which nothing that reads a contract row looks at; a copy without them cost a few per cent
 * of a GET).
 */
function withKeyState(row: Record<string, unknown>): ContractWithKeyState {
  const mine = row.id !== null && row.shopId === row.keyShopId;
  return { revokedAt: row.revokedAt as Date | null, plan: row.plan as string, uninstalled: row.uninstalled as boolean, contract: mine ? (row as unknown as ContractRow) : null };
}

function create(db: Database) {
  const opts = { failsEveryInput: isDatabaseUnavailable };
  return {
    /** A contract of a shop, by id. */
    ofShop: new Batcher<{ shopId: string; contractId: string }, ContractRow | undefined>(async (inputs) => {
      const rows = await db.prepared<ContractRow & { ord: number }>('svc_contracts_of_shops', CONTRACTS_OF_SHOPS, [
        inputs.map((i) => i.shopId),
        inputs.map((i) => i.contractId),
      ]);
      return byOrd(rows, inputs.length);
    }, opts),

    /** A contract of a key's shop, with the key's state (undefined: no such key). */
    withKeyState: new Batcher<{ keyId: string; contractId: string }, ContractWithKeyState | undefined>(async (inputs) => {
      const rows = await db.prepared<Record<string, unknown> & { ord: number }>('svc_contracts_with_key_states', CONTRACTS_WITH_KEY_STATES, [
        inputs.map((i) => i.keyId),
        inputs.map((i) => i.contractId),
      ]);
      const out = new Array<ContractWithKeyState | undefined>(inputs.length);
      for (const r of rows) out[r.ord - 1] = withKeyState(r);
      return out;
    }, opts),
  };
}

/** The batched contract reads of one database (one set of batches per connection pool). */
export const contractRows = perDatabase(create);
