-- The whole contract as the domain's state: besides status and dates, what is delivered and how often, in both modes.
--   lines           each line gains a stable id (edits name lines by it)
--   delivery_*      the delivery policy (until now it was the billing policy's)
--   shipping_address, delivery_price, discounts (jsonb)
--   totals          subtotal, discounts, shipping, total, as decimal strings in the currency's minor unit, written
--                   with every change of what they are made of (domain/contract.ts totalsOf; here for the lines alone)
ALTER TABLE subscription_contracts ADD COLUMN delivery_interval text CHECK (delivery_interval IN ('DAY', 'WEEK', 'MONTH', 'YEAR'));
ALTER TABLE subscription_contracts ADD COLUMN delivery_interval_count integer CHECK (delivery_interval_count BETWEEN 1 AND 365);
ALTER TABLE subscription_contracts ADD COLUMN shipping_address jsonb;
ALTER TABLE subscription_contracts ADD COLUMN delivery_price jsonb;
ALTER TABLE subscription_contracts ADD COLUMN discounts jsonb NOT NULL DEFAULT '[]';
ALTER TABLE subscription_contracts ADD COLUMN totals jsonb;

UPDATE subscription_contracts
   SET delivery_interval = billing_interval,
       delivery_interval_count = billing_interval_count,
       lines = (SELECT coalesce(jsonb_agg(l || jsonb_build_object('id', gen_random_uuid()::text) ORDER BY n), '[]'::jsonb)
                  FROM jsonb_array_elements(lines) WITH ORDINALITY AS t(l, n));

UPDATE subscription_contracts c
   SET totals = jsonb_build_object('subtotal', t.amount, 'discounts', t.zero, 'shipping', t.zero, 'total', t.amount, 'currencyCode', t.currency)
  FROM (SELECT x.id, x.currency, round(x.subtotal, x.digits)::text AS amount, round(0, x.digits)::text AS zero
          FROM (SELECT s.id, s.currency, s.subtotal,
                       CASE WHEN s.currency IN ('BIF', 'CLP', 'DJF', 'GNF', 'ISK', 'JPY', 'KMF', 'KRW', 'PYG', 'RWF', 'UGX', 'UYI', 'VND', 'VUV', 'XAF', 'XOF', 'XPF') THEN 0
                            WHEN s.currency IN ('BHD', 'IQD', 'JOD', 'KWD', 'LYD', 'OMR', 'TND') THEN 3 ELSE 2 END AS digits
                  FROM (SELECT c2.id, coalesce(c2.lines -> 0 -> 'price' ->> 'currencyCode', 'EUR') AS currency,
                               coalesce((SELECT sum((l -> 'price' ->> 'amount')::numeric * (l ->> 'quantity')::int) FROM jsonb_array_elements(c2.lines) l), 0) AS subtotal
                          FROM subscription_contracts c2) s) x) t
 WHERE t.id = c.id;

ALTER TABLE subscription_contracts ALTER COLUMN totals SET NOT NULL;
ALTER TABLE subscription_contracts ALTER COLUMN delivery_interval SET NOT NULL;
ALTER TABLE subscription_contracts ALTER COLUMN delivery_interval_count SET NOT NULL;

-- Platform mode: the mirror's lines get their ids, addresses and discounts from the platform. Forgetting the revision
-- of every mirrored contract and the reconciliation's watermark makes the next sweep re-read them all and take the
-- platform's whole contract (a re-read only applies a newer revision than the mirror's).
UPDATE subscription_contracts SET platform_revision = NULL WHERE platform_revision IS NOT NULL;
UPDATE platform_installations SET synced_until = NULL;

-- Standalone mode: the shop's own catalog of variants (titles and prices for edits) and its discount codes.
CREATE TABLE catalog_variants (
  shop_id bigint NOT NULL REFERENCES shops (id),
  id bigint NOT NULL,
  title text NOT NULL,
  price text NOT NULL CHECK (price ~ '^\d{1,13}(\.\d{1,4})?$'),
  currency_code text NOT NULL CHECK (currency_code ~ '^[A-Z]{3}$'),
  PRIMARY KEY (shop_id, id)
);

CREATE TABLE discount_codes (
  shop_id bigint NOT NULL REFERENCES shops (id),
  code text NOT NULL,
  title text NOT NULL,
  -- A percentage off the lines' subtotal (0 < p ≤ 100), or a fixed amount off each order: exactly one.
  percentage numeric(5, 2) CHECK (percentage > 0 AND percentage <= 100),
  amount text CHECK (amount ~ '^\d{1,13}(\.\d{1,4})?$'),
  currency_code text CHECK (currency_code ~ '^[A-Z]{3}$'),
  created_at timestamptz(3) NOT NULL,
  CHECK ((percentage IS NULL) <> (amount IS NULL)),
  CHECK ((amount IS NULL) = (currency_code IS NULL))
);
CREATE UNIQUE INDEX discount_codes_shop_code ON discount_codes (shop_id, lower(code));
