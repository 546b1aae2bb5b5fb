import type { ContractEventRow, ContractRow } from '../../db/schema.js';
import { toContract, toContractEvent } from '../../domain/resources.js';
import type { ServiceContext } from '../../services/context.js';
import { CONTRACT_COLUMNS } from '../../db/contractRows.js';

/**
 * The platform's privacy duties (PRODUCT §9). customers/redact erases the customer's email wherever svc holds it:
 * the mirror, the contracts carried by stored webhook deliveries and recorded idempotent results, and the
 * compliance payloads. shop/redact deletes every row of the shop. `svc compliance export` shows what svc holds.
 */

const EMAIL_PATH = `'{customer,email}'`;

export async function eraseCustomer(ctx: ServiceContext, shopId: string, shopDomain: string, customerId: string): Promise<void> {
  await ctx.db.transaction(async (run) => {
    await run(`UPDATE subscription_contracts SET customer_email = '' WHERE shop_id = $1 AND customer_id = $2`, [shopId, customerId]);
    await run(
      `UPDATE webhook_deliveries SET contract = jsonb_set(contract::jsonb, ${EMAIL_PATH}, '""')::json
        WHERE shop_id = $1 AND NOT test AND contract->'customer'->>'id' = $2`,
      [shopId, customerId],
    );
    await run(
      `UPDATE idempotency_keys SET result = jsonb_set(result::jsonb, ${EMAIL_PATH}, '""')::json
        WHERE shop_id = $1 AND result IS NOT NULL AND result->'customer'->>'id' = $2`,
      [shopId, customerId],
    );
    await run(`UPDATE compliance_requests SET payload = payload #- ${EMAIL_PATH} WHERE shop_domain = $1 AND customer_id = $2`, [shopDomain, customerId]);
    await run(
      `UPDATE platform_webhooks SET payload = payload #- ${EMAIL_PATH}
        WHERE shop_domain = $1 AND topic LIKE 'customers/%' AND payload->'customer'->>'id' = $2`,
      [shopDomain, customerId],
    );
  });
}

export async function eraseShop(ctx: ServiceContext, shopId: string, shopDomain: string): Promise<void> {
  await ctx.db.transaction(async (run) => {
    await run(`DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM webhook_deliveries WHERE shop_id = $1)`, [shopId]);
    for (const table of ['webhook_deliveries', 'webhook_endpoints', 'idempotency_keys', 'contract_events', 'subscription_contracts', 'api_keys', 'platform_installations']) {
      await run(`DELETE FROM ${table} WHERE shop_id = $1`, [shopId]);
    }
    await run(`DELETE FROM compliance_requests WHERE shop_domain = $1`, [shopDomain]);
    await run(`DELETE FROM platform_webhooks WHERE shop_domain = $1`, [shopDomain]);
    await run(`DELETE FROM shops WHERE id = $1`, [shopId]);
  });
}

/** Everything svc holds about one customer of a shop, as the API shows it. */
export async function exportCustomer(ctx: ServiceContext, shopDomain: string, customerId: string) {
  return ctx.db.withSession(async (run) => {
    const contracts = await run<ContractRow>(
      `SELECT ${CONTRACT_COLUMNS} FROM subscription_contracts c JOIN shops s ON s.id = c.shop_id WHERE s.domain = $1 AND c.customer_id = $2 ORDER BY c.id`,
      [shopDomain, customerId],
    );
    const ids = contracts.map((c) => c.id);
    const events = ids.length
      ? await run<ContractEventRow>(
          `SELECT id::text, contract_id::text AS "contractId", shop_id::text AS "shopId", type, at, actor_type AS "actorType",
                  actor_key_fingerprint AS "actorKeyFingerprint", from_status AS "fromStatus", to_status AS "toStatus", data,
                  contract_version AS "contractVersion"
             FROM contract_events WHERE contract_id = ANY($1::bigint[]) ORDER BY contract_id, id`,
          [ids],
        )
      : [];
    const deliveries = await run<{ n: number }>(
      `SELECT count(*)::int AS n FROM webhook_deliveries d JOIN shops s ON s.id = d.shop_id WHERE s.domain = $1 AND d.contract->'customer'->>'id' = $2`,
      [shopDomain, customerId],
    );
    const requests = await run<{ topic: string; received_at: Date }>(
      `SELECT topic, received_at FROM compliance_requests WHERE shop_domain = $1 AND customer_id = $2 ORDER BY id`,
      [shopDomain, customerId],
    );
    return {
      shop: shopDomain,
      customerId,
      contracts: contracts.map((c) => ({ ...toContract({ ...c, version: Number(c.version) }), events: events.filter((e) => e.contractId === c.id).map(toContractEvent) })),
      webhookDeliveriesCarryingTheCustomer: deliveries[0]?.n ?? 0,
      complianceRequests: requests.map((r) => ({ topic: r.topic, receivedAt: new Date(r.received_at).toISOString() })),
    };
  });
}
