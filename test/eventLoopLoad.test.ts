import { describe, expect, it } from 'vitest';
import { EventLoopLoad } from '../src/http/load.js';

/** The billing worker paces itself on this: a busy loop holds back the next batch, an idle one lets it go at once. */

const spin = (ms: number) => {
  const end = performance.now() + ms;
  while (performance.now() < end);
};
const idle = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('EventLoopLoad', () => {
  it('reads a loop kept busy as busy, and an idle one as idle', async () => {
    const load = new EventLoopLoad(50);
    spin(120);
    expect(load.current()).toBeGreaterThan(0.8);
    await idle(120);
    expect(load.current()).toBeLessThan(0.5);
  });

  it('below() waits while the loop is busier than asked, and lets go once it is not', async () => {
    const load = new EventLoopLoad(50);
    spin(120);
    let released = false;
    const waiting = load.below(0.7).then(() => (released = true));
    // Still reading the busy window: not released before the loop has been idle for a window.
    await Promise.resolve();
    expect(released).toBe(false);
    await waiting;
    expect(load.current()).toBeLessThan(0.7);
  });
});
