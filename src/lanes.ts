/**
 * Maps `items` through `fn` with at most `lanes` calls in flight at once (each lane takes the next item when its
 * current one is done); the results come back in input order. For work that waits on the network, where one at a
 * time is slow and all at once would swamp the other side.
 */
export async function mapInLanes<T, R>(items: readonly T[], lanes: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(lanes, items.length) }, lane));
  return out;
}
