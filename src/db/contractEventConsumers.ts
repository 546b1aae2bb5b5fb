/**
 * The consumers of contract events that must see every committed event and nothing rolled back: each entry is a
 * data-modifying CTE that the change path (db/contractWrites.ts) adds to the very statement that writes the events,
 * so its rows commit with the change or not at all, in both strategies (the batched optimistic write and the locked
 * one).
 *
 * A consumer reads the relation `committed_events (id, contract_id, shop_id, type, at, contract_version, contract)`:
 * the events of this commit, each with the contract's version right after it and the contract as a client sees it
 * then (json). It writes its own rows from them. Each CTE is written `name AS (INSERT … SELECT … FROM
 * committed_events …)`; nothing reads its result.
 */

/**
 * The outbox of outgoing webhooks (PRODUCT §10): one delivery per committed event and enabled endpoint of the shop
 * that subscribed to its type. The dispatcher (workers/webhookDispatcher.ts) sends them.
 */
const WEBHOOK_OUTBOX = `webhook_outbox AS (
    INSERT INTO webhook_deliveries (endpoint_id, shop_id, contract_id, event_id, contract_version, type, contract, next_attempt_at, created_at)
    SELECT w.id, ce.shop_id, ce.contract_id, ce.id, ce.contract_version, ce.type, ce.contract, ce.at, ce.at
      FROM committed_events ce
      JOIN webhook_endpoints w ON w.shop_id = ce.shop_id AND w.status = 'enabled'
                              AND (w.events = '{*}' OR ce.type = ANY (w.events))
  )`;

export const CONTRACT_EVENT_CONSUMERS: readonly string[] = [WEBHOOK_OUTBOX];
