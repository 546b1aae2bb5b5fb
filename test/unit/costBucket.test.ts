import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CostBucket } from '../../src/platform/shopify/costBucket.js';

/**
 * svc's model of a shop's cost bucket (docs/product.md §9, Throttling): calls wait for points, each counted at its
 * expected cost until its answer reports the bucket again. Timers and the clock are faked: nothing sleeps.
 */
describe('CostBucket.turn', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const now = () => Date.now();
  const left = () => 60_000;
  /** A small bucket (240 points, 150 restored a second) with two calls of 116 points in flight: 8 points modelled. */
  async function twoInFlight(): Promise<CostBucket> {
    const b = new CostBucket(now());
    b.update({ maximumAvailable: 240, currentlyAvailable: 240, restoreRate: 150 }, now());
    await b.turn(116, left, now);
    await b.turn(116, left, now);
    return b;
  }

  it('a waiting call goes as soon as an answer reports the points, not when its first estimate runs out', async () => {
    const b = await twoInFlight();
    let sent = false;
    const third = b.turn(116, left, now).then(() => (sent = true));
    await vi.advanceTimersByTimeAsync(100);
    expect(sent).toBe(false);
    // Both answered: each used 20 of the 116 points it asked for, and the platform refunded the rest. Waiting out
    // the first estimate (720 ms) would leave the bucket full meanwhile, its restore rate lost.
    b.answered(116);
    b.answered(116);
    b.update({ maximumAvailable: 240, currentlyAvailable: 215, restoreRate: 150 }, now());
    await vi.advanceTimersByTimeAsync(0);
    expect(sent).toBe(true);
    await third;
  });

  it('without an answer, the wait ends when the restore rate has put the points back', async () => {
    const b = await twoInFlight();
    let sent = false;
    void b.turn(116, left, now).then(() => (sent = true));
    await vi.advanceTimersByTimeAsync(700);
    expect(sent).toBe(false);
    await vi.advanceTimersByTimeAsync(30);
    expect(sent).toBe(true);
  });

  it('an answer that reports fewer points than modelled makes the wait longer, and past the budget 503', async () => {
    const b = await twoInFlight();
    const budget = 1000;
    const started = Date.now();
    const third = b.turn(116, () => budget - (Date.now() - started), now);
    const outcome = third.then(
      () => 'sent',
      (err: { code?: string }) => err.code,
    );
    await vi.advanceTimersByTimeAsync(100);
    // Another app spent the bucket: empty, and the two calls still in flight.
    b.update({ maximumAvailable: 240, currentlyAvailable: 0, restoreRate: 150 }, now());
    await vi.advanceTimersByTimeAsync(0);
    expect(await outcome).toBe('platform_unavailable');
  });
});
