import { createHash } from 'node:crypto';
import { z } from 'zod';
import { isTopic, type Topic } from './topics.js';

export { BILLING_ATTEMPT_TOPICS, CONFIRMED_TOPICS } from './topics.js';

/**
 * What a webhook from the platform must be before svc stores it: the platform's HMAC covers the raw body only, not
 * the headers that name the topic (X-Shopify-Topic), the shop (X-Shopify-Shop-Domain) or the delivery
 * (X-Shopify-Webhook-Id). A signed body of any topic and any shop could otherwise be sent again under another
 * topic, another shop and a fresh id. So, at receipt (no I/O: the receiver stays within the platform's 5 s):
 *
 * - the body must have its topic's shape (the documented fields svc uses, and the ones that tell the topic's body
 *   from its siblings'), so a body cannot be passed off as another topic's;
 * - where the body names its shop, that must be the shop of the header;
 * - the digest of (topic, shop, raw body) is stored with the delivery, unique: a body already received is a
 *   duplicate whatever its webhook id (receiptDigest).
 *
 * A delivery that fails a check is answered 200 and neither stored nor acted on (the receiver logs a warning, never
 * the body). Not 400: the platform retries any non-2xx answer 8 times over 4 hours
 * (https://shopify.dev/changelog/updates-to-webhook-retry-mechanism), and a subscription whose deliveries keep
 * failing can be removed (https://shopify.dev/docs/apps/build/webhooks/best-practices, "Recover from a downtime
 * event"). A signed body that fails is either a replay, which no retry would mend, or a shape the platform changed,
 * which must not cost svc its subscriptions.
 *
 * The destructive topics (app/uninstalled, shop/redact) are also confirmed with the platform before they are acted
 * on, when they are processed (uninstallConfirmation.ts).
 *
 * The shapes are the platform's documented payloads (https://shopify.dev/docs/api/webhooks, each topic's example;
 * the compliance topics: https://shopify.dev/docs/apps/build/compliance/privacy-law-compliance), the ones the
 * platform's stand-in sends (test/support/shopify/payloads.ts), and they are strict: a field a topic does not
 * document is refused, as a body with the fields of another topic must be. A payload the platform extends in a later
 * API version is then refused too, with a warning that names the field (never its value), until svc knows it: a
 * subscription's API version is svc's own choice (SHOPIFY_API_VERSION), and the signals it would miss meanwhile are
 * made up for by reconciliation, the pending-attempt poll and the token check of an uninstall.
 */

const gid = (type: string) => z.string().regex(new RegExp(`^gid://shopify/${type}/\\d{1,19}$`));
/** The platform's numeric ids (customers, contracts, shops) are JSON numbers, below 2^53. */
const numericId = z.number().int().positive();

/**
 * A topic's body exactly: the fields svc uses, as `uses` types them, and the topic's other documented fields,
 * optional and of any value; a field the topic does not document is refused. Strict, so that no body of one topic
 * (whose documented fields differ) passes for another's: a customers/redact body has customer and orders_to_redact,
 * which shop/redact does not.
 */
const exactly = (uses: z.ZodRawShape, others: readonly string[] = []) =>
  z.strictObject({ ...Object.fromEntries(others.map((k) => [k, z.unknown().optional()])), ...uses });

/**
 * subscription_contracts/*: thin; svc takes the contract's gid and the revision the signal was sent for. The body
 * does not name the shop. What protects it instead: it is only a signal. svc reads the contract again from the
 * platform with the header shop's own token and applies what the platform answers; contract ids are the platform's,
 * global, so under another shop's header the read finds nothing.
 */
const contractSignal = exactly(
  {
    admin_graphql_api_id: gid('SubscriptionContract'),
    id: z.number(),
    revision_id: z.union([z.string().regex(/^\d{1,20}$/), z.number().int().nonnegative()]),
  },
  ['billing_policy', 'currency_code', 'customer_id', 'admin_graphql_api_customer_id', 'delivery_policy', 'status', 'admin_graphql_api_origin_order_id', 'origin_order_id'],
);

/**
 * subscription_billing_cycles/skip|unskip: the contract by its numeric id, and the cycle. No shop in the body; a
 * signal like the contract topics (svc reads the contract again), so protected the same way.
 */
