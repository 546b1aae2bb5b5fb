/** Where a worker's lines go (the service's logger). */
export type WorkerLog = { info(obj: object, msg: string): void; error(obj: object, msg: string): void };

/**
 * A piece of background work (docs/product.md §8: nothing correctness needs lives in one process, so every worker may run
 * on any number of instances at once): a public `tick()` that does one round of the work, and a loop that runs it at
 * once on start (catching up on what a stopped process missed) and then every `intervalMs`, never two rounds at a
 * time. Time inside a round comes from the service context's injected clock: tests move the clock and call tick()
 * instead of waiting.
 */
export abstract class Worker {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private stopped = true;
  private again = false;
  private loop: (() => Promise<void>) | null = null;

  constructor(
    /** What the log says when a round fails. */
    private readonly label: string,
    private readonly intervalMs: number,
    protected readonly log?: WorkerLog,
  ) {}

  /** One round of the work. */
  abstract tick(): Promise<unknown>;

  /** How long after a round the next one runs: the interval, unless a worker knows better. */
  protected nextDelayMs(): number {
    return this.intervalMs;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    const loop = async () => {
      if (this.stopped) return;
      this.again = false;
      // A failed round is counted by the worker itself (its stats) and retried on the next one.
      this.running = this.tick().catch((err) => {
        this.log?.error({ err: { message: (err as Error).message } }, `${this.label} failed; retrying next tick`);
      });
      await this.running;
      this.running = null;
      if (this.stopped) return;
      this.timer = setTimeout(loop, this.again ? 0 : this.nextDelayMs());
      this.timer.unref();
    };
    this.loop = loop;
    void loop();
  }

  /** Runs a round now instead of at the next interval (or right after the round under way): there is work. */
  wake(): void {
    if (this.stopped || !this.loop) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    void this.loop();
  }

  /** Stops scheduling and waits for a round in progress to finish. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }
}
