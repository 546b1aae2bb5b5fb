import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { BILLING_ATTEMPTS, CREATE_BILLING_ATTEMPT, SUBSCRIBE } from '../src/platform/shopify/documents.js';
import { startReceiver } from './support/receiver.js';
import { accessTokenFor, adminGraphql } from './support/shopify/client.js';
import { adminSchema, startStandIn, type RunningStandIn } from './support/shopify/index.js';

/** The stand-in's billing attempts, spoken to as svc speaks to the platform (the documents svc sends). */

const APP = { appKey: 'stand-in-app-key', appSecret: 'stand-in-app-secret' };
const clock = { t: Date.parse('2026-11-23T10:00:00Z'), now: () => new Date(clock.t) };

let standIn: RunningStandIn;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let n = 0;
let shop: string;
let token: string;

const gql = (query: string, variables?: Record<string, unknown>) => adminGraphql(standIn, shop, token, query, variables);
const TOPICS = ['SUBSCRIPTION_BILLING_ATTEMPTS_SUCCESS', 'SUBSCRIPTION_BILLING_ATTEMPTS_FAILURE', 'SUBSCRIPTION_BILLING_ATTEMPTS_CHALLENGED'];

beforeAll(async () => {
  // The schema is built once, before any request waits on it (seconds on a busy machine).
  adminSchema();
  receiver = await startReceiver();
  standIn = await startStandIn({ ...APP, clock });
});
afterAll(async () => {
  await standIn?.close();
  await receiver?.close();
});
beforeEach(async () => {
  shop = `billing-${++n}.myshopify.com`;
  standIn.webhooks.clearFaults();
  standIn.faults.clear();
  standIn.createShop(shop);
  token = await accessTokenFor(standIn, shop);
  for (const topic of TOPICS) await gql(SUBSCRIBE, { topic, uri: `${receiver.url}/webhooks/shopify` });
});

function contract() {
  return standIn.createContract(shop, { nextBillingDate: '2026-11-23T09:00:00Z', lines: [{ quantity: 2, currentPrice: { amount: '12.5', currencyCode: 'EUR' } }], currencyCode: 'EUR' }, { silent: true });
}
const bill = (gid: string, key: string, date = '2026-11-23T09:00:00Z') =>
  gql(CREATE_BILLING_ATTEMPT, { contractId: gid, input: { idempotencyKey: key, originTime: date, billingCycleSelector: { date } } });
async function delivered(topic: string) {
  await standIn.billing.flush();
  await standIn.webhooks.flush();
  return standIn.webhooks.deliveries.filter((d) => d.shop === shop && d.topic === topic && d.state === 'delivered');
}

