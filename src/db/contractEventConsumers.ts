/**
 * The consumers of contract events that must see every committed event and nothing rolled back: each entry is a
 * data-modifying CTE that the change path (db/contractWrites.ts) adds to the very statement that writes the events,
 * so its rows commit with the change or not at all, in both strategies (the batched optimistic write and the locked
 * one).
 *
 * A consumer reads the relation `committed_events (id, contract_id, shop_id, type, at, contract_version, contract,
 * data)`: the events of this commit, each with the contract's version right after it, the contract as a client sees
 * it then (JSON as text, not yet parsed: cast it to json where it is kept; never look into it, each `->` would parse
 * the whole document) and the event's data (jsonb). It writes its own rows from them. Each CTE is written
 * `name AS (INSERT … SELECT … FROM committed_events …)`; nothing reads its result.
 */

/**
 * The outbox of outgoing webhooks (docs/product.md, "Webhooks out"): one delivery per committed event and enabled
 * endpoint of the shop that subscribed to its type. The dispatcher (workers/webhookDispatcher.ts) sends them.
 */
const WEBHOOK_OUTBOX = `webhook_outbox AS (
    INSERT INTO webhook_deliveries (endpoint_id, shop_id, contract_id, event_id, contract_version, type, contract, next_attempt_at, created_at)
    SELECT w.id, ce.shop_id, ce.contract_id, ce.id, ce.contract_version, ce.type, ce.contract::json, ce.at, ce.at
      FROM committed_events ce
      JOIN webhook_endpoints w ON w.shop_id = ce.shop_id AND w.status = 'enabled'
                              AND (w.events = '{*}' OR ce.type = ANY (w.events))
  )`;

/**
 * The attempt a billing event is about, as the contract keeps it after the event: every billing event's data carries
 * it (domain/commands/billingSteps.ts attemptData). From the event's data (jsonb) rather than the rendered contract
 * (json text): a lookup in the contract's text parses the whole contract, once per field read, which during a billing
 * storm is a large part of a billed contract's write.
 */
const ATTEMPT = `CROSS JOIN LATERAL (SELECT ce.data -> 'attempt' AS a) x`;

const BILLING_ATTEMPTS_CREATED = `billing_attempts_created AS (
    INSERT INTO billing_attempts (id, shop_id, contract_id, cycle_date, attempt, trigger, status, amount, currency_code, idempotency_key, created_at)
    SELECT (a ->> 'id')::uuid, ce.shop_id, ce.contract_id, (a ->> 'cycleDate')::timestamptz, (a ->> 'attempt')::int, a ->> 'trigger', 'pending',
           (a -> 'amount' ->> 'amount')::numeric, a -> 'amount' ->> 'currencyCode',
           'svc-' || ce.contract_id || '-' || round(extract(epoch FROM (a ->> 'cycleDate')::timestamptz) * 1000)::bigint || '-' || (a ->> 'attempt'),
           (a ->> 'createdAt')::timestamptz
      FROM committed_events ce ${ATTEMPT}
     WHERE ce.type = 'billing.attempted'
  )`;

const OUTCOME_EVENTS = `ce.type IN ('billing.succeeded', 'billing.failed', 'billing.action_required')`;

/**
 * Renewals: an outcome's event completes the attempt as the contract now has it. The attempts are found by primary
 * key from an array of their ids: joined to the events alone, the planner (which cannot count them) may scan every
 * attempt of the table in each commit. The contract is named too, so that every index the planner may pick leads
 * with what is given: on a table that grew during a storm, with statistics of when it was small, it took the
 * contract's index (contract_id, created_at, id) for the id alone, a scan of the whole index in each commit, whose
 * cost grew with the table.
 */
const BILLING_ATTEMPTS_COMPLETED = `billing_attempts_completed AS (
    UPDATE billing_attempts b
       SET status = a ->> 'status', error_code = a ->> 'errorCode', platform_error_code = a ->> 'platformErrorCode',
           error_message = a ->> 'errorMessage', next_action_url = a ->> 'nextActionUrl',
           "order" = nullif((a -> 'order')::jsonb, 'null'::jsonb), completed_at = (a ->> 'completedAt')::timestamptz
      FROM committed_events ce ${ATTEMPT}
     WHERE ${OUTCOME_EVENTS} AND b.id = (a ->> 'id')::uuid AND b.contract_id = ce.contract_id
       AND b.id = ANY ((SELECT coalesce(array_agg((ce.data -> 'attempt' ->> 'id')::uuid), '{}') FROM committed_events ce WHERE ${OUTCOME_EVENTS})::uuid[])
  )`;

export const CONTRACT_EVENT_CONSUMERS: readonly string[] = [WEBHOOK_OUTBOX, BILLING_ATTEMPTS_CREATED, BILLING_ATTEMPTS_COMPLETED];
