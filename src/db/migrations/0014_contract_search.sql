-- The admin's contract search finds a shop's contracts by the start of the customer's email, in any case. A btree on
-- the lowercased email with text_pattern_ops serves `lower(customer_email) LIKE 'prefix%'` whatever the database's
-- collation (a plain btree serves LIKE only under the C collation); led by the shop, it reads that shop's matches
-- alone.
CREATE INDEX contracts_shop_email_prefix_idx ON subscription_contracts (shop_id, lower(customer_email) text_pattern_ops);
