import { performance } from 'node:perf_hooks';

/**
 * How busy this instance is serving requests: the rate at which they arrive, counted by the app (one increment per
 * request, nothing to undo when a client goes away). Background work (the webhook dispatcher) reads it to give way
 * to requests while they crowd the instance, and catches up after.
 */
export class RequestLoad {
  started = 0;
  private last = { at: 0, started: 0, busy: false };

  /** True when requests arrived at `perSecond` or more since the last look (looked at most every 100 ms). */
  busy(perSecond: number, now = Date.now()): boolean {
    const elapsed = now - this.last.at;
    if (elapsed < 100) return this.last.busy;
    const rate = ((this.started - this.last.started) * 1000) / elapsed;
    this.last = { at: now, started: this.started, busy: rate >= perSecond };
    return this.last.busy;
  }
}

/**
 * How busy this process's event loop is: the share of the time it spent running code rather than waiting, over the
 * last look (looked at most every `windowMs`). Background work that a storm makes long (renewals) paces itself on
 * it: while the loop is this busy it takes no new work, so the requests the instance serves meanwhile find the loop
 * free within milliseconds instead of queueing behind the storm.
 */
export class EventLoopLoad {
  private base = performance.eventLoopUtilization();
  private at = performance.now();
  private utilization = 0;

  constructor(private readonly windowMs = 50) {}

  /** The utilization (0–1) over the last window. */
  current(): number {
    const now = performance.now();
    if (now - this.at >= this.windowMs) {
      const next = performance.eventLoopUtilization();
      this.utilization = performance.eventLoopUtilization(next, this.base).utilization;
      this.base = next;
      this.at = now;
    }
    return this.utilization;
  }

  /** Resolves once the loop's utilization is below `max` (at once when it is). */
  async below(max: number): Promise<void> {
    while (this.current() >= max) await new Promise((r) => setTimeout(r, this.windowMs));
  }
}
