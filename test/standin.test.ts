import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startReceiver } from './support/receiver.js';
import { accessTokenFor, adminGraphql, exchangeToken, refreshToken, tokenRequest } from './support/shopify/client.js';
import * as docs from './support/shopify/documents.js';
import { startStandIn, validateAgainstAdminSchema, type RunningStandIn } from './support/shopify/index.js';

const { CONTRACT, CONTRACTS_PAGE, SET_NEXT_BILLING_DATE, SKIP_CYCLE, SUBSCRIBE, statusMutation } = docs;
const PAUSE = statusMutation('Pause');

const APP = { appKey: 'stand-in-app-key', appSecret: 'stand-in-app-secret' };
const clock = { t: Date.parse('2026-11-23T10:00:00Z'), now: () => new Date(clock.t) };
const advance = (seconds: number) => void (clock.t += seconds * 1000);

let standIn: RunningStandIn;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let n = 0;
let shop: string;
let token: string;

const gql = (query: string, variables?: Record<string, unknown>) => adminGraphql(standIn, shop, token, query, variables);

async function subscribe(topic: string) {
  const r = await gql(SUBSCRIBE, { topic, uri: `${receiver.url}/webhooks/shopify` });
  expect(r.body.data.webhookSubscriptionCreate.userErrors).toEqual([]);
}

beforeAll(async () => {
  receiver = await startReceiver();
  standIn = await startStandIn({ ...APP, clock, appWebhooks: { uri: `${receiver.url}/webhooks/shopify` } });
});
afterAll(async () => {
  await standIn?.close();
  await receiver?.close();
});
beforeEach(async () => {
  shop = `shop-${++n}.myshopify.com`;
  standIn.webhooks.clearFaults();
  standIn.faults.clear();
  standIn.createShop(shop);
  token = await accessTokenFor(standIn, shop);
});

describe('schema', () => {
  it('validates documents against the real Admin schema, with the exact argument names', () => {
    for (const doc of Object.values(docs)) {
      expect(validateAgainstAdminSchema(typeof doc === 'string' ? doc : doc('Cancel'), { noDeprecated: true })).toEqual([]);
    }
    expect(validateAgainstAdminSchema('mutation { subscriptionContractPause(id: "x") { userErrors { code } } }').map((e) => e.message)).toEqual([
      'Unknown argument "id" on field "Mutation.subscriptionContractPause".',
      'Field "subscriptionContractPause" argument "subscriptionContractId" of type "ID!" is required, but it was not provided.',
    ]);
    expect(validateAgainstAdminSchema('{ shop { ')).toHaveLength(1);
    const deprecated = '{ subscriptionContract(id: "gid://shopify/SubscriptionContract/1") { customer { email } } }';
    expect(validateAgainstAdminSchema(deprecated)).toEqual([]);
    expect(validateAgainstAdminSchema(deprecated, { noDeprecated: true })[0].message).toMatch(/Customer.email is deprecated/);
  });

  it('answers an invalid document with validation errors in the platform format, and logs it', async () => {
    const r = await gql('{ subscriptionContracts(first: 1) { edges { node { id bogus } } } }');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      errors: [{ message: 'Cannot query field "bogus" on type "SubscriptionContract".', locations: [{ line: 1, column: 55 }], extensions: { code: 'undefinedField' } }],
    });
    expect(standIn.invalidDocuments().at(-1)?.shop).toBe(shop);
    const bad = await gql('mutation($d: DateTime!) { subscriptionContractSetNextBillingDate(contractId: "gid://shopify/SubscriptionContract/1", date: $d) { userErrors { code } } }', { d: 'tomorrow' });
    expect(bad.body.errors[0].message).toMatch(/\$d.*invalid value/);
  });
});

