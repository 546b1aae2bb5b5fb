-- Webhooks in: the digest of each delivery's topic, shop and raw body. The topic, the shop and the webhook id come
-- in headers the platform's HMAC does not cover, so a signed body sent again under a fresh webhook id is still the
-- same delivery: the digest is unique, and a second delivery of it is a duplicate whatever its id. (Null for the
-- rows before this migration, and for a processed app/uninstalled or shop/redact: their bodies repeat from one
-- installation to the next, see webhookChecks.ts.)
ALTER TABLE platform_webhooks ADD COLUMN body_digest bytea;
CREATE UNIQUE INDEX platform_webhooks_body_digest_key ON platform_webhooks (body_digest);

-- When the platform last refused svc's access to the shop: it answered 401 to the access token, and then refused
-- to refresh it. That is what confirms an uninstall (app/uninstalled, shop/redact) when svc, having met the refusal
-- first, holds no token left to ask with. Cleared by the next token exchange (the shop installed again).
ALTER TABLE platform_installations ADD COLUMN access_refused_at timestamptz(3);
