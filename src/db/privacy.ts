import type { ContractEventRow, ContractRow } from './schema.js';
import type { RunSql } from './client.js';
import { CONTRACT_COLUMNS } from './contractColumns.js';

/**
 * What the privacy duties write and read (services/privacy.ts says when): a customer's personal data erased wherever
 * svc holds it, a shop's rows deleted, a customer's data read for an export.
 */

// The personal data of a contract as clients see it (the rendered contracts that webhook deliveries and recorded
// idempotent results carry): the customer's email and the shipping address.
const ERASED_CONTRACT = (col: string) => `jsonb_set(jsonb_set(${col}::jsonb, '{customer,email}', '""'), '{shippingAddress}', 'null')::json`;

/** Erases a customer's email and shipping address everywhere svc keeps them, in the transaction of `run`. */
export async function eraseCustomerRows(run: RunSql, shopId: string, shopDomain: string, customerId: string): Promise<void> {
  await run(`UPDATE subscription_contracts SET customer_email = '', shipping_address = NULL WHERE shop_id = $1 AND customer_id = $2`, [shopId, customerId]);
  await run(`UPDATE webhook_deliveries SET contract = ${ERASED_CONTRACT('contract')} WHERE shop_id = $1 AND NOT test AND contract->'customer'->>'id' = $2`, [shopId, customerId]);
  await run(`UPDATE idempotency_keys SET result = ${ERASED_CONTRACT('result')} WHERE shop_id = $1 AND result IS NOT NULL AND result->'customer'->>'id' = $2`, [shopId, customerId]);
  await run(`UPDATE compliance_requests SET payload = payload #- '{customer,email}' WHERE shop_domain = $1 AND customer_id = $2`, [shopDomain, customerId]);
  await run(
    `UPDATE platform_webhooks SET payload = payload #- '{customer,email}'
      WHERE shop_domain = $1 AND topic LIKE 'customers/%' AND payload->'customer'->>'id' = $2`,
    [shopDomain, customerId],
  );
}

/** Every table holding a shop's rows by shop id, children first (a bulk job's items go with it: ON DELETE CASCADE). */
const SHOP_TABLES = ['bulk_jobs', 'request_log', 'oauth_tokens', 'oauth_codes', 'oauth_grants', 'webhook_deliveries', 'webhook_endpoints', 'idempotency_keys', 'contract_events', 'billing_attempts', 'billing_policies', 'shop_order_counters', 'subscription_contracts', 'catalog_variants', 'discount_codes', 'api_keys', 'platform_installations'];

/** Deletes every row of a shop, the shop's own included, in the transaction of `run`. */
export async function deleteShopRows(run: RunSql, shopId: string, shopDomain: string): Promise<void> {
  // First: writers that add a shop's rows outside a request (the request log's batches) wait on this lock, then find
  // no shop, so nothing of it is written after its rows are gone.
  await run(`SELECT 1 FROM shops WHERE id = $1 FOR UPDATE`, [shopId]);
  await run(`DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM webhook_deliveries WHERE shop_id = $1)`, [shopId]);
  for (const table of SHOP_TABLES) await run(`DELETE FROM ${table} WHERE shop_id = $1`, [shopId]);
  await run(`DELETE FROM compliance_requests WHERE shop_domain = $1`, [shopDomain]);
  await run(`DELETE FROM platform_webhooks WHERE shop_domain = $1`, [shopDomain]);
  await run(`DELETE FROM shops WHERE id = $1`, [shopId]);
}

/** What svc holds of one customer of a shop: contracts, their events, deliveries carrying the customer, requests. */
export async function customerRows(run: RunSql, shopDomain: string, customerId: string) {
  const contracts = await run<ContractRow>(
    `SELECT ${CONTRACT_COLUMNS} FROM subscription_contracts c JOIN shops s ON s.id = c.shop_id WHERE s.domain = $1 AND c.customer_id = $2 ORDER BY c.id`,
    [shopDomain, customerId],
  );
  const ids = contracts.map((c) => c.id);
  const events = ids.length
    ? await run<ContractEventRow>(
        `SELECT id::text, contract_id::text AS "contractId", shop_id::text AS "shopId", type, at, actor_type AS "actorType",
                actor_key_fingerprint AS "actorKeyFingerprint", actor_id AS "actorId", from_status AS "fromStatus", to_status AS "toStatus", data,
                contract_version AS "contractVersion"
           FROM contract_events WHERE contract_id = ANY($1::bigint[]) ORDER BY contract_id, id`,
        [ids],
      )
    : [];
  const [deliveries] = await run<{ n: number }>(
    `SELECT count(*)::int AS n FROM webhook_deliveries d JOIN shops s ON s.id = d.shop_id WHERE s.domain = $1 AND d.contract->'customer'->>'id' = $2`,
    [shopDomain, customerId],
  );
  const requests = await run<{ topic: string; received_at: Date }>(
    `SELECT topic, received_at FROM compliance_requests WHERE shop_domain = $1 AND customer_id = $2 ORDER BY id`,
    [shopDomain, customerId],
  );
  return { contracts, events, deliveries: deliveries?.n ?? 0, requests };
}

/**
 * Deletes a shop's OAuth connections (grants, with their codes and tokens), in the transaction of `run`: an uninstall
 * ends them, as the merchant would have to approve an app again in a reinstalled app anyway.
 */
export async function deleteShopOAuthGrants(run: RunSql, shopId: string): Promise<void> {
  await run(`DELETE FROM oauth_tokens WHERE shop_id = $1`, [shopId]);
  await run(`DELETE FROM oauth_codes WHERE shop_id = $1`, [shopId]);
  await run(`DELETE FROM oauth_grants WHERE shop_id = $1`, [shopId]);
}
