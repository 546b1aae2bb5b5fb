import type { Database } from '../db/client.js';
import type { Actor } from '../domain/resources.js';

export type Clock = { now(): Date };
export const systemClock: Clock = { now: () => new Date() };

/** What every service needs: the database, the time and the policy settings. Built once at boot. */
export type ServiceContext = {
  db: Database;
  clock: Clock;
  /** API_ACCESS_FREE_UNTIL: every shop has API access before this moment. */
  freeUntil: Date | null;
  /** Warnings that must not fail a request (a late last-used write, say). */
  warn?: (obj: object, msg: string) => void;
};

/** Who is acting on a shop's data: the authenticated caller of a shop-scoped service. */
export type Caller = { shopId: string; actor: Actor };

export type ServiceCall<I> = { ctx: ServiceContext; input: I };