const billingCycleSignal = exactly({ subscription_contract_id: numericId, cycle_index: z.number().int() }, [
  'cycle_start_at',
  'cycle_end_at',
  'contract_edit',
  'billing_attempt_expected_date',
  'skipped',
  'edited',
]);

/**
 * subscription_billing_attempts/success|failure|challenged: the attempt (gid and numeric id), its idempotency key and
 * its contract. No shop in the body; a signal too: svc finds its own attempt by the key, reads the attempt from the
 * platform with the header shop's token and records what the attempt's state says (attempt ids are global, so under
 * another shop's header the read finds nothing). The payload is the documented one
 * (https://shopify.dev/docs/api/webhooks, topic subscription_billing_attempts/success).
 */
const billingAttemptSignal = exactly(
  {
    admin_graphql_api_id: gid('SubscriptionBillingAttempt'),
    id: numericId,
    idempotency_key: z.string().min(1).max(255),
    subscription_contract_id: numericId,
  },
  ['order_id', 'admin_graphql_api_order_id', 'admin_graphql_api_subscription_contract_id', 'ready', 'error_message', 'error_code'],
);

/**
 * app/uninstalled: the shop resource (the REST Admin API's Shop, as the webhook documents it). `myshopify_domain` is
 * the header's domain (`domain` may be a custom domain).
 */
const SHOP_RESOURCE_FIELDS = [
  'name', 'email', 'domain', 'province', 'country', 'address1', 'zip', 'city', 'source', 'phone', 'latitude', 'longitude', 'primary_locale',
  'address2', 'created_at', 'updated_at', 'country_code', 'country_name', 'currency', 'customer_email', 'timezone', 'iana_timezone', 'shop_owner',
  'money_format', 'money_with_currency_format', 'weight_unit', 'province_code', 'taxes_included', 'auto_configure_tax_inclusivity', 'tax_shipping',
  'county_taxes', 'plan_display_name', 'plan_name', 'has_discounts', 'has_gift_cards', 'google_apps_domain', 'google_apps_login_enabled',
  'money_in_emails_format', 'money_with_currency_in_emails_format', 'eligible_for_payments', 'requires_extra_payments_agreement', 'password_enabled',
  'has_storefront', 'finances', 'primary_location_id', 'checkout_api_supported', 'multi_location_enabled', 'setup_required', 'pre_launch_enabled',
  'enabled_presentment_currencies', 'transactional_sms_disabled', 'marketing_sms_consent_enabled_at_checkout', 'cookie_consent_level',
  'visitor_tracking_consent_preference', 'force_ssl', 'eligible_for_card_reader_giveaway',
] as const;
const shopResource = exactly({ id: numericId, myshopify_domain: z.string() }, SHOP_RESOURCE_FIELDS);

/**
 * app_subscriptions/update: names its shop by the platform's shop id only (`admin_graphql_api_shop_id`), which svc
 * does not keep. What protects it instead: it is only a signal; svc reads the shop's app subscriptions from the
 * platform with the shop's own token, and the plan follows what the platform answers.
 */
const appSubscriptionUpdate = exactly({
  app_subscription: exactly({ admin_graphql_api_id: gid('AppSubscription'), admin_graphql_api_shop_id: gid('Shop'), status: z.string() }, [
    'name',
    'created_at',
    'updated_at',
    'currency',
    'capped_amount',
  ]),
});

/**
 * bulk_operations/finish: no shop in the body. It only wakes the shop's import, which asks the platform for the
 * operation's status itself (and polls without it).
 */
const bulkOperationFinish = exactly({ admin_graphql_api_id: gid('BulkOperation'), status: z.string() }, ['completed_at', 'created_at', 'error_code', 'type']);

// The compliance topics (https://shopify.dev/docs/apps/build/compliance/privacy-law-compliance).
const complianceBase = { shop_id: numericId, shop_domain: z.string() };
const customer = exactly({ id: numericId }, ['email', 'phone']);
const customersDataRequest = exactly({ ...complianceBase, customer, data_request: exactly({ id: numericId }) }, ['orders_requested']);
const customersRedact = exactly({ ...complianceBase, customer, orders_to_redact: z.array(z.unknown()) });
const shopRedact = exactly(complianceBase);

type TopicBody = {
  schema: z.ZodType;
  /** Where the body names its shop (the header's domain); absent where it does not, as the schema's comment says. */
  shopOf?: (body: Record<string, unknown>) => unknown;
};

