-- The take of svc_claim_webhook_deliveries (migration 0009) finds the deliveries the walk chose by id. It ran under
-- the claim's settings, which keep one generic plan per connection: a plan made while the outbox was nearly empty
-- (a dispatcher's first claims) and kept as it grew. During a billing storm (tens of thousands of deliveries written
-- within a minute) that plan read the whole of webhook_deliveries_due_idx, whose key ends with the id, to find a
-- hundred ids: ~45 ms a claim and 6,000 buffers, where the primary key needs ~300 (auto_explain). Planned at each
-- call instead, with the table's size of the moment; its walk needs no such care (it reads the index in order and
-- stops).
ALTER FUNCTION svc_take_webhook_deliveries(bigint[], timestamptz, timestamptz) SET plan_cache_mode = force_custom_plan;
