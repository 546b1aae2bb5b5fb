import { platformUnavailable } from './adminFailures.js';

/** What the platform reports of a GraphQL call's cost (`extensions.cost`). */
export type Cost = {
  requestedQueryCost: number;
  actualQueryCost: number | null;
  throttleStatus: { maximumAvailable: number; currentlyAvailable: number; restoreRate: number };
};

/**
 * A shop's cost bucket as svc last saw it (the platform reports it on every answer), for every call of this process
 * to the shop: calls wait for capacity rather than being throttled, and a throttled call waits for the restore rate.
 *
 * Calls take their turn in the order they came (a queue: a large query is not starved by a stream of small ones),
 * and what a call was expected to cost stays counted against the bucket until its answer: the platform's report
 * cannot include calls it has not seen yet, so the level svc works with is the reported one less the calls in
 * flight. (The bucket is a leaky bucket refilled continuously at the restore rate up to its size, so a bucket kept
 * just above empty loses none of it: https://shopify.dev/docs/apps/build/apis/graphql-admin/rate-limits.)
 */
export class CostBucket {
  available: number;
  max: number;
  restoreRate: number;
  at: number;
  /** Expected costs of the calls sent and not yet answered. */
  inFlight = 0;
  /** The last call to have taken its turn: the next waits for it. */
  tail: Promise<void> = Promise.resolve();
  /** Wakes the call waiting for points when an answer tells more about the bucket than the wait was worked out from. */
  private wake: (() => void) | null = null;
  constructor(now: number) {
    // The platform's documented defaults for a standard shop, until its first answer says otherwise.
    this.max = 2000;
    this.available = 2000;
    this.restoreRate = 100;
    this.at = now;
  }
  level(now: number): number {
    return Math.min(this.max, this.available + ((now - this.at) / 1000) * this.restoreRate);
  }
  take(cost: number, now: number): void {
    this.available = this.level(now) - cost;
    this.at = now;
    this.inFlight += cost;
  }
  /** A call taken with `cost` was answered (or failed): it no longer counts as in flight. */
  answered(cost: number): void {
    this.inFlight = Math.max(0, this.inFlight - cost);
  }
  update(cost: Cost['throttleStatus'], now: number): void {
    this.max = cost.maximumAvailable;
    this.available = cost.currentlyAvailable - this.inFlight;
    this.restoreRate = cost.restoreRate || 1;
    this.at = now;
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }
  /** Milliseconds until `cost` points are there. */
  waitFor(cost: number, now: number): number {
    const missing = Math.min(cost, this.max) - this.level(now);
    return missing <= 0 ? 0 : Math.ceil((missing / this.restoreRate) * 1000);
  }

  /**
   * Waits for the call's turn (after every call that came before it) and for `cost` points, then takes them. Past the
   * budget (`left`), 503: nothing was sent. The wait is worked out again whenever an answer reports the bucket: it was
   * worked out from calls in flight at their expected cost, and their answers usually leave more than that (the
   * platform refunds what a call did not use), so a wait that ran its first course would leave a small bucket full,
   * its restore rate unused.
   */
  async turn(cost: number, left: () => number, now: () => number): Promise<void> {
    const before = this.tail;
    let done!: () => void;
    this.tail = new Promise<void>((resolve) => (done = resolve));
    try {
      await before;
      for (let wait = this.waitFor(cost, now()); wait > 0; wait = this.waitFor(cost, now())) {
        if (wait > left()) throw platformUnavailable('the shop’s API cost limit is used up', Math.ceil(wait / 1000));
        await this.sleepUnlessWoken(wait);
      }
      this.take(cost, now());
    } finally {
      done();
    }
  }

  private sleepUnlessWoken(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wake = null;
        resolve();
      }, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
