import type { Database, RunSql } from '../../src/db/client.js';

/** What a process killed at that moment leaves: nothing after it runs, and nothing uncommitted stays. */
export class Crash extends Error {
  constructor() {
    super('crashed (test)');
  }
}

/**
 * The database as a process that dies at its `at`-th statement sees it: that statement and every later one throw
 * Crash, so whatever the process had begun in a transaction is rolled back and whatever it had committed stays, as a
 * kill -9 between two statements leaves it. (Statements of the query builder are not counted: the paths under test
 * speak SQL.) `count()` tells how many statements ran, to pick a moment among them.
 */
export function crashingDatabase(db: Database, at: number): Database & { count(): number; crashed(): boolean } {
  let n = 0;
  const step = () => {
    n++;
    if (n >= at) throw new Crash();
  };
  const wrap =
    (run: RunSql): RunSql =>
    async (text, params, opts) => {
      step();
      return run(text, params, opts);
    };
  return {
    ...db,
    kind: db.kind,
    orm: db.orm,
    prepared: async (name, text, params) => {
      step();
      return db.prepared(name, text, params);
    },
    unprepared: async (text, params) => {
      step();
      return db.unprepared(text, params);
    },
    transaction: (fn) => db.transaction((run) => fn(wrap(run))),
    withSession: (fn) => db.withSession((run) => fn(wrap(run))),
    listen: db.listen.bind(db),
    ping: db.ping.bind(db),
    close: async () => undefined,
    count: () => n,
    crashed: () => n >= at,
  };
}
