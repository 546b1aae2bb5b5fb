import { isDatabaseUnavailable, type Database } from './client.js';
import { insertRequestLogBatch } from './requestLog.js';
import type { RequestLogEntry } from '../domain/requestLog.js';

export type RequestLogWriterOptions = {
  /** Entries held at most; past it the oldest are dropped (and counted). */
  maxBuffered?: number;
  /** Entries that make a batch: a full batch is written at once. */
  batchSize?: number;
  /** Entries per INSERT at most while a backlog is written (more than one batch waiting). */
  catchUpBatchSize?: number;
  /** How long an entry may wait for its batch to fill. */
  flushIntervalMs?: number;
  /** A failed write (the database is down, say): reported once per outage, not per batch. */
  onError?: (err: Error) => void;
};

/**
 * The request log's write side: requests hand their entry over and go on; entries are written in batches, one
 * INSERT per batch on a connection of its own, at most one batch at the database at a time. A request never waits
 * on the log and never fails because of it.
 *
 * The buffer is bounded: while the database cannot take the batches (down, slow), entries wait in memory up to
 * `maxBuffered`; past that the oldest are dropped and counted (stats.dropped, on /metrics), so an outage costs the
 * log its oldest entries and nothing else. A failed batch goes back to the front of the buffer and is tried again
 * after `flushIntervalMs`. A batch the database refuses for what it holds (which the entries are built never to do) is
 * dropped and counted, so it cannot block the log.
 *
 * Not the Batcher (batcher.ts): that one gathers the callers of one turn of the event loop who wait for their
 * results; here nobody waits, so entries gather for up to a second, and at a few thousand requests a second a batch
 * holds a hundred rows, which the database inserts for a fraction of what one statement per turn would cost.
 *
 * Why a hundred and not more: an entry that waits for its batch outlives the garbage collector's young generation
 * and is copied into the old one; at a GET rate the API serves, batches of 500 doubled the collector's time per GET,
 * while batches of 100 leave within milliseconds and cost the database the same (`npm run bench:requestlog`;
 * docs/performance-log.md, "Figures behind the shape of the code"). Each entry waits as its JSON text, one flat
 * string, rather than as an object of fourteen fields.
 *
 * A backlog (more than a batch waiting when the database answers: it was slower than the requests came) goes in one
 * INSERT of up to a thousand rows rather than in batches of a hundred one after another: written a hundred per round
 * trip, a log that fell behind could only catch up as fast as the database answered, while its waiting entries aged
 * into the collector's old generation.
 */
export class RequestLogWriter {
  /** Each entry as its JSON text, written when it is taken: a flat string waits in memory for its batch, not an object. */
  private buffer: string[] = [];
  private writing: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private failing = false;
  private closed = false;
  private readonly maxBuffered: number;
  private readonly batchSize: number;
  private readonly catchUpBatchSize: number;
  private readonly flushIntervalMs: number;
  /** Since start: entries handed over, written, dropped (buffer full); batches written, batches that failed. */
  readonly stats = { recorded: 0, written: 0, dropped: 0, batches: 0, failures: 0 };

  constructor(
    private readonly db: Database,
    private readonly opts: RequestLogWriterOptions = {},
  ) {
    this.maxBuffered = opts.maxBuffered ?? 20_000;
    this.batchSize = opts.batchSize ?? 100;
    this.catchUpBatchSize = Math.max(this.batchSize, opts.catchUpBatchSize ?? 1000);
    this.flushIntervalMs = opts.flushIntervalMs ?? 1000;
  }

  /** Entries waiting to be written. */
  get buffered(): number {
    return this.buffer.length;
  }

  /** Takes one entry; never blocks, never throws. */
  record(entry: RequestLogEntry): void {
    if (this.closed) return;
    this.stats.recorded++;
    if (this.buffer.length >= this.maxBuffered) {
      this.buffer.shift();
      this.stats.dropped++;
    }
    this.buffer.push(JSON.stringify(entry));
    if (this.buffer.length >= this.batchSize && !this.failing) this.writeNext();
    else if (!this.timer && !this.writing) this.schedule();
  }

  /** Writes everything held now; rejects if a batch fails (what failed stays buffered). For tests and shutdown. */
  async flush(): Promise<void> {
    for (;;) {
      // A batch that ends may start the next one at once (writeNext's finally): wait until none is in flight.
      for (let batch = this.inFlight(); batch; batch = this.inFlight()) await batch;
      if (this.buffer.length === 0) return;
      if (this.timer) clearTimeout(this.timer);
      this.timer = null;
      const failuresBefore = this.stats.failures;
      this.writeNext();
      await this.writing;
      if (this.stats.failures !== failuresBefore) throw new Error('the request log could not be written');
    }
  }

  /** Writes what is held (giving up on failure) and takes no more. */
  async close(): Promise<void> {
    this.closed = true;
    try {
      await this.flush();
    } catch {
      // Counted and reported already; nothing more to do at shutdown.
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** The batch being written now, if any (read afresh: a batch that ends may have started another). */
  private inFlight(): Promise<void> | null {
    return this.writing;
  }

  private schedule(): void {
    if (this.closed && this.buffer.length === 0) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.writeNext();
    }, this.flushIntervalMs);
    this.timer.unref();
  }

  private writeNext(): void {
    if (this.writing || this.buffer.length === 0) return;
    // A batch, or less (the timer's partial batch), or a backlog of up to catchUpBatchSize.
    const batch = this.buffer.splice(0, this.catchUpBatchSize);
    this.writing = insertRequestLogBatch(this.db, batch).then(
      () => {
        this.stats.batches++;
        this.stats.written += batch.length;
        this.failing = false;
      },
      (err: Error) => {
        this.stats.failures++;
        if (!isDatabaseUnavailable(err)) {
          // Refused for what it holds, not for an outage: trying it again would block the log behind it.
          this.stats.dropped += batch.length;
          this.opts.onError?.(err);
          return;
        }
        if (!this.failing) this.opts.onError?.(err);
        this.failing = true;
        // Back to the front, the oldest dropped if the buffer filled up meanwhile.
        const room = Math.max(0, this.maxBuffered - this.buffer.length);
        const kept = batch.length > room ? batch.slice(batch.length - room) : batch;
        this.stats.dropped += batch.length - kept.length;
        this.buffer = kept.concat(this.buffer);
      },
    );
    void this.writing.finally(() => {
      this.writing = null;
      if (this.buffer.length === 0 || this.timer) return;
      // A full batch goes at once while the database takes them; after a failure, or for a partial batch, later.
      if (this.buffer.length >= this.batchSize && !this.failing) this.writeNext();
      else this.schedule();
    });
  }
}
