import { Redis } from 'ioredis';
import type { Clock } from '../services/context.js';

/**
 * Counters for the rate limits: in this process's memory, or in Redis so that every instance shares them.
 * Fixed windows: a counter per (limit, subject, window number); the window number comes from the injected clock,
 * so tests move time instead of sleeping, and a counter is never reset, only left to expire.
 */
export interface RateLimitStore {
  readonly kind: 'memory' | 'redis';
  /** Adds one to `key` (created with a time to live of `ttlMs`) and returns the new count. */
  increment(key: string, ttlMs: number): Promise<number>;
  /** The count of `key`, 0 when there is none. */
  get(key: string): Promise<number>;
  /** Takes one back from `key` (a count reserved and not used); nothing when the key has expired. */
  decrement(key: string): Promise<void>;
  close(): Promise<void>;
}

/** One process's counters. Bounded: expired entries are swept, and past `maxEntries` the oldest go first. */
export class MemoryRateLimitStore implements RateLimitStore {
  readonly kind = 'memory' as const;
  private readonly counters = new Map<string, { count: number; expiresAt: number }>();
  private writes = 0;

  constructor(
    private readonly clock: Clock,
    private readonly maxEntries = 100_000,
  ) {}

  async increment(key: string, ttlMs: number): Promise<number> {
    const now = this.clock.now().getTime();
    if (++this.writes % 1000 === 0 || this.counters.size >= this.maxEntries) this.sweep(now);
    let entry = this.counters.get(key);
    if (!entry || entry.expiresAt <= now) {
      entry = { count: 0, expiresAt: now + ttlMs };
      this.counters.set(key, entry);
    }
    return ++entry.count;
  }

  async get(key: string): Promise<number> {
    const entry = this.counters.get(key);
    return entry && entry.expiresAt > this.clock.now().getTime() ? entry.count : 0;
  }

  async decrement(key: string): Promise<void> {
    const entry = this.counters.get(key);
    if (entry && entry.count > 0) entry.count--;
  }

  async close(): Promise<void> {
    this.counters.clear();
  }

  private sweep(now: number): void {
    for (const [key, entry] of this.counters) if (entry.expiresAt <= now) this.counters.delete(key);
    // Still full (a flood of distinct subjects): drop the oldest counters rather than grow without bound.
    for (const key of this.counters.keys()) {
      if (this.counters.size < this.maxEntries) break;
      this.counters.delete(key);
    }
  }
}

