import { describe, expect, it } from 'vitest';
import { checkWebhookBody, receiptDigest } from '../../src/platform/shopify/webhookChecks.js';
import { billingCycle } from '../support/shopify/cycles.js';
import * as payloads from '../support/shopify/payloads.js';
import { StandIn } from '../support/shopify/standIn.js';
import type { AppSubscription, BulkOperation } from '../support/shopify/store.js';

/** Every documented payload, as the platform's stand-in builds it, and as svc parses it off the wire. */
const standIn = new StandIn({ appKey: 'key', appSecret: 'secret' });
const DOMAIN = 'ada.myshopify.com';
const shop = standIn.createShop(DOMAIN);
const contract = standIn.createContract(DOMAIN, {}, { silent: true });
const now = new Date();
const subscription = {
  id: 3, name: 'Enterprise', status: 'ACTIVE', test: true, returnUrl: 'https://svc.example/return', trialDays: 0, createdAt: now, updatedAt: now,
  currentPeriodEnd: null, replacementBehavior: 'STANDARD', lineItems: [{ id: 1, plan: { kind: 'recurring', price: { amount: '299.00', currencyCode: 'USD' }, interval: 'EVERY_30_DAYS' } }],
} as unknown as AppSubscription;
const operation = {
  id: 4, status: 'COMPLETED', type: 'QUERY', query: '{}', createdAt: now, completedAt: now, errorCode: null, url: null, objectCount: 0, rootObjectCount: 0, fileSize: null,
} satisfies BulkOperation;
const wire = (v: unknown) => JSON.parse(JSON.stringify(v)) as Record<string, unknown>;

const documented: [string, Record<string, unknown>][] = [
  ...['create', 'update', 'activate', 'pause', 'cancel', 'expire', 'fail'].map((t) => [`subscription_contracts/${t}`, wire(payloads.contractPayload(contract))] as [string, Record<string, unknown>]),
  ['subscription_billing_cycles/skip', wire(payloads.billingCyclePayload(billingCycle(contract, 2, now)))],
  ['subscription_billing_cycles/unskip', wire(payloads.billingCyclePayload(billingCycle(contract, 2, now)))],
  ['app/uninstalled', wire(payloads.shopPayload(shop))],
  ['app_subscriptions/update', wire(payloads.appSubscriptionPayload(shop, subscription))],
  ['bulk_operations/finish', wire(payloads.bulkOperationPayload(operation))],
  ['customers/data_request', wire(payloads.compliancePayload(shop, 'customers/data_request', { customer: { id: 7 }, dataRequestId: 9 }))],
  ['customers/redact', wire(payloads.compliancePayload(shop, 'customers/redact', { customer: { id: 7 }, orders: [1] }))],
  ['shop/redact', wire(payloads.compliancePayload(shop, 'shop/redact'))],
];

describe('the checks at receipt', () => {
  it.each(documented)('pass the platform’s documented %s payload', (topic, body) => {
    expect(checkWebhookBody(topic, DOMAIN, body)).toBeNull();
  });

  it('take the shop resource’s myshopify_domain, not its (custom) domain, for the shop', () => {
    const body = { ...wire(payloads.shopPayload(shop)), domain: 'coffee.example.com' };
    expect(checkWebhookBody('app/uninstalled', DOMAIN, body)).toBeNull();
    expect(checkWebhookBody('app/uninstalled', 'eve.myshopify.com', body)?.refused).toMatch(/names another shop/);
  });

  it.each(['customers/data_request', 'customers/redact', 'shop/redact'])('refuse %s naming another shop than the header', (topic) => {
    const body = documented.find(([t]) => t === topic)![1];
    expect(checkWebhookBody(topic, 'eve.myshopify.com', body)).toEqual({ refused: 'the body names another shop than X-Shopify-Shop-Domain' });
  });

  it('refuse a body passed off as another topic’s, and a topic svc does not subscribe to', () => {
    const body = (topic: string) => documented.find(([t]) => t === topic)![1];
    // A privacy request's body cannot pass for another's: each has the field that makes it that request.
    expect(checkWebhookBody('customers/redact', DOMAIN, body('customers/data_request'))?.refused).toMatch(/at orders_to_redact/);
    expect(checkWebhookBody('customers/data_request', DOMAIN, body('customers/redact'))?.refused).toMatch(/at data_request/);
    expect(checkWebhookBody('app/uninstalled', DOMAIN, body('shop/redact'))?.refused).toMatch(/shape of app\/uninstalled/);
    expect(checkWebhookBody('subscription_contracts/cancel', DOMAIN, body('subscription_billing_cycles/skip'))?.refused).toMatch(/at admin_graphql_api_id/);
    expect(checkWebhookBody('subscription_billing_cycles/skip', DOMAIN, body('subscription_contracts/pause'))?.refused).toMatch(/at subscription_contract_id/);
    expect(checkWebhookBody('shop/redact', DOMAIN, { ...body('shop/redact'), shop_id: '1' })?.refused).toMatch(/at shop_id/);
    expect(checkWebhookBody('orders/create', DOMAIN, body('shop/redact'))).toEqual({ refused: 'not a topic svc subscribes to' });
    for (const name of ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf']) {
      expect(checkWebhookBody(name, DOMAIN, {})).toEqual({ refused: 'not a topic svc subscribes to' });
    }
  });

  it('are strict: a field a topic does not document is refused, so no other topic\'s body passes for it', () => {
    const body = (topic: string) => documented.find(([t]) => t === topic)![1];
    // The compliance bodies share shop_id and shop_domain: the fields that make each request its own give it away.
    expect(checkWebhookBody('shop/redact', DOMAIN, body('customers/redact'))?.refused).toBe('the body does not have the shape of shop/redact (at customer, a field shop/redact does not have)');
    expect(checkWebhookBody('shop/redact', DOMAIN, body('customers/data_request'))?.refused).toMatch(/shape of shop\/redact \(at customer, a field/);
    expect(checkWebhookBody('customers/redact', DOMAIN, { ...body('customers/redact'), data_request: { id: 1 } })?.refused).toMatch(/at data_request, a field customers\/redact does not have/);
    // Every topic, its documented body with one field more: refused, naming the field only.
    for (const [topic, b] of documented) {
      expect(checkWebhookBody(topic, DOMAIN, { ...b, not_documented: 'x' })?.refused, topic).toBe(`the body does not have the shape of ${topic} (at not_documented, a field ${topic} does not have)`);
    }
    expect(checkWebhookBody('customers/redact', DOMAIN, { ...body('customers/redact'), customer: { id: 7, email: null, phone: null, tags: [] } })?.refused).toMatch(/at customer\.tags/);
  });

  it('give a delivery one digest for its topic, shop and raw body, whatever its webhook id', () => {
    const raw = Buffer.from(JSON.stringify(payloads.compliancePayload(shop, 'shop/redact')));
    const d = receiptDigest('shop/redact', DOMAIN, raw);
    expect(d).toMatch(/^[0-9a-f]{64}$/);
    expect(receiptDigest('shop/redact', DOMAIN, Buffer.from(raw))).toBe(d);
    expect(receiptDigest('customers/redact', DOMAIN, raw)).not.toBe(d);
    expect(receiptDigest('shop/redact', 'eve.myshopify.com', raw)).not.toBe(d);
    expect(receiptDigest('shop/redact', DOMAIN, Buffer.concat([raw, Buffer.from(' ')]))).not.toBe(d);
  });
});
