-- A contract's lines, shipping address, delivery price, discounts and totals as json (kept as written) rather than
-- jsonb. svc writes them compact (JSON.stringify) and a GET passes them on as the database gives them back: as jsonb,
-- PostgreSQL rebuilt their text on every read, with a space after each `:` and `,` that svc then took out again
-- (a few per cent of a GET's CPU on both sides). Nothing looks inside them but the renewals overview (`->>`, which
-- json has too). billing_last_attempt stays jsonb: the generated billing_due_at reads it.
--
-- Existing values are rewritten compact, each object's keys in the order jsonb kept them.
CREATE FUNCTION svc_compact_json(j jsonb) RETURNS text
  LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
  CASE jsonb_typeof(j)
    WHEN 'object' THEN
      RETURN '{' || coalesce((SELECT string_agg(to_json(k)::text || ':' || svc_compact_json(v), ',' ORDER BY n)
                                FROM jsonb_each(j) WITH ORDINALITY AS t(k, v, n)), '') || '}';
    WHEN 'array' THEN
      RETURN '[' || coalesce((SELECT string_agg(svc_compact_json(e), ',' ORDER BY n)
                                FROM jsonb_array_elements(j) WITH ORDINALITY AS t(e, n)), '') || ']';
    ELSE
      RETURN j::text; -- a scalar (strings escaped as JSON), or NULL
  END CASE;
END
$$;

ALTER TABLE subscription_contracts ALTER COLUMN discounts DROP DEFAULT;
ALTER TABLE subscription_contracts
  ALTER COLUMN lines TYPE json USING svc_compact_json(lines)::json,
  ALTER COLUMN shipping_address TYPE json USING svc_compact_json(shipping_address)::json,
  ALTER COLUMN delivery_price TYPE json USING svc_compact_json(delivery_price)::json,
  ALTER COLUMN discounts TYPE json USING svc_compact_json(discounts)::json,
  ALTER COLUMN totals TYPE json USING svc_compact_json(totals)::json;
ALTER TABLE subscription_contracts ALTER COLUMN discounts SET DEFAULT '[]'::json;

DROP FUNCTION svc_compact_json(jsonb);