describe('stand-in billing attempts', () => {
  it('creates a pending attempt, settles it into an order, and sends subscription_billing_attempts/success', async () => {
    const c = contract();
    const r = await bill(c.gid, 'k-1');
    const created = r.body.data.subscriptionBillingAttemptCreate;
    expect(created.userErrors).toEqual([]);
    expect(created.subscriptionBillingAttempt.state).toEqual({ __typename: 'SubscriptionBillingAttemptPendingState', processing: true });
    const [d] = await delivered('subscription_billing_attempts/success');
    expect(d.payload).toMatchObject({ admin_graphql_api_id: created.subscriptionBillingAttempt.id, idempotency_key: 'k-1', subscription_contract_id: c.id, ready: true, error_code: null });
    const read = await gql(BILLING_ATTEMPTS, { ids: [created.subscriptionBillingAttempt.id] });
    expect(read.body.data.nodes[0].state).toMatchObject({
      __typename: 'SubscriptionBillingAttemptSuccessState',
      order: { name: '#1001', totalPriceSet: { presentmentMoney: { amount: '25.00', currencyCode: 'EUR' } } },
    });
  });

  it('one attempt per idempotency key: creating again answers the first and charges nothing', async () => {
    const c = contract();
    const first = (await bill(c.gid, 'same')).body.data.subscriptionBillingAttemptCreate.subscriptionBillingAttempt;
    const second = (await bill(c.gid, 'same')).body.data.subscriptionBillingAttemptCreate.subscriptionBillingAttempt;
    expect(second.id).toBe(first.id);
    expect(standIn.billing.of(shop, c.id)).toHaveLength(1);
    expect(await delivered('subscription_billing_attempts/success')).toHaveLength(1);
  });

  it('a failure carries its code in the state union (by error type) and, lowercase, in the webhook', async () => {
    const c = contract();
    standIn.billing.willAnswer(shop, c.id, { kind: 'failure', code: 'INSUFFICIENT_FUNDS' }, { count: 1 });
    standIn.billing.willAnswer(shop, c.id, { kind: 'failure', code: 'INSUFFICIENT_INVENTORY' }, { count: 1 });
    const a = (await bill(c.gid, 'f-1')).body.data.subscriptionBillingAttemptCreate.subscriptionBillingAttempt;
    const b = (await bill(c.gid, 'f-2')).body.data.subscriptionBillingAttemptCreate.subscriptionBillingAttempt;
    const hooks = await delivered('subscription_billing_attempts/failure');
    expect(hooks.map((d) => (d.payload as { error_code: string }).error_code)).toEqual(['insufficient_funds', 'insufficient_inventory']);
    const read = (await gql(BILLING_ATTEMPTS, { ids: [a.id, b.id] })).body.data.nodes;
    expect(read[0].state.error).toEqual({ __typename: 'SubscriptionBillingAttemptPaymentError', paymentCode: 'INSUFFICIENT_FUNDS' });
    expect(read[1].state.error).toEqual({ __typename: 'SubscriptionBillingAttemptInventoryError', inventoryCode: 'INSUFFICIENT_INVENTORY' });
  });

  it('a challenge is action required with no webhook until the buyer comes back', async () => {
    const c = contract();
    standIn.billing.willAnswer(shop, c.id, { kind: 'challenge' }, { count: 1 });
    const a = (await bill(c.gid, 'c-1')).body.data.subscriptionBillingAttemptCreate.subscriptionBillingAttempt;
    expect(await delivered('subscription_billing_attempts/challenged')).toHaveLength(0);
    const read = (await gql(BILLING_ATTEMPTS, { ids: [a.id] })).body.data.nodes[0];
    expect(read.state.__typename).toBe('SubscriptionBillingAttemptActionRequiredState');
    expect(read.state.action.nextActionUrl).toMatch(/^http/);
    standIn.billing.buyerReturns(shop, a.id);
    expect(await delivered('subscription_billing_attempts/challenged')).toHaveLength(1);
  });

  it('refuses a skipped cycle and a terminated contract, and bills a paused one (the app must not ask)', async () => {
    const c = contract();
    standIn.platform.skip(shop, c.id, { date: '2026-11-23T09:00:00Z' });
    expect((await bill(c.gid, 's-1')).body.data.subscriptionBillingAttemptCreate.userErrors[0].code).toBe('BILLING_CYCLE_SKIPPED');
    const paused = contract();
    standIn.platform.pause(shop, paused.id);
    expect((await bill(paused.gid, 'p-1')).body.data.subscriptionBillingAttemptCreate.userErrors).toEqual([]);
    const gone = contract();
    standIn.platform.cancel(shop, gone.id);
    expect((await bill(gone.gid, 't-1')).body.data.subscriptionBillingAttemptCreate.userErrors[0].code).toBe('CONTRACT_TERMINATED');
  });

  it('a throttled create runs nothing: no attempt, no charge', async () => {
    const c = contract();
    standIn.throttle(shop);
    const r = await bill(c.gid, 'th-1');
    expect(r.body.errors[0].extensions.code).toBe('THROTTLED');
    expect(standIn.billing.of(shop, c.id)).toHaveLength(0);
  });
});
