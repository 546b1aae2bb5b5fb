-- Platform mode's renewals: svc now subscribes to subscription_billing_attempts/success, /failure and /challenged at
-- install. A shop installed before subscribes to them at its next install step: forgetting that its webhooks are
-- registered makes reconciliation (or the merchant's next visit) register them again, which creates only the
-- subscriptions missing (and reads the shop's plan again, as an install does).
UPDATE platform_installations SET webhooks_registered_at = NULL WHERE webhooks_registered_at IS NOT NULL;
