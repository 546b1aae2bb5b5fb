/**
 * Things expensive to build and usable by one caller at a time (an MCP server with its channel), reused across
 * requests. Grows to the peak number of concurrent requests and keeps up to `maxIdle` for the next ones.
 */
export class Pool<T> {
  private readonly idle: T[] = [];
  constructor(
    private readonly build: () => Promise<T>,
    private readonly maxIdle = 64,
  ) {}

  async use<R>(fn: (item: T) => Promise<R>): Promise<R> {
    const item = this.idle.pop() ?? (await this.build());
    try {
      return await fn(item);
    } finally {
      if (this.idle.length < this.maxIdle) this.idle.push(item);
    }
  }
}