describe('token exchange', () => {
  it('exchanges a session token, expires the access token on the clock, and rotates refresh tokens', async () => {
    const first = await exchangeToken(standIn, shop, undefined, true);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ scope: expect.any(String), expires_in: 3600, refresh_token_expires_in: 7_776_000 });
    expect(first.body.access_token).toMatch(/^shpat_/);
    const ok = await adminGraphql(standIn, shop, first.body.access_token, '{ shop { myshopifyDomain } }');
    expect(ok.body.data.shop.myshopifyDomain).toBe(shop);

    advance(3601);
    const expired = await adminGraphql(standIn, shop, first.body.access_token, '{ shop { id } }');
    expect(expired).toEqual({ status: 401, body: { errors: '[API] Invalid API key or access token (unrecognized login or wrong password)' } });

    const refreshed = await refreshToken(standIn, shop, first.body.refresh_token);
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.refresh_token).not.toBe(first.body.refresh_token);
    expect((await adminGraphql(standIn, shop, refreshed.body.access_token, '{ shop { id } }')).status).toBe(200);
    const reused = await refreshToken(standIn, shop, first.body.refresh_token);
    expect(reused).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
  });

  it('refuses session tokens with the wrong signature, audience, destination or time, and wrong client secrets', async () => {
    const cases = [
      standIn.sessionToken(shop, { claims: { aud: 'someone-else' } }),
      standIn.sessionToken(shop, { claims: { dest: 'https://other.myshopify.com' } }),
      standIn.sessionToken(shop, { ttlSeconds: -1 }),
      standIn.sessionToken(shop).replace(/\.[^.]+$/, '.' + createHmac('sha256', 'wrong').update('x').digest('base64url')),
    ];
    for (const t of cases) expect(await exchangeToken(standIn, shop, t)).toMatchObject({ status: 400, body: { error: 'invalid_subject_token' } });
    const wrongSecret = await tokenRequest(standIn, shop, { client_id: APP.appKey, client_secret: 'nope', grant_type: 'refresh_token', refresh_token: 'x' });
    expect(wrongSecret).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
  });
});