// INCR and the first PEXPIRE in one atomic step: no counter can be left without an expiry.
const INCREMENT = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n`;

// Only a counter that exists: a DECR of an expired one would make a new one without an expiry.
const DECREMENT = `
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('DECR', KEYS[1]) end
return 0`;

type WithIncrement = Redis & {
  svcRateLimitIncrement(key: string, ttlMs: number): Promise<number>;
  svcRateLimitDecrement(key: string): Promise<number>;
};

/** Counters shared by every instance on one Redis. */
export class RedisRateLimitStore implements RateLimitStore {
  readonly kind = 'redis' as const;
  private readonly redis: WithIncrement;

  constructor(
    redis: Redis,
    private readonly prefix = 'svc:ratelimit:',
  ) {
    redis.defineCommand('svcRateLimitIncrement', { numberOfKeys: 1, lua: INCREMENT });
    redis.defineCommand('svcRateLimitDecrement', { numberOfKeys: 1, lua: DECREMENT });
    this.redis = redis as WithIncrement;
  }

  async increment(key: string, ttlMs: number): Promise<number> {
    return Number(await this.redis.svcRateLimitIncrement(this.prefix + key, Math.max(1, Math.ceil(ttlMs))));
  }

  async get(key: string): Promise<number> {
    return Number((await this.redis.get(this.prefix + key)) ?? 0);
  }

  async decrement(key: string): Promise<void> {
    await this.redis.svcRateLimitDecrement(this.prefix + key);
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}

/**
 * A Redis client for the counters: commands fail fast instead of queueing while Redis is away (the limiter then
 * counts in this process's memory rather than stalling the API), and it reconnects by itself.
 */
export function connectRedis(url: string, onError: (err: Error) => void): Redis {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: 500,
    connectTimeout: 2000,
    retryStrategy: (times) => Math.min(times * 200, 2000),
  });
  redis.on('error', onError);
  return redis;
}


export type LimitState = {
  limit: number;
  /** Requests (or failures) left in the current window. */
  remaining: number;
  /** Seconds until the window ends, at least 1. */
  resetSeconds: number;
  /** consume(): this request went past the limit. peek(): nothing is left. */
  exceeded: boolean;
};

/**
 * A fixed-window limit of `limit` per `windowMs` per subject (a shop, an IP). When the store fails (Redis away), the
 * error goes to `onStoreError` and the request is counted in this process's memory instead: each instance then
 * limits on its own until the store is back, and never lets requests through unlimited (a client could otherwise
 * spray keys unchecked while Redis is down). The counts taken meanwhile stay in memory; the store's resume where
 * they were.
 */
export class FixedWindowLimiter {
  private fallback: MemoryRateLimitStore | null = null;

  constructor(
    private readonly store: RateLimitStore,
    private readonly opts: { name: string; limit: number; windowMs?: number; clock: Clock; onStoreError?: (err: Error) => void },
  ) {}

  get limit(): number {
    return this.opts.limit;
  }

  private window(subject: string) {
    const windowMs = this.opts.windowMs ?? 60_000;
    const now = this.opts.clock.now().getTime();
    const index = Math.floor(now / windowMs);
    const resetAt = (index + 1) * windowMs;
    return {
      key: `${this.opts.name}:${subject}:${index}`,
      // Kept a little past the window's end so clocks a few seconds apart still share it.
      ttlMs: resetAt - now + 5000,
      resetSeconds: Math.max(1, Math.ceil((resetAt - now) / 1000)),
    };
  }

  /** The store's answer, or this process's own when the store fails. */
  private async withFallback(op: (store: RateLimitStore) => Promise<number>): Promise<number> {
    try {
      return await op(this.store);
    } catch (err) {
      this.opts.onStoreError?.(err as Error);
      this.fallback ??= new MemoryRateLimitStore(this.opts.clock);
      return op(this.fallback);
    }
  }

  /** Counts one request for `subject` and says whether it is within the limit. */
  async consume(subject: string): Promise<LimitState> {
    const w = this.window(subject);
    const count = await this.withFallback((store) => store.increment(w.key, w.ttlMs));
    return this.state(count, w.resetSeconds, count > this.opts.limit);
  }

  /**
   * Counts one for `subject` before the work it limits is done, so that requests running at once cannot all pass a
   * limit that none of them has reached yet; `release` takes it back if the work turns out not to count (in the
   * window it was taken in).
   */
  async reserve(subject: string): Promise<{ state: LimitState; release(): Promise<void> }> {
    const w = this.window(subject);
    const count = await this.withFallback((store) => store.increment(w.key, w.ttlMs));
    let released = false;
    const release = async () => {
      if (released) return;
      released = true;
      await this.withFallback((store) => store.decrement(w.key).then(() => 0));
    };
    return { state: this.state(count, w.resetSeconds, count > this.opts.limit), release };
  }

  /** The current state for `subject`, counting nothing. */
  async peek(subject: string): Promise<LimitState> {
    const w = this.window(subject);
    const count = await this.withFallback((store) => store.get(w.key));
    return this.state(count, w.resetSeconds, count >= this.opts.limit);
  }

  private state(count: number, resetSeconds: number, exceeded: boolean): LimitState {
    return { limit: this.opts.limit, remaining: Math.max(0, this.opts.limit - count), resetSeconds, exceeded };
  }
}

/**
 * The store the configuration chooses: Redis when REDIS_URL is set (limits shared by every instance), else this
 * process's memory. Redis trouble is logged at most every 30 s, not once per request.
 */
export function createRateLimitStore(opts: {
  redisUrl?: string;
  /** Namespace of the counters, so deployments with separate databases can share one Redis. */
  redisPrefix?: string;
  clock: Clock;
  warn: (obj: object, msg: string) => void;
}): { store: RateLimitStore; onStoreError: (err: Error) => void } {
  let lastWarning = 0;
  const onStoreError = (err: Error) => {
    const now = Date.now();
    if (now - lastWarning < 30_000) return;
    lastWarning = now;
    opts.warn({ err: { message: err.message } }, "rate-limit store unavailable: counting in this process's memory until it is back");
  };
  if (!opts.redisUrl) return { store: new MemoryRateLimitStore(opts.clock), onStoreError };
  return { store: new RedisRateLimitStore(connectRedis(opts.redisUrl, onStoreError), opts.redisPrefix), onStoreError };
}
