import type { BillingCycle } from './cycles.js';
import { gid, type AppSubscription, type BulkOperation, type Contract, type Customer, type Shop } from './store.js';

/**
 * Webhook bodies as the platform documents them. Contract topics are thin: no lines, no dates, no updatedAt; the
 * receiver re-reads the contract. Intervals and statuses are lowercase here (unlike GraphQL), ids are numbers,
 * `revision_id` is a string.
 */
export function contractPayload(c: Contract) {
  return {
    admin_graphql_api_id: c.gid,
    id: c.id,
    billing_policy: {
      interval: c.billingPolicy.interval.toLowerCase(),
      interval_count: c.billingPolicy.intervalCount,
      min_cycles: c.billingPolicy.minCycles,
      max_cycles: c.billingPolicy.maxCycles,
    },
    currency_code: c.currencyCode,
    customer_id: c.customer.id,
    admin_graphql_api_customer_id: gid('Customer', c.customer.id),
    delivery_policy: { interval: c.deliveryPolicy.interval.toLowerCase(), interval_count: c.deliveryPolicy.intervalCount },
    status: c.status.toLowerCase(),
    admin_graphql_api_origin_order_id: c.originOrderId === null ? null : gid('Order', c.originOrderId),
    origin_order_id: c.originOrderId,
    revision_id: c.revisionId,
  };
}

/** subscription_billing_cycles/skip and /unskip. */
export function billingCyclePayload(cycle: BillingCycle) {
  return {
    subscription_contract_id: cycle.contract.id,
    cycle_start_at: iso(cycle.startAt),
    cycle_end_at: iso(cycle.endAt),
    cycle_index: cycle.index,
    contract_edit: null,
    billing_attempt_expected_date: iso(cycle.startAt),
    skipped: cycle.skipped,
    edited: false,
  };
}

/** app/uninstalled: the shop resource. */
export function shopPayload(shop: Shop) {
  return {
    id: shop.id,
    name: shop.name,
    email: shop.email,
    domain: shop.domain,
    province: null,
    country: 'US',
    address1: null,
    zip: null,
    city: null,
    source: null,
    phone: null,
    latitude: null,
    longitude: null,
    primary_locale: 'en',
    address2: null,
    created_at: iso(new Date(0)),
    updated_at: iso(new Date(0)),
    country_code: 'US',
    country_name: 'United States',
    currency: shop.currencyCode,
    customer_email: shop.email,
    timezone: '(GMT+00:00) UTC',
    iana_timezone: 'UTC',
    shop_owner: shop.name,
    money_format: '${{amount}}',
    money_with_currency_format: `\${{amount}} ${shop.currencyCode}`,
    weight_unit: 'kg',
    province_code: null,
    taxes_included: false,
    tax_shipping: null,
    county_taxes: true,
    plan_display_name: 'Development',
    plan_name: 'partner_test',
    has_discounts: false,
    has_gift_cards: false,
    myshopify_domain: shop.domain,
    google_apps_domain: null,
    google_apps_login_enabled: null,
    money_in_emails_format: '${{amount}}',
    money_with_currency_in_emails_format: `\${{amount}} ${shop.currencyCode}`,
    eligible_for_payments: true,
    requires_extra_payments_agreement: false,
    password_enabled: false,
    has_storefront: true,
    finances: true,
    primary_location_id: null,
    checkout_api_supported: true,
    multi_location_enabled: true,
    setup_required: false,
    pre_launch_enabled: false,
    enabled_presentment_currencies: [shop.currencyCode],
    transactional_sms_disabled: false,
    marketing_sms_consent_enabled_at_checkout: false,
  };
}

export function appSubscriptionPayload(shop: Shop, s: AppSubscription) {
  const usage = s.lineItems.find((l) => l.plan.kind === 'usage')?.plan;
  const recurring = s.lineItems.find((l) => l.plan.kind === 'recurring')?.plan;
  const currency = (recurring?.kind === 'recurring' ? recurring.price : usage?.kind === 'usage' ? usage.cappedAmount : undefined)?.currencyCode;
  return {
    app_subscription: {
      admin_graphql_api_id: gid('AppSubscription', s.id),
      name: s.name,
      status: s.status,
      admin_graphql_api_shop_id: gid('Shop', shop.id),
      created_at: iso(s.createdAt),
      updated_at: iso(s.updatedAt),
      currency: currency ?? shop.currencyCode,
      capped_amount: usage?.kind === 'usage' ? usage.cappedAmount.amount : null,
    },
  };
}

export function bulkOperationPayload(op: BulkOperation) {
  return {
    admin_graphql_api_id: gid('BulkOperation', op.id),
    completed_at: op.completedAt ? iso(op.completedAt) : null,
    created_at: iso(op.createdAt),
    error_code: op.errorCode ? op.errorCode.toLowerCase() : null,
    status: op.status.toLowerCase(),
    type: op.type.toLowerCase(),
  };
}

export type ComplianceTopic = 'customers/data_request' | 'customers/redact' | 'shop/redact';

/** The mandatory compliance topics (declared in the app's configuration, not subscribable through GraphQL). */
export function compliancePayload(
  shop: Shop,
  topic: ComplianceTopic,
  input: { customer?: Partial<Customer>; orders?: number[]; dataRequestId?: number } = {},
) {
  const base = { shop_id: shop.id, shop_domain: shop.domain };
  if (topic === 'shop/redact') return base;
  const customer = { id: input.customer?.id ?? 0, email: input.customer?.email ?? null, phone: input.customer?.phone ?? null };
  if (topic === 'customers/redact') return { ...base, customer, orders_to_redact: input.orders ?? [] };
  return { ...base, customer, orders_requested: input.orders ?? [], data_request: { id: input.dataRequestId ?? 1 } };
}

/** Times as the platform writes them in webhooks: seconds, with an offset. */
export function iso(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, '+00:00');
}