describe('contracts', () => {
  it('pages through contracts with cursors and filters by updated_at', async () => {
    const ids = Array.from({ length: 5 }, () => standIn.createContract(shop, {}, { silent: true }).gid);
    const seen: string[] = [];
    let after: string | null = null;
    for (let page = 0; page < 5; page++) {
      const r = await gql(CONTRACTS_PAGE, { first: 2, after });
      const conn = r.body.data.subscriptionContracts;
      seen.push(...conn.edges.map((e: { node: { id: string } }) => e.node.id));
      after = conn.pageInfo.endCursor;
      if (!conn.pageInfo.hasNextPage) break;
    }
    expect(seen).toEqual(ids);

    const since = new Date(clock.t).toISOString();
    advance(5);
    standIn.platform.update(shop, ids[3], { lines: [{ title: 'Tea', quantity: 3 }] });
    const changed = await gql(CONTRACTS_PAGE, { first: 10, query: `updated_at:>'${since}'` });
    expect(changed.body.data.subscriptionContracts.edges.map((e: { node: { id: string } }) => e.node.id)).toEqual([ids[3]]);
  });

  it('reads one contract with every field svc mirrors', async () => {
    const c = standIn.createContract(shop, {
      customer: { id: 9001, email: 'ada@example.com' },
      billingPolicy: { interval: 'WEEK', intervalCount: 2, minCycles: null, maxCycles: null },
      lines: [{ title: 'Coffee 1kg', variantId: 51, quantity: 2, currentPrice: { amount: '24.00', currencyCode: 'EUR' } }],
      currencyCode: 'EUR',
      nextBillingDate: '2026-12-01T00:00:00Z',
    }, { silent: true });
    const r = await gql(CONTRACT, { id: c.gid });
    expect(r.body.data.subscriptionContract).toEqual({
      id: c.gid, status: 'ACTIVE', nextBillingDate: '2026-12-01T00:00:00Z', createdAt: expect.stringMatching(/Z$/), updatedAt: expect.stringMatching(/Z$/),
      revisionId: c.revisionId, currencyCode: 'EUR', lastPaymentStatus: 'SUCCEEDED',
      customer: { id: 'gid://shopify/Customer/9001', defaultEmailAddress: { emailAddress: 'ada@example.com' } },
      billingPolicy: { interval: 'WEEK', intervalCount: 2 }, deliveryPolicy: { interval: 'WEEK', intervalCount: 2 },
      lines: { nodes: [{ title: 'Coffee 1kg', variantId: 'gid://shopify/ProductVariant/51', quantity: 2, currentPrice: { amount: '24.00', currencyCode: 'EUR' } }] },
    });
    const unmodelled = await gql(`query($id: ID!) { subscriptionContract(id: $id) { customer { amountSpent { amount } } } }`, { id: c.gid });
    expect(unmodelled.body.errors[0]).toMatchObject({ message: 'The stand-in does not model Customer.amountSpent', extensions: { code: 'STAND_IN_UNSUPPORTED' } });
  });

  it('pauses, activates, cancels and reschedules, bumping updatedAt and revisionId; terminal contracts answer userErrors', async () => {
    const c = standIn.createContract(shop, {}, { silent: true });
    const before = c.revisionId;
    advance(2);
    const paused = await gql(PAUSE, { id: c.gid });
    expect(paused.body.data.subscriptionContractPause).toMatchObject({ contract: { id: c.gid, status: 'PAUSED' }, userErrors: [] });
    expect(BigInt(paused.body.data.subscriptionContractPause.contract.revisionId)).toBeGreaterThan(BigInt(before));
    expect(paused.body.data.subscriptionContractPause.contract.updatedAt).toBe(new Date(clock.t).toISOString().replace('.000Z', 'Z'));

    const act = await gql(statusMutation('Activate'), { id: c.gid });
    expect(act.body.data.subscriptionContractActivate).toMatchObject({ contract: { status: 'ACTIVE' }, userErrors: [] });

    const date = '2027-02-01T00:00:00Z';
    const next = await gql(SET_NEXT_BILLING_DATE, { id: c.gid, date });
    expect(next.body.data.subscriptionContractSetNextBillingDate).toMatchObject({ contract: { nextBillingDate: date }, userErrors: [] });

    const cancel = await gql(statusMutation('Cancel'), { id: c.gid });
    expect(cancel.body.data.subscriptionContractCancel.contract.status).toBe('CANCELLED');
    const again = await gql(PAUSE, { id: c.gid });
    expect(again.body.data.subscriptionContractPause).toMatchObject({ contract: null, userErrors: [{ field: ['subscriptionContractId'], code: 'CONTRACT_TERMINATED' }] });

    standIn.faults.userError({ mutation: 'subscriptionContractPause', message: 'Payment method expired', code: 'INVALID' });
    const other = standIn.createContract(shop, {}, { silent: true });
    const rejected = await gql(PAUSE, { id: other.gid });
    expect(rejected.body.data.subscriptionContractPause.userErrors).toEqual([{ field: null, message: 'Payment method expired', code: 'INVALID' }]);
    expect(standIn.contract(shop, other.id).status).toBe('ACTIVE');

    expect(standIn.calls('subscriptionContractPause', shop).map((x) => x.args)).toEqual([{ subscriptionContractId: c.gid }, { subscriptionContractId: c.gid }, { subscriptionContractId: other.gid }]);
    expect(standIn.requests.at(-1)?.headers['x-shopify-access-token']).toBeUndefined();
  });

  it('skips the billing cycle of a date (subscription_billing_cycles/skip), and refuses a cycle already billed', async () => {
    await subscribe('SUBSCRIPTION_BILLING_CYCLES_SKIP');
    const start = receiver.received.length;
    const next = '2026-12-23T10:00:00Z';
    const c = standIn.createContract(shop, { nextBillingDate: next, firstBillingDate: new Date('2026-10-23T10:00:00Z') }, { silent: true });
    const r = await gql(SKIP_CYCLE, { input: { contractId: c.gid, selector: { date: next } } });
    expect(r.body.data.subscriptionBillingCycleSkip).toEqual({
      billingCycle: { cycleIndex: 3, skipped: true, billingAttemptExpectedDate: next, cycleEndAt: '2027-01-23T10:00:00Z' },
      userErrors: [],
    });
    const past = await gql(SKIP_CYCLE, { input: { contractId: c.gid, selector: { index: 1 } } });
    expect(past.body.data.subscriptionBillingCycleSkip.userErrors[0]).toMatchObject({ code: 'INVALID' });
    await standIn.webhooks.flush();
    expect(receiver.received.slice(start).map((r) => JSON.parse(r.body))).toEqual([
      { subscription_contract_id: c.id, cycle_index: 3, cycle_start_at: '2026-12-23T10:00:00+00:00', cycle_end_at: '2027-01-23T10:00:00+00:00', billing_attempt_expected_date: '2026-12-23T10:00:00+00:00', skipped: true, edited: false, contract_edit: null },
    ]);
  });
});

