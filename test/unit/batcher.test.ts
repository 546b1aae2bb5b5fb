import { describe, expect, it } from 'vitest';
import { Batcher } from '../../src/db/batcher.js';

/** A statement that records each batch it was given and answers when released. */
function recorder<I, O>(answer: (i: I) => O | Error) {
  const batches: I[][] = [];
  const pending: (() => void)[] = [];
  let hold = false;
  const run = async (inputs: I[]) => {
    batches.push(inputs);
    if (hold) await new Promise<void>((r) => pending.push(r));
    const out = inputs.map(answer);
    const bad = out.find((o) => o instanceof Error);
    if (bad) throw bad;
    return out as O[];
  };
  return {
    batches,
    run,
    hold: () => (hold = true),
    release: () => {
      hold = false;
      for (const r of pending.splice(0)) r();
    },
  };
}

describe('Batcher', () => {
  it('runs the calls made in one turn of the event loop as one batch, answering each in order', async () => {
    const r = recorder((i: number) => i * 10);
    const b = new Batcher(r.run);
    expect(await Promise.all([1, 2, 3].map((i) => b.load(i)))).toEqual([10, 20, 30]);
    expect(r.batches).toEqual([[1, 2, 3]]);
    expect(b.stats).toEqual({ batches: 1, inputs: 3 });
  });

  it('a call alone goes out alone, at once', async () => {
    const r = recorder((i: number) => i);
    const b = new Batcher(r.run);
    expect(await b.load(7)).toBe(7);
    expect(await b.load(8)).toBe(8);
    expect(r.batches).toEqual([[7], [8]]);
  });

  it('while maxInFlight batches are out, later calls wait and then go together', async () => {
    const r = recorder((i: number) => i);
    const b = new Batcher(r.run, { maxInFlight: 1 });
    r.hold();
    const first = b.load(1);
    await new Promise((res) => setImmediate(res));
    const later = [2, 3, 4].map((i) => b.load(i));
    await new Promise((res) => setTimeout(res, 10));
    expect(r.batches).toEqual([[1]]);
    r.release();
    expect(await Promise.all([first, ...later])).toEqual([1, 2, 3, 4]);
    expect(r.batches).toEqual([[1], [2, 3, 4]]);
  });

  it('splits at maxBatch', async () => {
    const r = recorder((i: number) => i);
    const b = new Batcher(r.run, { maxBatch: 2, maxInFlight: 5 });
    await Promise.all([1, 2, 3, 4, 5].map((i) => b.load(i)));
    expect(r.batches).toEqual([[1, 2], [3, 4], [5]]);
  });

  it('a batch that fails is retried one input at a time: only the bad input fails', async () => {
    const r = recorder((i: number) => (i === 2 ? new Error('bad input 2') : i));
    const b = new Batcher(r.run);
    const results = await Promise.allSettled([1, 2, 3].map((i) => b.load(i)));
    expect(results.map((x) => (x.status === 'fulfilled' ? x.value : (x.reason as Error).message))).toEqual([1, 'bad input 2', 3]);
    expect(r.batches).toEqual([[1, 2, 3], [1], [2], [3]]);
  });

  it('an error that would fail every input (the database is down) fails the batch without retries', async () => {
    const down = new Error('ECONNREFUSED');
    const r = recorder((): number | Error => down);
    const b = new Batcher(r.run, { failsEveryInput: (err) => err === down });
    const results = await Promise.allSettled([1, 2].map((i) => b.load(i)));
    expect(results.map((x) => x.status)).toEqual(['rejected', 'rejected']);
    expect(r.batches).toEqual([[1, 2]]);
  });
});
