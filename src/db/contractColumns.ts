import { CONTRACT_STATE_KEYS, type ContractState, type ContractStateKey } from '../domain/contract.js';
import type { WithJsonText } from '../domain/resources.js';
import { contracts, type ContractRow } from './schema.js';

/**
 * The columns of a contract's state, derived: one per key of ContractState (domain/contract.ts), under the column
 * name and SQL type the table declares for it (schema.ts, held to the migrations by test/schema.drift.test.ts). The
 * reads select them under the domain's names, and the change path's statement writes them from arrays of this list's
 * order. A new field of the state is a key of ContractState, a column of the table and a migration; no statement is
 * written by hand again.
 *
 * `json` columns are written only when the command changed them (a new object: commands never mutate one they
 * read), SQL NULL standing for "as it is": a pause does not send the lines back to the database.
 */
export type StateColumn = { readonly column: string; readonly key: ContractStateKey; readonly type: 'text' | 'int' | 'timestamptz' | 'json' | 'jsonb'; readonly json?: true };

/** The array type a state column's values travel as, from the column's SQL type. */
function arrayTypeOf(sqlType: string, key: string): StateColumn['type'] {
  if (sqlType === 'text' || sqlType === 'integer' || sqlType === 'json' || sqlType === 'jsonb') return sqlType === 'integer' ? 'int' : sqlType;
  if (/^timestamp(\s*\(\d\))? with time zone$/.test(sqlType)) return 'timestamptz';
  throw new Error(`contract state column ${key}: no array type for SQL type ${sqlType}`);
}

export const STATE_COLUMNS: readonly StateColumn[] = CONTRACT_STATE_KEYS.map((key) => {
  const column = contracts[key];
  const type = arrayTypeOf(column.getSQLType(), key);
  return type === 'json' || type === 'jsonb' ? { column: column.name, key, type, json: true } : { column: column.name, key, type };
});

/** The compiler's half of the same check: the row's fields of the state have exactly the state's types. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const rowHoldsTheState: Same<Pick<ContractRow, ContractStateKey>, ContractState> = true;
void rowHoldsTheState;

/**
 * The select list of a contract row (alias `c`): every column under the name the row type gives it. `jsonAsText`:
 * the json columns as PostgreSQL writes them, unparsed (a ContractText), for a read that only passes them on.
 */
function contractColumns(jsonAsText: boolean): string {
  const state = STATE_COLUMNS.map((c) => `c.${c.column}${jsonAsText && c.json ? '::text' : ''} AS "${c.key}"`).join(', ');
  return `
  c.id::text AS id, c.shop_id::text AS "shopId", ${state},
  c.created_at AS "createdAt", c.updated_at AS "updatedAt", c.version,
  c.platform_revision::text AS "platformRevision", c.platform_updated_at AS "platformUpdatedAt"`;
}

export const CONTRACT_COLUMNS = contractColumns(false);
export const CONTRACT_TEXT_COLUMNS = contractColumns(true);

/** A contract row whose json columns are still the database's JSON text (null stays null). */
export type ContractText<Row> = WithJsonText<Row>;
