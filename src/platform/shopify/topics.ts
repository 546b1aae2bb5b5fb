/**
 * Every webhook topic svc takes from the platform, once, as the platform names it in X-Shopify-Topic. The topics
 * svc subscribes to at install are sent to the platform under their GraphQL name (WebhookSubscriptionTopic), which
 * is derived from this one (app/uninstalled → APP_UNINSTALLED); the compliance topics are declared in the app's
 * configuration instead. Whatever is keyed by topic (the body checks, the inbox's handlers) is a record over Topic,
 * so a topic added here and handled nowhere does not compile.
 */

/** A contract changed on the platform: svc reads it again (platform sync). */
export const CONTRACT_TOPICS = [
  'subscription_contracts/create',
  'subscription_contracts/update',
  'subscription_contracts/activate',
  'subscription_contracts/pause',
  'subscription_contracts/cancel',
  'subscription_contracts/expire',
  'subscription_contracts/fail',
] as const;

/** A contract's billing cycle was skipped or unskipped: a signal like the contract topics. */
export const BILLING_CYCLE_TOPICS = ['subscription_billing_cycles/skip', 'subscription_billing_cycles/unskip'] as const;

/** The outcomes of billing attempts (billing.ts), taken a shop's at a time. */
export const BILLING_ATTEMPT_TOPICS = ['subscription_billing_attempts/success', 'subscription_billing_attempts/failure', 'subscription_billing_attempts/challenged'] as const;

/** Every topic svc subscribes to at install. */
export const SUBSCRIBED_TOPICS = [
  ...CONTRACT_TOPICS,
  ...BILLING_CYCLE_TOPICS,
  ...BILLING_ATTEMPT_TOPICS,
  'app/uninstalled',
  'app_subscriptions/update',
  'bulk_operations/finish',
] as const;

/** The compliance topics (https://shopify.dev/docs/apps/build/compliance/privacy-law-compliance). */
export const COMPLIANCE_TOPICS = ['customers/data_request', 'customers/redact', 'shop/redact'] as const;

export const TOPICS = [...SUBSCRIBED_TOPICS, ...COMPLIANCE_TOPICS] as const;
export type Topic = (typeof TOPICS)[number];

/** The destructive topics, confirmed with the platform before they are acted on (uninstallConfirmation.ts). */
export const CONFIRMED_TOPICS = ['app/uninstalled', 'shop/redact'] as const satisfies readonly Topic[];

export const isTopic = (topic: string): topic is Topic => (TOPICS as readonly string[]).includes(topic);

/** A topic's GraphQL name: `app/uninstalled` → `APP_UNINSTALLED`. */
export type SubscriptionTopic<T extends string> = T extends `${infer A}/${infer B}` ? Uppercase<`${A}_${B}`> : never;
export const subscriptionTopic = <T extends Topic>(topic: T): SubscriptionTopic<T> => topic.replace('/', '_').toUpperCase() as SubscriptionTopic<T>;

/** Every topic svc subscribes to at install, as the GraphQL API names them. */
export const WEBHOOK_TOPICS = SUBSCRIBED_TOPICS.map(subscriptionTopic);
