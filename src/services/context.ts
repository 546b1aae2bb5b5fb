import type { Database } from '../db/client.js';
import type { BillingGateway } from './billingGateway.js';
import { systemResolve, type AddressPolicy } from '../webhooks/addressGuard.js';
import { standalonePlatform, type PlatformPort } from './platform.js';

export type Clock = { now(): Date };
export const systemClock: Clock = { now: () => new Date() };

/** What every service needs: the database, the time, the policy settings and the platform. Built once at boot. */
export type ServiceContext = {
  db: Database;
  clock: Clock;
  /** API_ACCESS_FREE_UNTIL: every shop has API access before this moment. */
  freeUntil: Date | null;
  /** Where the contracts live (docs/product.md, "Platform mode"): svc's own table (standalone) or the platform's. */
  platform: PlatformPort;
  /** Where webhooks may be sent (WEBHOOKS_ALLOW_PRIVATE) and how names resolve: the SSRF guard's policy. */
  webhookAddresses: AddressPolicy;
  /**
   * Renewals: where attempts are charged (the test gateway in standalone mode, the platform's billing otherwise),
   * and how late a cycle may still be billed. Absent when billing is off (BILLING=off): bill_now is then refused.
   */
  billing?: { gateway: BillingGateway; maxLateMs: number };
  /** Told when a bulk job has work (made, started), so this instance's worker starts at once instead of at its next look. */
  onBulkJob?: () => void;
  /** Warnings that must not fail a request (a late last-used write, say). */
  warn?: (obj: object, msg: string) => void;
};

/** A context with the defaults: standalone mode (svc's own table), webhooks to public addresses only. */
export function createServiceContext(
  c: Omit<ServiceContext, 'platform' | 'webhookAddresses'> & { platform?: PlatformPort; webhookAddresses?: AddressPolicy },
): ServiceContext {
  return { ...c, platform: c.platform ?? standalonePlatform, webhookAddresses: c.webhookAddresses ?? { allowPrivate: false, resolve: systemResolve } };
}

export type ServiceCall<I> = { ctx: ServiceContext; input: I };
