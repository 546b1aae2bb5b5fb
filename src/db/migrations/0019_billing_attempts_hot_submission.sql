-- Recording that an attempt was handed over (submitted_at, and the gateway's reference) rewrote the attempt's row
-- with a new entry in each of its seven indexes: ~8 % of PostgreSQL's time in a billing storm (pg_stat_statements).
-- Neither column is looked up by value any more (outcomes name their attempt by id; the platform's poll finds
-- pending attempts through billing_attempts_pending_idx and maps references itself), so the reference's index goes,
-- and each page keeps room for the row's next version: the update is then a heap-only (HOT) one, with no index entry.
DROP INDEX billing_attempts_reference_idx;
ALTER TABLE billing_attempts SET (fillfactor = 80);