describe('throttling', () => {
  it('reports cost on every answer and throttles when the bucket is empty, until the clock restores it', async () => {
    standIn.createContract(shop, { lines: [{}, {}] }, { silent: true });
    const q = '{ subscriptionContracts(first: 10) { edges { node { id lines(first: 5) { edges { node { title } } } } } } }';
    const ok = await gql(q);
    expect(ok.body.extensions.cost).toEqual({
      requestedQueryCost: 1 + 10 * (1 + 1 + 1 + 5 * 2),
      actualQueryCost: 1 + 1 + 1 + 1 + 2 * 2,
      throttleStatus: { maximumAvailable: 2000, currentlyAvailable: 2000 - 8, restoreRate: 100 },
    });
    standIn.throttle(shop);
    const throttled = await gql(q);
    expect(throttled.status).toBe(200);
    expect(throttled.body.errors).toEqual([{ message: 'Throttled', extensions: { code: 'THROTTLED', documentation: expect.any(String) } }]);
    expect(throttled.body.extensions.cost).toMatchObject({ requestedQueryCost: 131, actualQueryCost: null, throttleStatus: { currentlyAvailable: 0 } });
    advance(2);
    expect((await gql(q)).body.data.subscriptionContracts.edges).toHaveLength(1);
  });
});

