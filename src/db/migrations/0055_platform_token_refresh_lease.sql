-- A shop's token refresh is held by a lease instead of the installation row's lock held across the call to the
-- platform (platform/shopify/tokens.ts): the refresher takes the lease in a statement of its own, calls the
-- platform with no transaction open, and writes the new tokens in another statement, giving the lease back.
-- Another refresher meanwhile waits for the lease and then finds the new tokens; a lease whose holder died lapses.
ALTER TABLE platform_installations ADD COLUMN refresh_lease uuid, ADD COLUMN refresh_lease_until timestamptz(3);
