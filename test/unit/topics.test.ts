import { describe, expect, it } from 'vitest';
import { ShopifyInboxAdapter } from '../../src/platform/shopify/webhooksIn.js';
import { checkWebhookBody } from '../../src/platform/shopify/webhookChecks.js';
import { COMPLIANCE_TOPICS, TOPICS, WEBHOOK_TOPICS } from '../../src/platform/shopify/topics.js';
import type { Delivery } from '../../src/db/webhookInbox.js';

/** The platform's webhook topics, written once (topics.ts): their GraphQL names derive from it, and every one is handled. */

describe('webhook topics', () => {
  it('subscribes at install to the GraphQL topics of every topic but the compliance ones', () => {
    expect(WEBHOOK_TOPICS).toEqual([
      'SUBSCRIPTION_CONTRACTS_CREATE',
      'SUBSCRIPTION_CONTRACTS_UPDATE',
      'SUBSCRIPTION_CONTRACTS_ACTIVATE',
      'SUBSCRIPTION_CONTRACTS_PAUSE',
      'SUBSCRIPTION_CONTRACTS_CANCEL',
      'SUBSCRIPTION_CONTRACTS_EXPIRE',
      'SUBSCRIPTION_CONTRACTS_FAIL',
      'SUBSCRIPTION_BILLING_CYCLES_SKIP',
      'SUBSCRIPTION_BILLING_CYCLES_UNSKIP',
      'SUBSCRIPTION_BILLING_ATTEMPTS_SUCCESS',
      'SUBSCRIPTION_BILLING_ATTEMPTS_FAILURE',
      'SUBSCRIPTION_BILLING_ATTEMPTS_CHALLENGED',
      'APP_UNINSTALLED',
      'APP_SUBSCRIPTIONS_UPDATE',
      'BULK_OPERATIONS_FINISH',
    ]);
    expect(TOPICS.filter((t) => !(COMPLIANCE_TOPICS as readonly string[]).includes(t))).toHaveLength(WEBHOOK_TOPICS.length);
  });

  it('a topic svc does not know is refused at receipt, and one stored anyway is answered ignored', async () => {
    expect(checkWebhookBody('orders/create', 'a.myshopify.com', { id: 1 })).toEqual({ refused: 'not a topic svc subscribes to' });
    // Nothing of the adapter's dependencies is touched for an unknown topic.
    const adapter = new ShopifyInboxAdapter({} as never, {} as never, {} as never);
    const delivery = { webhook_id: 'w1', topic: 'orders/create', shop_domain: 'a.myshopify.com', payload: { id: 1 } } as unknown as Delivery;
    expect(await adapter.process(delivery, { id: '1', domain: 'a.myshopify.com', uninstalledAt: null } as never)).toEqual({ topic: 'orders/create', outcome: 'ignored' });
  });
});
