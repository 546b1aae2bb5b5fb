-- A version per contract, bumped by every state change: actions write with "WHERE version = <read version>"
-- (optimistic concurrency), so an uncontended action is one read and one write with no explicit transaction,
-- and a concurrent writer is detected instead of overwritten.
ALTER TABLE subscription_contracts ADD COLUMN version integer NOT NULL DEFAULT 0;