describe('webhooks', () => {
  it('sends thin, signed contract webhooks with the platform headers', async () => {
    await subscribe('SUBSCRIPTION_CONTRACTS_PAUSE');
    const dup = await gql(SUBSCRIBE, { topic: 'SUBSCRIPTION_CONTRACTS_PAUSE', uri: `${receiver.url}/webhooks/shopify` });
    expect(dup.body.data.webhookSubscriptionCreate.userErrors[0].message).toBe('Address for this topic has already been taken');
    const c = standIn.createContract(shop, {}, { silent: true });
    const start = receiver.received.length;
    await gql(PAUSE, { id: c.gid });
    await standIn.webhooks.flush();
    const [got] = receiver.received.slice(start);
    expect(got.headers['x-shopify-hmac-sha256']).toBe(createHmac('sha256', APP.appSecret).update(got.body).digest('base64'));
    expect(got.headers).toMatchObject({
      'x-shopify-topic': 'subscription_contracts/pause',
      'x-shopify-shop-domain': shop,
      'x-shopify-api-version': '2026-10',
      'content-type': 'application/json',
    });
    for (const h of ['x-shopify-webhook-id', 'x-shopify-event-id', 'x-shopify-triggered-at']) expect(got.headers[h]).toBeTruthy();
    const body = JSON.parse(got.body);
    expect(Object.keys(body).sort()).toEqual(
      ['admin_graphql_api_customer_id', 'admin_graphql_api_id', 'admin_graphql_api_origin_order_id', 'billing_policy', 'currency_code', 'customer_id', 'delivery_policy', 'id', 'origin_order_id', 'revision_id', 'status'],
    );
    expect(body).toMatchObject({ admin_graphql_api_id: c.gid, id: c.id, status: 'paused', revision_id: c.revisionId });
  });

  it('delivers twice with one webhook id, out of order on release, and never when dropped', async () => {
    await subscribe('SUBSCRIPTION_CONTRACTS_UPDATE');
    const c = standIn.createContract(shop, {}, { silent: true });
    const start = receiver.received.length;
    standIn.webhooks.fault({ mode: 'twice' });
    standIn.platform.update(shop, c.id, { note: 'one' });
    await standIn.webhooks.flush();
    const twice = receiver.received.slice(start);
    expect(twice).toHaveLength(2);
    expect(twice[0].headers['x-shopify-webhook-id']).toBe(twice[1].headers['x-shopify-webhook-id']);

    standIn.webhooks.fault({ mode: 'hold' }, { count: 2 });
    standIn.platform.update(shop, c.id, { note: 'two' });
    const older = c.revisionId;
    standIn.platform.update(shop, c.id, { note: 'three' });
    await standIn.webhooks.flush();
    expect(receiver.received).toHaveLength(start + 2);
    standIn.webhooks.release();
    await standIn.webhooks.flush();
    expect(receiver.received.slice(start + 2).map((r) => JSON.parse(r.body).revision_id)).toEqual([c.revisionId, older]);

    standIn.webhooks.fault({ mode: 'drop' });
    standIn.platform.update(shop, c.id, { note: 'four' });
    await standIn.webhooks.flush();
    expect(receiver.received).toHaveLength(start + 4);
    expect(standIn.webhooks.deliveries.at(-1)?.state).toBe('dropped');

    standIn.webhooks.fault({ mode: 'delay', ms: 100 });
    const t0 = Date.now();
    standIn.platform.update(shop, c.id, { note: 'five' });
    await standIn.webhooks.flush();
    expect(receiver.received).toHaveLength(start + 5);
    expect(receiver.received.at(-1)!.at - t0).toBeGreaterThanOrEqual(90);
  });

  it('approves app subscriptions, uninstalls (app/uninstalled, tokens dead) and sends compliance topics', async () => {
    await subscribe('APP_SUBSCRIPTIONS_UPDATE');
    await subscribe('APP_UNINSTALLED');
    const items = [{ plan: { appRecurringPricingDetails: { price: { amount: '299.00', currencyCode: 'USD' }, interval: 'EVERY_30_DAYS' } } }];
    const create = await gql(docs.CREATE_APP_SUBSCRIPTION, { name: 'Enterprise', returnUrl: 'https://svc.example/return', test: true, items });
    const created = create.body.data.appSubscriptionCreate;
    expect(created).toMatchObject({ appSubscription: { status: 'PENDING' }, confirmationUrl: expect.stringContaining(standIn.shopUrl(shop)), userErrors: [] });
    const start = receiver.received.length;
    standIn.approveAppSubscription(shop);
    const active = await gql(docs.ACTIVE_APP_SUBSCRIPTIONS);
    expect(active.body.data.currentAppInstallation.activeSubscriptions).toEqual([{
      id: created.appSubscription.id, name: 'Enterprise', status: 'ACTIVE', test: true,
      lineItems: [{ plan: { pricingDetails: { __typename: 'AppRecurringPricing', price: { amount: '299.00', currencyCode: 'USD' }, interval: 'EVERY_30_DAYS' } } }],
    }]);
    const hooks = await gql('{ webhookSubscriptions(first: 10) { nodes { topic uri format } } }');
    expect(hooks.body.data.webhookSubscriptions.nodes.map((w: { topic: string }) => w.topic)).toEqual(['APP_SUBSCRIPTIONS_UPDATE', 'APP_UNINSTALLED']);

    const refresh = (await exchangeToken(standIn, shop)).body.refresh_token as string;
    standIn.uninstall(shop);
    standIn.sendCompliance(shop, 'customers/redact', { customer: { id: 7, email: 'ada@example.com' }, orders: [1] });
    await standIn.webhooks.flush();
    const byTopic = Object.fromEntries(receiver.received.slice(start).map((r) => [r.headers['x-shopify-topic'], JSON.parse(r.body)]));
    expect(Object.keys(byTopic).sort()).toEqual(['app/uninstalled', 'app_subscriptions/update', 'customers/redact']);
    expect(byTopic['app_subscriptions/update'].app_subscription).toMatchObject({ admin_graphql_api_id: created.appSubscription.id, status: 'ACTIVE', currency: 'USD' });
    expect(byTopic['app/uninstalled']).toMatchObject({ myshopify_domain: shop, domain: shop });
    expect(byTopic['customers/redact']).toMatchObject({ shop_domain: shop, customer: { id: 7, email: 'ada@example.com', phone: null }, orders_to_redact: [1] });
    // Every token of the shop is dead: the access token answers 401, its refresh is refused, no exchange is made.
    expect((await gql('{ shop { id } }')).status).toBe(401);
    expect((await gql('{ currentAppInstallation { id } }')).body).toEqual({ errors: '[API] Invalid API key or access token (unrecognized login or wrong password)' });
    expect(await refreshToken(standIn, shop, refresh)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect((await exchangeToken(standIn, shop)).status).toBe(400);
  });
});

describe('bulk operations', () => {
  it('runs a bulk query to a JSONL file with __parentId lines and sends bulk_operations/finish', async () => {
    await subscribe('BULK_OPERATIONS_FINISH');
    const a = standIn.createContract(shop, { lines: [{ title: 'A1' }, { title: 'A2' }] }, { silent: true });
    const b = standIn.createContract(shop, { lines: [{ title: 'B1' }] }, { silent: true });
    const inner = '{ subscriptionContracts { edges { node { id status lines { edges { node { title } } } } } } }';
    const run = await gql(docs.RUN_BULK_QUERY, { query: inner });
    const op = run.body.data.bulkOperationRunQuery;
    expect(op).toMatchObject({ bulkOperation: { status: 'CREATED' }, userErrors: [] });
    const start = receiver.received.length;
    await standIn.bulk.settle();
    await standIn.webhooks.flush();
    const done = await gql(docs.BULK_OPERATION, { id: op.bulkOperation.id });
    expect(done.body.data.bulkOperation).toMatchObject({ status: 'COMPLETED', objectCount: '5', rootObjectCount: '2' });
    const lines = (await (await fetch(done.body.data.bulkOperation.url)).text()).trim().split('\n').map((l) => JSON.parse(l));
    expect(lines).toEqual([
      { id: a.gid, status: 'ACTIVE' },
      { title: 'A1', __parentId: a.gid },
      { title: 'A2', __parentId: a.gid },
      { id: b.gid, status: 'ACTIVE' },
      { title: 'B1', __parentId: b.gid },
    ]);
    const viaNode = await gql('query($id: ID!) { node(id: $id) { ... on BulkOperation { status } } }', { id: op.bulkOperation.id });
    expect(viaNode.body.data.node).toEqual({ status: 'COMPLETED' });
    const finish = JSON.parse(receiver.received[start].body);
    expect(finish).toMatchObject({ admin_graphql_api_id: op.bulkOperation.id, status: 'completed', type: 'query', error_code: null });
  });
});

describe('HTTP faults', () => {
  it('answers 5xx before changing anything, loses the answer after a change, hangs and adds latency', async () => {
    const c = standIn.createContract(shop, {}, { silent: true });
    standIn.faults.add({ kind: 'error', status: 503 }, { operation: 'subscriptionContractPause' });
    expect(await gql(PAUSE, { id: c.gid })).toEqual({ status: 503, body: { errors: 'Service Unavailable' } });
    expect(standIn.contract(shop, c.id).status).toBe('ACTIVE');

    standIn.faults.add({ kind: 'hangup' }, { when: 'after' });
    await expect(gql(PAUSE, { id: c.gid })).rejects.toThrow();
    expect(standIn.contract(shop, c.id).status).toBe('PAUSED');

    standIn.faults.add({ kind: 'hang' });
    await expect(adminGraphql(standIn, shop, token, '{ shop { id } }', undefined, { timeoutMs: 200 })).rejects.toThrow();

    standIn.faults.add({ kind: 'latency', ms: 150 });
    const t0 = Date.now();
    expect((await gql('{ shop { id } }')).status).toBe(200);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(140);
  });
});
