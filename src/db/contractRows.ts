import { plainArray } from './arrayLiterals.js';
import { batchRows } from './batchInput.js';
import { Batcher, perDatabase } from './batcher.js';
import { isDatabaseUnavailable, type Database } from './client.js';
import { CONTRACT_COLUMNS, CONTRACT_TEXT_COLUMNS, type ContractText } from './contractColumns.js';
import type { ContractRow } from './schema.js';

/**
 * The contract reads every API and MCP request makes, batched over concurrent callers (see Batcher) and prepared by
 * name. Raw SQL: a batch is an `unnest` of arrays, which the query builder cannot express. Ids leave as text, so
 * both drivers give the same row.
 */

export { CONTRACT_COLUMNS };

/**
 * The state that decides whether a key may be used now and for what: read by the request, never cached. `access` as
 * stored, `permissions` as the stored JSON's text (domain/permissions.ts keyPermissions reads both).
 */
export type KeyState = { revokedAt: Date | null; plan: string; uninstalled: boolean; access: string; permissions: unknown };
/** A key's state and the contract it asked for (null: none of the key's shop has that id). */
export type ContractWithKeyState<Row = ContractRow> = KeyState & { contract: Row | null };

// The key's state and the contract in one statement: a request whose key the process has cached confirms it and
// reads in one round trip. The contract is joined by its primary key alone (a plan that cannot go wrong, with or
// without statistics) and counts only if it belongs to the key's own shop (checked below), so a key can never read
// another shop's contract.
const contractsWithKeyStates = (columns: string) => `
  SELECT q.ord::int AS ord, k.revoked_at AS "revokedAt", s.plan, s.uninstalled_at IS NOT NULL AS uninstalled, k.access, k.permissions::text AS permissions,
         k.shop_id::text AS "keyShopId", ${columns}
    FROM ${batchRows(['$1::uuid[]', '$2::bigint[]'])} WITH ORDINALITY AS q(key_id, contract_id, ord)
    JOIN api_keys k ON k.id = q.key_id
    JOIN shops s ON s.id = k.shop_id
    LEFT JOIN subscription_contracts c ON c.id = q.contract_id`;

// The same for an OAuth grant (a connection, services/oauth/accessTokens.ts): its state in a key's shape.
const contractsWithGrantStates = (columns: string) => `
  SELECT q.ord::int AS ord, g.revoked_at AS "revokedAt", s.plan, s.uninstalled_at IS NOT NULL AS uninstalled, 'custom' AS access, g.permissions::text AS permissions,
         g.shop_id::text AS "keyShopId", ${columns}
    FROM ${batchRows(['$1::uuid[]', '$2::bigint[]'])} WITH ORDINALITY AS q(grant_id, contract_id, ord)
    JOIN oauth_grants g ON g.id = q.grant_id
    JOIN shops s ON s.id = g.shop_id
    LEFT JOIN subscription_contracts c ON c.id = q.contract_id`;

const contractsOfShops = (columns: string) => `
  SELECT q.ord::int AS ord, ${columns}
    FROM ${batchRows(['$1::bigint[]', '$2::bigint[]'])} WITH ORDINALITY AS q(shop_id, contract_id, ord)
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
function withKeyState<Row>(row: Record<string, unknown>): ContractWithKeyState<Row> {
  const mine = row.id !== null && row.shopId === row.keyShopId;
  return {
    revokedAt: row.revokedAt as Date | null,
    plan: row.plan as string,
    uninstalled: row.uninstalled as boolean,
    access: row.access as string,
    permissions: row.permissions,
    contract: mine ? (row as unknown as Row) : null,
  };
}

/** The two reads of one kind of row: of a shop, and with a key's state. */
export type ContractReads<Row> = {
  /** A contract of a shop, by id. */
  ofShop: Batcher<{ shopId: string; contractId: string }, Row | undefined>;
  /** A contract of a key's shop, with the key's state (undefined: no such key). */
  withKeyState: Batcher<{ keyId: string; contractId: string }, ContractWithKeyState<Row> | undefined>;
  /** A contract of a grant's shop, with the grant's state in a key's shape (undefined: no such grant). */
  withGrantState: Batcher<{ grantId: string; contractId: string }, ContractWithKeyState<Row> | undefined>;
};

function reads<Row>(db: Database, name: string, columns: string): ContractReads<Row> {
  const opts = { failsEveryInput: isDatabaseUnavailable };
  const ofShops = contractsOfShops(columns);
  const withKeyStates = contractsWithKeyStates(columns);
  const withGrantStates = contractsWithGrantStates(columns);
  return {
    ofShop: new Batcher(async (inputs) => {
      const rows = await db.prepared<Row & { ord: number }>(`svc_${name}_of_shops`, ofShops, [plainArray(inputs, (i) => i.shopId), plainArray(inputs, (i) => i.contractId)]);
      return byOrd(rows, inputs.length);
    }, opts),
    withKeyState: new Batcher(async (inputs) => {
      const rows = await db.prepared<Record<string, unknown> & { ord: number }>(`svc_${name}_with_key_states`, withKeyStates, [
        plainArray(inputs, (i) => i.keyId),
        plainArray(inputs, (i) => i.contractId),
      ]);
      const out = new Array<ContractWithKeyState<Row> | undefined>(inputs.length);
      for (const r of rows) out[r.ord - 1] = withKeyState<Row>(r);
      return out;
    }, opts),
    withGrantState: new Batcher(async (inputs) => {
      const rows = await db.prepared<Record<string, unknown> & { ord: number }>(`svc_${name}_with_grant_states`, withGrantStates, [
        plainArray(inputs, (i) => i.grantId),
        plainArray(inputs, (i) => i.contractId),
      ]);
      const out = new Array<ContractWithKeyState<Row> | undefined>(inputs.length);
      for (const r of rows) out[r.ord - 1] = withKeyState<Row>(r);
      return out;
    }, opts),
  };
}

/** The batched contract reads of one database (one set of batches per connection pool). */
export const contractRows = perDatabase((db: Database) => reads<ContractRow>(db, 'contracts', CONTRACT_COLUMNS));

/**
 * The same reads with the json columns as the database's text (ContractText): for a GET, which passes them on to
 * the client as they are, without parsing them into objects only to write them out again.
 */
export const contractTexts = perDatabase((db: Database) => reads<ContractText<ContractRow>>(db, 'contract_texts', CONTRACT_TEXT_COLUMNS));
