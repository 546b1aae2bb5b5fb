import { customerRows, deleteShopRows, eraseCustomerRows } from '../db/privacy.js';
import { toContract, toContractEvent } from '../domain/resources.js';
import type { ServiceContext } from './context.js';

/**
 * Privacy duties, whichever platform asks (its compliance webhooks) or an operator (the CLI): a customer's personal
 * data (email, shipping address) erased wherever svc holds it — the contracts, the contracts carried by stored
 * webhook deliveries and recorded idempotent results, the compliance payloads; a shop's every row deleted; and an
 * export of all svc holds about a customer.
 */

export async function eraseCustomer(ctx: ServiceContext, shopId: string, shopDomain: string, customerId: string): Promise<void> {
  await ctx.db.transaction((run) => eraseCustomerRows(run, shopId, shopDomain, customerId));
}

export async function eraseShop(ctx: ServiceContext, shopId: string, shopDomain: string): Promise<void> {
  await ctx.db.transaction((run) => deleteShopRows(run, shopId, shopDomain));
}

/** Everything svc holds about one customer of a shop, as the API shows it (the shipping address included). */
export async function exportCustomer(ctx: ServiceContext, shopDomain: string, customerId: string) {
  const { contracts, events, deliveries, requests } = await ctx.db.withSession((run) => customerRows(run, shopDomain, customerId));
  return {
    shop: shopDomain,
    customerId,
    contracts: contracts.map((c) => ({ ...toContract(c), events: events.filter((e) => e.contractId === c.id).map(toContractEvent) })),
    webhookDeliveriesCarryingTheCustomer: deliveries,
    complianceRequests: requests.map((r) => ({ topic: r.topic, receivedAt: new Date(r.received_at).toISOString() })),
  };
}
