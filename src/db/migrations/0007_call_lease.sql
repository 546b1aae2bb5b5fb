-- Platform mode: a change carried out on the platform leases its contract for the length of the call (the lease's
-- holder, and until when), so no database connection or row lock is held while the platform answers. Cleared by the
-- change's own commit; a lease whose holder died lapses at call_lease_until.
ALTER TABLE subscription_contracts ADD COLUMN call_lease uuid, ADD COLUMN call_lease_until timestamptz(3);
