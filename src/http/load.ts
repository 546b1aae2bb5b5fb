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
