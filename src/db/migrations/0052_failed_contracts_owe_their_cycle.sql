-- A contract's billing.status says whether a cycle is owed (docs/renewals.md): `ok` only when nothing is. A contract
-- that dunning failed (FAILED, its unpaid cycle still named) was left `ok`; it now keeps `retrying` (a payment failed;
-- resuming bills the cycle at once) or `action_required` (the customer must still authenticate).
UPDATE subscription_contracts
   SET billing_status = CASE WHEN billing_last_attempt ->> 'status' = 'action_required' THEN 'action_required' ELSE 'retrying' END
 WHERE status = 'FAILED'
   AND billing_cycle_date IS NOT NULL
   AND billing_status = 'ok'
   AND (billing_last_attempt ->> 'status') IN ('failed', 'action_required');

-- The list's billingStatus filter (payment trouble: retrying, action_required): the few such contracts of a shop, in
-- the list's id order.
CREATE INDEX contracts_shop_billing_trouble_idx ON subscription_contracts (shop_id, billing_status, id) WHERE billing_status <> 'ok';