const shopDomainOf = (b: Record<string, unknown>) => b.shop_domain;

/** Every topic's body shape (topics.ts): a topic without one does not compile. */
const BODIES: { readonly [T in Topic]: TopicBody } = {
  'subscription_contracts/create': { schema: contractSignal },
  'subscription_contracts/update': { schema: contractSignal },
  'subscription_contracts/activate': { schema: contractSignal },
  'subscription_contracts/pause': { schema: contractSignal },
  'subscription_contracts/cancel': { schema: contractSignal },
  'subscription_contracts/expire': { schema: contractSignal },
  'subscription_contracts/fail': { schema: contractSignal },
  'subscription_billing_cycles/skip': { schema: billingCycleSignal },
  'subscription_billing_cycles/unskip': { schema: billingCycleSignal },
  'subscription_billing_attempts/success': { schema: billingAttemptSignal },
  'subscription_billing_attempts/failure': { schema: billingAttemptSignal },
  'subscription_billing_attempts/challenged': { schema: billingAttemptSignal },
  'app/uninstalled': { schema: shopResource, shopOf: (b) => b.myshopify_domain },
  'app_subscriptions/update': { schema: appSubscriptionUpdate },
  'bulk_operations/finish': { schema: bulkOperationFinish },
  'customers/data_request': { schema: customersDataRequest, shopOf: shopDomainOf },
  'customers/redact': { schema: customersRedact, shopOf: shopDomainOf },
  'shop/redact': { schema: shopRedact, shopOf: shopDomainOf },
};

/** Why a delivery is not acted on: safe to log (names a field, never a value of the body). */
export type BodyRefusal = { refused: string };

/** Checks a signed delivery's parsed body against its topic and its shop header; null when it passes. */
export function checkWebhookBody(topic: string, shopDomain: string, body: Record<string, unknown>): BodyRefusal | null {
  if (!isTopic(topic)) return { refused: 'not a topic svc subscribes to' };
  const expected = BODIES[topic];
  const parsed = expected.schema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    // A field of the body's own naming: the field's name is said (it is the platform's, or an attacker's), never a value.
    const unexpected = issue?.code === 'unrecognized_keys' ? issue.keys.map((k) => k.slice(0, 64)) : [];
    const path = issue?.path.map(String).join('.');
    const at = unexpected.length ? `${path ? `${path}.` : ''}${unexpected[0]}, a field ${topic} does not have` : path || 'the body';
    return { refused: `the body does not have the shape of ${topic} (at ${at})` };
  }
  if (expected.shopOf && expected.shopOf(body) !== shopDomain) return { refused: 'the body names another shop than X-Shopify-Shop-Domain' };
  return null;
}

/**
 * The delivery's identity beside its webhook id: sha256 of (topic, shop, raw body), stored unique. A body already
 * received for the topic and shop is a replay, because each documented payload carries what makes its event
 * distinct:
 *
 * - contract topics: the contract's `revision_id`, new with every change of the contract (the same body again is a
 *   repeat, or the same event sent to a second address);
 * - billing attempt topics: the attempt and where it stands (`ready`, the failure's code), each sent once per
 *   outcome;
 * - billing cycle topics: the contract, the cycle and whether it is skipped. Skipping, unskipping and skipping one
 *   cycle again does send the first body twice; the second is then taken for the first, which costs only a read
 *   of the contract (a skip changes no revision) that reconciliation makes anyway;
 * - app_subscriptions/update: the subscription, its status and its `updated_at`;
 * - bulk_operations/finish: the operation's id;
 * - customers/data_request: the request's `data_request.id`;
 * - customers/redact: the customer and the orders to redact (a new request for a customer who came back names
 *   their new orders).
 *
 * app/uninstalled (the shop resource) and shop/redact (`shop_id`, `shop_domain`) are the exception: their bodies
 * can be the same from one installation of the app to the next. Their digest is kept only while they wait to be
 * processed (the inbox clears it then); a later delivery of the same body is processed again, and the platform's
 * answer about the shop's token, not the body, decides whether it is acted on.
 */
export function receiptDigest(topic: string, shopDomain: string, rawBody: Buffer): string {
  // Header values cannot hold a line feed: the three parts cannot run into one another.
  return createHash('sha256').update(topic).update('\n').update(shopDomain).update('\n').update(rawBody).digest('hex');
}
