import { mkdirSync } from 'node:fs';
import type { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { schema } from './schema.js';
import { RowShapes } from './rowShapes.js';
import { rowTypes } from './timestamps.js';

/** The typed query builder, the same type over PGlite and node-postgres. */
export type Orm = PgDatabase<PgQueryResultHKT, typeof schema>;

export type RunSql = <T = Record<string, unknown>>(
  text: string,
  params?: unknown[],
  /**
   * multi: several statements, no parameters. name: a prepared statement (PostgreSQL: parsed and planned once per
   * connection). timeoutMs: in a session, how long the statement may go unanswered (sessions have no limit otherwise).
   */
  opts?: { multi?: boolean; name?: string; timeoutMs?: number },
) => Promise<T[]>;

/** Plain SQL on one connection (migrations, locks, pings). */
export interface SqlRunner {
  withSession<T>(fn: (run: RunSql) => Promise<T>): Promise<T>;
}

export interface Database extends SqlRunner {
  kind: 'pglite' | 'postgres';
  orm: Orm;
  /**
   * One statement on any connection of the pool, as a named prepared statement on PostgreSQL (parsed and planned
   * once per connection): for the hot statements the query builder cannot name (a CTE of raw SQL).
   */
  prepared<T = Record<string, unknown>>(name: string, text: string, params: unknown[]): Promise<T[]>;
  /**
   * One statement on any connection of the pool, planned anew at each run for its parameters and the tables' sizes
   * of the moment: for a batched statement over a table that grows fast (a plan PostgreSQL keeps for a named
   * statement was costed on the table as it was then).
   */
  unprepared<T = Record<string, unknown>>(text: string, params: unknown[]): Promise<T[]>;
  /**
   * Statements on one connection inside BEGIN … COMMIT (ROLLBACK when `fn` throws), with the request query timeout:
   * for raw SQL that must commit together (the contract change path's locked strategy).
   */
  transaction<T>(fn: (run: RunSql) => Promise<T>): Promise<T>;
  /**
   * Calls `onNotify` for every NOTIFY on `channel` (a dedicated connection on PostgreSQL; in-process on PGlite).
   * Resolves to a function that stops listening. On PostgreSQL a lost connection calls `onLost` (the caller retries).
   */
  listen(channel: string, onNotify: () => void, onLost?: (err: Error) => void): Promise<() => Promise<void>>;
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;
  close(): Promise<void>;
  /** PostgreSQL only: the connection pool's use, for /metrics. */
  poolStats?(): { total: number; idle: number; waiting: number; max: number };
}

/** Sees the text of every statement the query builder runs (not its parameters): for tests that count round trips. */
export type QueryObserver = (sql: string) => void;

export type DatabaseOptions =
  | { kind: 'pglite'; dataDir?: string; pglite?: PGlite; onQuery?: QueryObserver }
  | { kind: 'postgres'; url: string; searchPath?: string; poolSize?: number; onPoolError?: (err: Error) => void; onQuery?: QueryObserver };

const observing = (onQuery: QueryObserver | undefined) => (onQuery ? { logger: { logQuery: (sql: string) => onQuery(sql) } } : {});

/**
 * Opens the database chosen by config: PGlite (embedded, one process, no fsync) or PostgreSQL (production,
 * shared by any number of instances).
 */
export async function openDatabase(opts: DatabaseOptions): Promise<Database> {
  if (opts.kind === 'pglite') {
    if (opts.dataDir) mkdirSync(opts.dataDir, { recursive: true });
    // Loaded only when used: PGlite's WebAssembly Postgres is tens of megabytes a process on PostgreSQL need not hold.
    const [{ PGlite }, { drizzle: drizzlePglite }] = await Promise.all([import('@electric-sql/pglite'), import('drizzle-orm/pglite')]);
    const client = opts.pglite ?? (await PGlite.create(opts.dataDir ?? 'memory://'));
    const run: RunSql = async (text, params, o) => {
      if (o?.multi) {
        await client.exec(text);
        return [];
      }
      return (await client.query(text, params ?? [])).rows as never[];
    };
    const unnamed = async (text: string, params: unknown[]) => {
      opts.onQuery?.(text);
      return (await client.query(text, params)).rows as never[];
    };
    return {
      kind: 'pglite',
      orm: drizzlePglite(client, { schema, ...observing(opts.onQuery) }) as unknown as Orm,
      withSession: (fn) => fn(run),
      transaction: (fn) =>
        client.transaction((tx) => fn(async (text, params) => {
          opts.onQuery?.(text);
          return (await tx.query(text, params ?? [])).rows as never[];
        })),
      // PGlite plans each statement anew: a named one is the same as any other.
      prepared: async (_name, text, params) => unnamed(text, params),
      unprepared: async (text, params) => unnamed(text, params),
      listen: async (channel, onNotify) => client.listen(channel, () => onNotify()),
      ping: async () => {
        await client.query('SELECT 1');
      },
      close: async () => {
        if (!client.closed) await client.close();
      },
    };
  }

  const pool = new pg.Pool({
    connectionString: opts.url,
    max: opts.poolSize ?? 10,
    connectionTimeoutMillis: 3000,
    // A database that accepts connections but stops answering (a partition, a frozen host) would otherwise hold a
    // request for as long as the kernel keeps the socket (minutes): give up on any query unanswered this long and
    // answer 503. A `query_timeout` parameter in the URL overrides it.
    query_timeout: QUERY_TIMEOUT_MS,
    idleTimeoutMillis: 30_000,
    options: opts.searchPath ? `-c search_path=${opts.searchPath}` : undefined,
    // Rows of svc's own statements: timestamps read by position (timestamps.ts). The query builder parses its own.
    types: rowTypes,
  });
  // An idle client losing its connection must not take the process down; the next query reports it.
  pool.on('error', (err) => opts.onPoolError?.(err));
  // The pool listens on idle clients only: a checked-out client (a transaction, a session) whose connection dies
  // between two queries would emit 'error' with no listener and crash the process. Its next query fails on its
  // own (503) and the pool drops it on release, so there is nothing else to do here.
  pool.on('connect', (client) => client.on('error', () => {}));
  let closed = false;
  const shapes = new RowShapes();
  return {
    kind: 'postgres',
    orm: drizzlePg(pool, { schema, ...observing(opts.onQuery) }) as unknown as Orm,
    prepared: async (name, text, params) => {
      opts.onQuery?.(text);
      // The hot statements: rows as arrays, made objects by one literal per statement (rowShapes.ts).
      const res = await pool.query<unknown[]>({ name, text, values: params, rowMode: 'array' });
      return shapes.objects(name, res.fields, res.rows);
    },
    unprepared: async (text, params) => {
      opts.onQuery?.(text);
      return (await pool.query({ text, values: params })).rows;
    },
    withSession: async (fn) => {
      const client = await pool.connect();
      try {
        return await fn(async (text, params, o) => {
          // Sessions run migrations and hold locks: they may take as long as they need, unless told otherwise.
          const res = await client.query({
            name: o?.name,
            text,
            values: o?.multi ? undefined : (params ?? []),
            query_timeout: o?.timeoutMs ?? NO_TIMEOUT_MS,
          } as pg.QueryConfig);
          const last = Array.isArray(res) ? res[res.length - 1] : res;
          return (last?.rows ?? []) as never[];
        });
      } finally {
        client.release();
      }
    },
    transaction: async (fn) => {
      const client = await pool.connect();
      let broken = false;
      try {
        await client.query('BEGIN');
        const result = await fn(async (text, params, o) => {
          opts.onQuery?.(text);
          return (await client.query(o?.name ? { name: o.name, text, values: params ?? [] } : { text, values: params ?? [] })).rows;
        });
        await client.query('COMMIT');
        return result;
      } catch (err) {
        // A connection that failed mid-transaction is not given back to the pool for reuse.
        broken = isDatabaseUnavailable(err);
        if (!broken) await client.query('ROLLBACK').catch(() => (broken = true));
        throw err;
      } finally {
        client.release(broken);
      }
    },
    listen: async (channel, onNotify, onLost) => {
      // Its own connection, outside the pool: it stays open for as long as the listener does.
      const client = new pg.Client({ connectionString: opts.url, options: opts.searchPath ? `-c search_path=${opts.searchPath}` : undefined });
      client.on('error', (err) => onLost?.(err));
      client.on('notification', (n) => {
        if (n.channel === channel) onNotify();
      });
      await client.connect();
      await client.query(`LISTEN ${client.escapeIdentifier(channel)}`);
      return async () => {
        await client.end().catch(() => {});
      };
    },
    ping: async () => {
      await pool.query('SELECT 1');
    },
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, max: pool.options.max ?? 10 }),
    close: async () => {
      if (closed) return;
      closed = true;
      await pool.end();
    },
  };
}

/** How long a request's query may go unanswered before the database counts as unavailable. */
export const QUERY_TIMEOUT_MS = 10_000;
/** setTimeout's largest delay (about 24 days): no timeout in practice, where pg treats 0 as "use the default". */
const NO_TIMEOUT_MS = 2 ** 31 - 1;

const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'EPIPE',
  'EHOSTUNREACH',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '53300', // too_many_connections
]);

/** True when an error (or its cause chain) means the database cannot be reached, as opposed to a bad query. */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e: any = err, depth = 0; e && depth < 5; e = e.cause, depth++) {
    const code = typeof e.code === 'string' ? e.code : '';
    if (UNAVAILABLE_CODES.has(code) || code.startsWith('08')) return true;
    const msg = typeof e.message === 'string' ? e.message : '';
    if (/Connection terminated|timeout exceeded when trying to connect|Query read timeout|connection error|Cannot use a pool after calling end/i.test(msg))
      return true;
  }
  return false;
}
