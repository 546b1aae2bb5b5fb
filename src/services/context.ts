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

/**
 * The API key a request came with, when the service must confirm it. A key served from the process's cache
 * (KeyCache: ids only) has not been checked against the database by this request (`verified: false`): the service
 * confirms it with its first statement (joined to the data it reads, so it costs no extra round trip), throws the
 * AuthError if the key was revoked or the shop lost API access meanwhile, and sets `verified`.
 */
export type KeyCheck = { keyId: string; verified: boolean };

/** Who is acting on a shop's data: the authenticated caller of a shop-scoped service. */
export type Caller = { shopId: string; actor: Actor; key?: KeyCheck };

export type ServiceCall<I> = { ctx: ServiceContext; input: I };
