-- The contract filter of the list endpoint and of a bulk job's selector (domain/contractFilter.ts): a shop's
-- contracts of one customer, and those with a line of one variant (a GIN index over the lines as jsonb; the column is
-- json, kept as svc wrote it, so the index is on the cast). The customer's email is served by the prefix index of
-- migration 0014, which serves equality too.
CREATE INDEX contracts_shop_customer_idx ON subscription_contracts (shop_id, customer_id);
CREATE INDEX contracts_line_variants_idx ON subscription_contracts USING gin ((lines::jsonb) jsonb_path_ops);
