/**
 * Runs the same statement for many concurrent callers as ONE statement over all their inputs.
 *
 * Why: on a machine where the database shares the CPUs, the cost of a hot request is dominated by messages between
 * processes, not by the work inside them (waking a database backend costs tens of microseconds of CPU on each side;
 * the index lookup itself costs a few). A statement over 20 inputs costs about what a statement over one does, so
 * under load the per-request cost falls with the batch size, and a write batch commits once for all its callers
 * (group commit).
 *
 * How: a call waits for the end of the current turn of the event loop, so every call made in that turn goes in one
 * batch; when `maxInFlight` batches are already at the database, calls wait for one of them to return and then go
 * together. So batches are small at low load (a single call goes out at once, alone) and grow with the load, and the
 * added latency is bounded by one round trip of the statement.
 *
 * A batch that fails with an error that says nothing about the database being down (a bad input, say) is retried
 * one input at a time, so one caller's trouble never fails the others. Results come back in input order.
 *
 * DataLoader batches the same way, but has no bound on batches in flight, which is what makes batches grow under
 * load; this class is small enough to own.
 */
export class Batcher<I, O> {
  private queue: { input: I; resolve: (o: O) => void; reject: (e: unknown) => void }[] = [];
  private inFlight = 0;
  private scheduled = false;
  /** Statements run and inputs they carried, since start (inputs / batches = the mean batch size). */
  readonly stats = { batches: 0, inputs: 0 };

  constructor(
    private readonly run: (inputs: I[]) => Promise<O[]>,
    private readonly opts: {
      /** Inputs in one statement at most. */
      maxBatch?: number;
      /** Statements at the database at once (each on its own connection). */
      maxInFlight?: number;
      /** True when an error means every input would fail alone too (the database is unreachable). */
      failsEveryInput?: (err: unknown) => boolean;
    } = {},
  ) {}

  load(input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ input, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.queue.length === 0 || this.inFlight >= (this.opts.maxInFlight ?? 2)) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    const maxBatch = this.opts.maxBatch ?? 100;
    while (this.queue.length > 0 && this.inFlight < (this.opts.maxInFlight ?? 2)) {
      const batch = this.queue.splice(0, maxBatch);
      this.inFlight++;
      this.stats.batches++;
      this.stats.inputs += batch.length;
      void this.execute(batch).finally(() => {
        this.inFlight--;
        this.schedule();
      });
    }
  }

  private async execute(batch: { input: I; resolve: (o: O) => void; reject: (e: unknown) => void }[]): Promise<void> {
    let outputs: O[];
    try {
      outputs = await this.run(batch.map((b) => b.input));
    } catch (err) {
      if (batch.length === 1 || this.opts.failsEveryInput?.(err)) {
        for (const b of batch) b.reject(err);
        return;
      }
      await Promise.all(batch.map((b) => this.run([b.input]).then(([o]) => b.resolve(o), b.reject)));
      return;
    }
    batch.forEach((b, i) => b.resolve(outputs[i]));
  }
}

/**
 * One instance of `create(db)` per database (a connection pool): the batches of a statement are shared by every
 * caller of that pool.
 */
export function perDatabase<D extends object, T>(create: (db: D) => T): (db: D) => T {
  const made = new WeakMap<D, T>();
  return (db) => {
    let t = made.get(db);
    if (t === undefined) made.set(db, (t = create(db)));
    return t;
  };
}
