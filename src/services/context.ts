import type { Database } from '../db/client.js';
import { standalonePlatform, type PlatformPort } from './platform.js';

export type Clock = { now(): Date };
export const systemClock: Clock = { now: () => new Date() };

/** What every service needs: the database, the time, the policy settings and the platform. Built once at boot. */
export type ServiceContext = {
  db: Database;
  clock: Clock;
  /** API_ACCESS_FREE_UNTIL: every shop has API access before this moment. */
  freeUntil: Date | null;
  /** Where the contracts live (PRODUCT §9): svc's own table (standalone) or the platform's. */
  platform: PlatformPort;
  /** Warnings that must not fail a request (a late last-used write, say). */
  warn?: (obj: object, msg: string) => void;
};

/** A context with the defaults of standalone mode (the platform port of svc's own table). */
export function createServiceContext(c: Omit<ServiceContext, 'platform'> & { platform?: PlatformPort }): ServiceContext {
  return { ...c, platform: c.platform ?? standalonePlatform };
}

export type ServiceCall<I> = { ctx: ServiceContext; input: I };
