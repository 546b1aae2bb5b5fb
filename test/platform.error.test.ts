import { createHmac } from 'node:crypto';
import { randomUUID } from 'node:crypto';
import { insertRequestLogBatch } from '../src/db/requestLog.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it} from 'vitest';
import { bearer, TEST_CREDENTIALS } from './support/app.js';
import { startPlatform, type InstalledShop, type PlatformHarness } from './support/platform.js';

let p: PlatformHarness;
beforeAll(async () => {
  p = await startPlatform({ timeoutMs: 1500, standIn: { costByOperation: {} } });
});
afterAll(async () => {
  await p?.close();
});
beforeEach(() => {
  p.standIn.faults.clear();
  p.standIn.webhooks.clearFaults();
});

const act = (key: string, id: string, body: object, headers: Record<string, string> = {}) =>
  p.t.inject({ method: 'POST', url: `/api/v1/subscription-contracts/${id}/actions`, headers: { ...bearer(key), 'content-type': 'application/json', ...headers }, payload: body });
const get = (key: string, url: string) => p.t.inject({ method: 'GET', url, headers: bearer(key) });
const contract = async (s: InstalledShop, id = s.contractIds[0]) => (await get(s.key, `/api/v1/subscription-contracts/${id}`)).json().contract;
const events = async (s: InstalledShop, id = s.contractIds[0]) =>
  (await get(s.key, `/api/v1/subscription-contracts/${id}/events`)).json().events as { type: string; actor: { type: string } }[];
const count = async (sql: string, params: unknown[]) => (await p.t.ctx.db.withSession((run) => run<{ n: number }>(sql, params)))[0].n;

describe('a platform that refuses, fails or throttles changes nothing', () => {
  it('a contract terminated on the platform (its webhook lost) is 409 invalid_state, with the platform’s reason', async () => {
    const s = await p.install({ contracts: 1 });
    p.standIn.webhooks.fault({ mode: 'drop' }, { count: 1 });
    p.standIn.platform.cancel(s.domain, s.contractIds[0]);
    await p.settle();
    const res = await act(s.key, s.contractIds[0], { action: 'pause' });
    expect(res.statusCode).toBe(409);
    expect(res.json().error.code).toBe('invalid_state');
    expect(res.json().error.message).toMatch(/platform says/);
    expect(await events(s)).toEqual([]);
  });

  it('any other userError is 422 platform_rejected carrying the platform’s message', async () => {
    const s = await p.install({ contracts: 1 });
    p.standIn.faults.userError({ mutation: 'subscriptionContractSetNextBillingDate', message: 'Date is too far in the future', code: 'INVALID' }, { shop: s.domain });
    const date = new Date(p.clock.now().getTime() + 10 * 86_400_000).toISOString();
    const res = await act(s.key, s.contractIds[0], { action: 'reschedule', nextBillingDate: date });
    expect(res.statusCode).toBe(422);
    expect(res.json().error).toMatchObject({ code: 'platform_rejected', message: expect.stringContaining('Date is too far in the future') });
    expect((await contract(s)).nextBillingDate).not.toBe(date);
    expect(await events(s)).toEqual([]);
  });

  it.each([
    ['refused (422)', (s: InstalledShop) => p.standIn.faults.userError({ mutation: 'subscriptionContractSetNextBillingDate', message: 'Something else', code: 'INVALID' }, { shop: s.domain }), 422],
    ['unreachable (503)', (s: InstalledShop) => p.standIn.faults.add({ kind: 'error', status: 503 } as never, { operation: 'subscriptionContractSetNextBillingDate', shop: s.domain }), 503],
  ] as const)('a skip the platform %s half-way is undone there: nothing changed on either side, and asked again it is done once', async (_label, fault, status) => {
    const s = await p.install({ contracts: 1 });
    const id = s.contractIds[0];
    const before = await contract(s);
    fault(s);
    const res = await act(s.key, id, { action: 'skip' });
    expect(res.statusCode).toBe(status);
    const onPlatform = p.standIn.contract(s.domain, id);
    expect([...onPlatform.skippedCycles]).toEqual([]); // the skipped cycle is unskipped again
    expect(await contract(s)).toEqual(before);
    expect(await events(s)).toEqual([]);
    const again = await act(s.key, id, { action: 'skip' });
    expect(again.statusCode).toBe(200);
    expect([...p.standIn.contract(s.domain, id).skippedCycles]).toHaveLength(1);
    expect((await events(s)).map((e) => e.type)).toEqual(['contract.skipped']);
  });

  it.each([
    ['a 503', { kind: 'error', status: 503 }, 'HTTP 503'],
    ['a 500', { kind: 'error', status: 500 }, 'HTTP 500'],
    ['no answer in time', { kind: 'hang' }, 'no answer in time'],
    ['a connection cut before the answer', { kind: 'hangup' }, 'the connection failed'],
  ] as const)('%s is 503 platform_unavailable with Retry-After, and nothing changes', async (_label, fault, why) => {
    const s = await p.install({ contracts: 1 });
    p.standIn.faults.add(fault as never, { operation: 'subscriptionContractPause', shop: s.domain });
    const res = await act(s.key, s.contractIds[0], { action: 'pause' });
    expect(res.statusCode).toBe(503);
    expect(res.json().error).toMatchObject({ code: 'platform_unavailable', message: expect.stringContaining(`(${why})`) });
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect((await contract(s)).status).toBe('ACTIVE');
    expect(p.standIn.contract(s.domain, s.contractIds[0]).status).toBe('ACTIVE');
    expect(await events(s)).toEqual([]);
  });

  it('a throttled shop waits for the restore rate and succeeds; throttling past the 5 s budget is 503', async () => {
    const s = await p.install({ contracts: 1 });
    p.standIn.throttle(s.domain);
    const waited = await act(s.key, s.contractIds[0], { action: 'pause' });
    expect(waited.statusCode).toBe(200);
    expect(p.standIn.requests.some((r) => r.shop === s.domain && JSON.stringify(r.response ?? '').includes('THROTTLED'))).toBe(true);

    p.standIn.costs.costByOperation.SvcActivate = 900;
    p.standIn.throttle(s.domain);
    const started = Date.now();
    const refused = await act(s.key, s.contractIds[0], { action: 'resume' });
    delete p.standIn.costs.costByOperation.SvcActivate;
    expect(refused.statusCode).toBe(503);
    expect(refused.json().error.code).toBe('platform_unavailable');
    expect(Date.now() - started).toBeLessThan(5500);
    expect(p.standIn.contract(s.domain, s.contractIds[0]).status).toBe('PAUSED');
  });

  it('a platform success whose answer was lost is retried successfully, with one event', async () => {
    const s = await p.install({ contracts: 1 });
    p.standIn.webhooks.fault({ mode: 'hold' }, { shop: s.domain });
    p.standIn.faults.add({ kind: 'hangup' }, { operation: 'subscriptionContractPause', shop: s.domain, when: 'after' });
    const lost = await act(s.key, s.contractIds[0], { action: 'pause' }, { 'idempotency-key': 'lost-answer-1' });
    expect(lost.statusCode).toBe(503);
    expect(p.standIn.contract(s.domain, s.contractIds[0]).status).toBe('PAUSED');
    expect((await contract(s)).status).toBe('ACTIVE');
    const retried = await act(s.key, s.contractIds[0], { action: 'pause' }, { 'idempotency-key': 'lost-answer-1' });
    expect(retried.statusCode).toBe(200);
    expect(retried.json().contract.status).toBe('PAUSED');
    p.standIn.webhooks.clearFaults();
    p.standIn.webhooks.release();
    await p.settle();
    expect((await events(s)).map((e) => `${e.type}:${e.actor.type}`)).toEqual(['contract.paused:api_key']);
  });
});

describe('one change at a time per contract, with nothing held while the platform answers', () => {
  it('the platform’s webhook for a change still in flight waits for that change: its echo records no second event', async () => {
    const s = await p.install({ contracts: 1 });
    const id = s.contractIds[0];
    // The pause is made on the platform at once (its webhook goes out), its answer comes 400 ms later.
    p.standIn.faults.add({ kind: 'latency', ms: 400 }, { operation: 'subscriptionContractPause', shop: s.domain, when: 'after' });
    const pausing = act(s.key, id, { action: 'pause' });
    await expect.poll(() => p.standIn.contract(s.domain, id).status).toBe('PAUSED');
    await p.settle();
    // Read again while the action holds the contract: left for later, with the reason kept.
    expect(await count(`SELECT count(*)::int AS n FROM platform_webhooks WHERE processed_at IS NULL AND last_error LIKE '%being made on the platform%'`, [])).toBeGreaterThan(0);
    expect((await pausing).statusCode).toBe(200);
    p.clock.advance(10_000);
    await p.settle();
    expect(await count(`SELECT count(*)::int AS n FROM platform_webhooks WHERE processed_at IS NULL`, [])).toBe(0);
    expect((await events(s, id)).map((e) => `${e.type}:${e.actor.type}`)).toEqual(['contract.paused:api_key']);
  });

  it('two actions on one contract at once are made on the platform one after the other, and both recorded in that order', async () => {
    const s = await p.install({ contracts: 1 });
    const id = s.contractIds[0];
    p.standIn.faults.add({ kind: 'latency', ms: 150 }, { operation: 'subscriptionContractSetNextBillingDate', shop: s.domain, when: 'after' });
    const dates = ['2027-03-01T00:00:00.000Z', '2027-04-01T00:00:00.000Z'];
    const answers = await Promise.all(dates.map((d) => act(s.key, id, { action: 'reschedule', nextBillingDate: d })));
    expect(answers.map((r) => r.statusCode)).toEqual([200, 200]);
    const history = (await get(s.key, `/api/v1/subscription-contracts/${id}/events`)).json().events as { data: { nextBillingDate: string } }[];
    const last = history[0].data.nextBillingDate;
    expect(history.map((e) => e.data.nextBillingDate).sort()).toEqual([...dates].sort());
    expect((await contract(s, id)).nextBillingDate).toBe(last);
    expect(p.standIn.contract(s.domain, id).nextBillingDate!.toISOString()).toBe(last);
  });

  it('a change whose lease lapsed during its call, and which another change overtook, is made again on what that one left', async () => {
    const s = await p.install({ contracts: 1 });
    const id = s.contractIds[0];
    const [first, second] = ['2027-05-01T00:00:00.000Z', '2027-06-01T00:00:00.000Z'];
    // The first reschedule is made on the platform at once; its answer takes 400 ms, and meanwhile its lease lapses.
    p.standIn.faults.add({ kind: 'latency', ms: 400 }, { operation: 'subscriptionContractSetNextBillingDate', shop: s.domain, when: 'after' });
    const slow = act(s.key, id, { action: 'reschedule', nextBillingDate: first });
    await expect.poll(() => p.standIn.contract(s.domain, id).nextBillingDate!.toISOString()).toBe(first);
    p.clock.advance(61_000);
    expect((await act(s.key, id, { action: 'reschedule', nextBillingDate: second })).statusCode).toBe(200);
    expect((await slow).statusCode).toBe(200);
    // The slow one could not write over the other: it planned again from the contract as it now was, and was made
    // on the platform again, last.
    const history = (await get(s.key, `/api/v1/subscription-contracts/${id}/events`)).json().events as { data: { nextBillingDate: string } }[];
    expect(history.map((e) => e.data.nextBillingDate).reverse()).toEqual([second, first]);
    expect((await contract(s, id)).nextBillingDate).toBe(first);
    expect(p.standIn.contract(s.domain, id).nextBillingDate!.toISOString()).toBe(first);
    const calls = p.standIn.calls('subscriptionContractSetNextBillingDate', s.domain).map((c) => new Date(String((c.args as { date: string }).date)).toISOString());
    expect(calls).toEqual([first, second, first]);
    expect(await count(`SELECT count(*)::int AS n FROM subscription_contracts WHERE id = $1 AND call_lease IS NULL`, [id])).toBe(1);
    await p.settle();
  });

  it('a contract left leased by an instance that died is free again once its lease lapses', async () => {
    const s = await p.install({ contracts: 1 });
    const id = s.contractIds[0];
    await p.t.ctx.db.withSession((run) =>
      run(`UPDATE subscription_contracts SET call_lease = gen_random_uuid(), call_lease_until = $2 WHERE id = $1`, [id, new Date(p.clock.now().getTime() + 60_000)]),
    );
    p.clock.advance(61_000);
    const res = await act(s.key, id, { action: 'pause' });
    expect(res.statusCode).toBe(200);
    expect(p.standIn.contract(s.domain, id).status).toBe('PAUSED');
    expect(await count(`SELECT count(*)::int AS n FROM subscription_contracts WHERE id = $1 AND call_lease IS NULL`, [id])).toBe(1);
    await p.settle();
  });
});

describe('webhooks in', () => {
  const post = (body: string, headers: Record<string, string>) =>
    fetch(`${p.base}/webhooks/shopify`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
  const sign = (body: string) => createHmac('sha256', TEST_CREDENTIALS.secret).update(body).digest('base64');
  /** A contract signal's documented fields (the rest of its payload is not needed here). */
  const signal = (id: number | string, more: object = {}) => ({ admin_graphql_api_id: `gid://shopify/SubscriptionContract/${id}`, id: Number(id), revision_id: '1', ...more });

  it('a bad or missing HMAC is 401 and stores nothing; a good one is stored before the 200, once per webhook id', async () => {
    const body = JSON.stringify(signal(1));
    const headers = { 'x-shopify-topic': 'subscription_contracts/update', 'x-shopify-shop-domain': 'nobody.myshopify.com', 'x-shopify-webhook-id': 'hmac-test-1' };
    for (const hmac of [undefined, 'bm90IGEgc2lnbmF0dXJl', sign(body + ' ')]) {
      const res = await post(body, { ...headers, ...(hmac ? { 'x-shopify-hmac-sha256': hmac } : {}) });
      expect(res.status).toBe(401);
      expect((await res.json()).error.code).toBe('unauthorized');
    }
    expect(await count(`SELECT count(*)::int AS n FROM platform_webhooks WHERE webhook_id = $1`, ['hmac-test-1'])).toBe(0);
    const ok = await post(body, { ...headers, 'x-shopify-hmac-sha256': sign(body) });
    expect(ok.status).toBe(200);
    expect(await count(`SELECT count(*)::int AS n FROM platform_webhooks WHERE webhook_id = $1 AND processed_at IS NULL`, ['hmac-test-1'])).toBe(1);
    const again = await post(body, { ...headers, 'x-shopify-hmac-sha256': sign(body) });
    expect(await again.json()).toEqual({ received: true, duplicate: true });
    expect(await count(`SELECT count(*)::int AS n FROM platform_webhooks WHERE webhook_id = $1`, ['hmac-test-1'])).toBe(1);
  });

  it('a signed webhook without its headers, or with a body that is not JSON, is 400, not 500', async () => {
    const res = await post('{', { 'x-shopify-topic': 't', 'x-shopify-shop-domain': 'x.myshopify.com', 'x-shopify-webhook-id': 'bad-json', 'x-shopify-hmac-sha256': sign('{') });
    expect(res.status).toBe(400);
    const noTopic = await post('{}', { 'x-shopify-hmac-sha256': sign('{}') });
    expect(noTopic.status).toBe(400);
  });

  it('a signed webhook nested deeper than 64 or with a key twice in one object is 400, not 500, and stores nothing', async () => {
    const headers = (id: string) => ({ 'x-shopify-topic': 'subscription_contracts/update', 'x-shopify-shop-domain': 'nobody.myshopify.com', 'x-shopify-webhook-id': id });
    const bodies = { 'too-deep': `{"id":1,"note":${'['.repeat(50_000)}${']'.repeat(50_000)}}`, 'twice': '{"id":1,"id":2}' };
    for (const [id, body] of Object.entries(bodies)) {
      const res = await post(body, { ...headers(id), 'x-shopify-hmac-sha256': sign(body) });
      expect(res.status).toBe(400);
      expect((await res.json()).error.code).toBe('invalid_request');
      expect(await count(`SELECT count(*)::int AS n FROM platform_webhooks WHERE webhook_id = $1`, [id])).toBe(0);
    }
  });

  it('webhooks arriving together are each stored once, a NUL in a payload included (jsonb cannot hold one)', async () => {
    const bodies = Array.from({ length: 8 }, (_, i) => JSON.stringify(signal(1000 + i, { status: i === 3 ? 'a\u0000b' : 'plain' })));
    const headers = (i: number) => ({ 'x-shopify-topic': 'subscription_contracts/update', 'x-shopify-shop-domain': 'nobody.myshopify.com', 'x-shopify-webhook-id': `together-${i % 6}` });
    const answers = await Promise.all(bodies.map((b, i) => post(b, { ...headers(i), 'x-shopify-hmac-sha256': sign(b) })));
    expect(answers.map((r) => r.status)).toEqual(Array(8).fill(200));
    const bodiesOf = await Promise.all(answers.map((r) => r.json()));
    expect(bodiesOf.filter((b) => b.duplicate).length).toBe(2);
    expect(await count(`SELECT count(*)::int AS n FROM platform_webhooks WHERE webhook_id LIKE 'together-%'`, [])).toBe(6);
    expect(await count(`SELECT count(*)::int AS n FROM platform_webhooks WHERE webhook_id = 'together-3' AND payload->>'status' = 'a' || chr(65533) || 'b'`, [])).toBe(1);
  });

  it('a signed webhook with a lone surrogate escaped in its JSON, or a Triggered-At no database stores, is stored, not a 500', async () => {
    const headers = (id: string) => ({ 'x-shopify-topic': 'subscription_contracts/update', 'x-shopify-shop-domain': 'nobody.myshopify.com', 'x-shopify-webhook-id': id });
    // In fields the topic documents: its schema refuses any other.
    const lone = `${JSON.stringify(signal(1)).slice(0, -1)},"status":"a\\ud800b","billing_policy":{"\\udc00key":"\\ud83d\\ude00"}}`;
    const res = await post(lone, { ...headers('lone-surrogate'), 'x-shopify-hmac-sha256': sign(lone) });
    expect(res.status).toBe(200);
    expect(await count(`SELECT count(*)::int AS n FROM platform_webhooks WHERE webhook_id = 'lone-surrogate' AND payload->>'status' = 'a' || chr(65533) || 'b'`, [])).toBe(1);
    expect(await count(`SELECT count(*)::int AS n FROM platform_webhooks WHERE webhook_id = 'lone-surrogate' AND payload->'billing_policy'->>(chr(65533) || 'key') = chr(128512)`, [])).toBe(1);
    for (const [i, at] of ['0000-01-01T00:00:00Z', '-000001-01-01T00:00:00Z', '+275760-09-13T00:00:00Z', 'soon'].entries()) {
      const body = JSON.stringify(signal(2000 + i));
      const r = await post(body, { ...headers(`odd-time-${i}`), 'x-shopify-triggered-at': at, 'x-shopify-hmac-sha256': sign(body) });
      expect(r.status, at).toBe(200);
    }
    expect(await count(`SELECT count(*)::int AS n FROM platform_webhooks WHERE webhook_id LIKE 'odd-time-%' AND triggered_at IS NULL`, [])).toBe(4);
  });

  it('a contract signal whose id is past bigint is stored and ignored; the shop\'s other signals are processed', async () => {
    const s = await p.install({ contracts: 1 });
    const body = JSON.stringify(signal('9999999999999999999'));
    const r = await post(body, { 'x-shopify-topic': 'subscription_contracts/update', 'x-shopify-shop-domain': s.domain, 'x-shopify-webhook-id': `past-bigint-${s.domain}`, 'x-shopify-hmac-sha256': sign(body) });
    expect(r.status).toBe(200);
    p.standIn.platform.pause(s.domain, s.contractIds[0]);
    await p.settle();
    expect((await contract(s)).status).toBe('PAUSED');
    expect(await count(`SELECT count(*)::int AS n FROM platform_webhooks WHERE shop_domain = $1 AND processed_at IS NULL`, [s.domain])).toBe(0);
  });

  it('a contract created on the platform is announced even when its first sync fails half-way: the row and contract.created commit together', async () => {
    const s = await p.install({ contracts: 1 });
    // The first event written after this fails (the database going away between the row and its event would do the same).
    await p.t.ctx.db.withSession((run) =>
      run(
        `CREATE SEQUENCE test_event_failures;
         CREATE FUNCTION test_fail_first_event() RETURNS trigger LANGUAGE plpgsql AS $$
           BEGIN IF nextval('test_event_failures') = 1 THEN RAISE EXCEPTION 'event refused by a test'; END IF; RETURN NEW; END $$;
         CREATE TRIGGER test_fail_first_event BEFORE INSERT ON contract_events FOR EACH ROW EXECUTE FUNCTION test_fail_first_event();`,
        [],
        { multi: true },
      ),
    );
    let created: string;
    try {
      created = String(p.standIn.createContract(s.domain).id);
      await p.settle().catch(() => {}); // the webhook's first processing fails (the worker logs it); the signal stays
      expect(await count(`SELECT count(*)::int AS n FROM subscription_contracts WHERE id = $1`, [created])).toBe(0);
    } finally {
      await p.t.ctx.db.withSession((run) =>
        run('DROP TRIGGER test_fail_first_event ON contract_events; DROP FUNCTION test_fail_first_event(); DROP SEQUENCE test_event_failures;', [], { multi: true }),
      );
    }
    p.clock.advance(10 * 60_000); // the signal's retry is due
    await p.settle();
    expect((await contract(s, created)).id).toBe(created);
    expect((await events(s, created)).map((e) => `${e.type}:${e.actor.type}`)).toEqual(['contract.created:platform']);
  });

  it('a plan change the platform could not be asked about for hours is applied once it answers (only contract signals are ever set aside)', async () => {
    const s = await p.install({ contracts: 1, plan: 'basic' });
    const token = p.standIn.sessionToken(s.domain);
    await p.t.inject({ method: 'POST', url: '/admin/api/billing/upgrade', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, payload: {} });
    p.standIn.approveAppSubscription(s.domain);
    await p.settle();
    expect((await get(s.key, `/api/v1/subscription-contracts/${s.contractIds[0]}`)).statusCode).toBe(200);
    // The merchant cancels Enterprise while the platform fails every question about the app's subscriptions.
    p.standIn.faults.add({ kind: 'error', status: 503 } as never, { operation: 'currentAppInstallation', shop: s.domain, count: Infinity });
    const active = p.standIn.shop(s.domain).appSubscriptions.find((x) => x.status === 'ACTIVE')!;
    p.standIn.endAppSubscription(s.domain, active.id, 'CANCELLED');
    await p.standIn.webhooks.flush();
    for (let i = 0; i < 25; i++) {
      await p.t.shopify!.inbox.processDue().catch(() => 0);
      p.clock.advance(11 * 60_000);
    }
    expect(await count(`SELECT count(*)::int AS n FROM platform_webhooks WHERE shop_domain = $1 AND topic = 'app_subscriptions/update' AND processed_at IS NULL AND attempts > 20`, [s.domain])).toBe(1);
    p.standIn.faults.clear();
    await p.settle();
    const res = await get(s.key, `/api/v1/subscription-contracts/${s.contractIds[0]}`);
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe('plan_required');
  });

  it('out of order and late deliveries end with the mirror at the platform’s latest state', async () => {
    const s = await p.install({ contracts: 1 });
    const id = s.contractIds[0];
    p.standIn.webhooks.fault({ mode: 'hold' }, { shop: s.domain });
    p.standIn.platform.pause(s.domain, id);
    p.clock.advance(1000);
    p.standIn.platform.activate(s.domain, id);
    p.clock.advance(1000);
    p.standIn.platform.cancel(s.domain, id);
    p.standIn.webhooks.clearFaults();
    p.standIn.webhooks.release(); // newest first
    await p.settle();
    expect((await contract(s)).status).toBe('CANCELLED');
    // Each signal re-reads the contract: the first processed already saw CANCELLED, the rest were older or equal.
    expect((await events(s)).map((e) => `${e.type}:${e.actor.type}`)).toEqual(['contract.cancelled:platform']);
  });

  it('a webhook that never came is caught by one reconciliation sweep', async () => {
    const s = await p.install({ contracts: 2 });
    p.standIn.webhooks.fault({ mode: 'drop' }, { shop: s.domain, count: 10 });
    p.clock.advance(2000);
    p.standIn.platform.pause(s.domain, s.contractIds[1]);
    p.standIn.platform.update(s.domain, s.contractIds[0], { lines: [{ title: 'Tea 500g', quantity: 3 }] });
    await p.settle();
    expect((await contract(s, s.contractIds[1])).status).toBe('ACTIVE');
    const report = await p.t.shopify!.reconciler.syncShop({ id: s.shopId, domain: s.domain });
    expect(report).toMatchObject({ changed: 2 });
    expect((await contract(s, s.contractIds[1])).status).toBe('PAUSED');
    expect((await contract(s, s.contractIds[0])).lines[0]).toMatchObject({ title: 'Tea 500g', quantity: 3 });
    expect((await events(s, s.contractIds[0])).map((e) => e.type)).toEqual(['contract.updated']);
  });
});

describe('plan, uninstall and privacy', () => {
  it('“Upgrade to Enterprise” creates the subscription; approving it turns API access on', async () => {
    const s = await p.install({ contracts: 1, plan: 'basic' });
    expect((await get(s.key, '/api/v1/subscription-contracts')).statusCode).toBe(403);
    const token = p.standIn.sessionToken(s.domain);
    const up = await p.t.inject({ method: 'POST', url: '/admin/api/billing/upgrade', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, payload: {} });
    expect(up.statusCode).toBe(200);
    expect(up.json().confirmationUrl).toContain(s.domain);
    const [created] = p.standIn.calls('appSubscriptionCreate', s.domain);
    expect(created.args).toMatchObject({ name: 'Enterprise', test: true });
    p.standIn.approveAppSubscription(s.domain);
    await p.settle();
    expect((await get(s.key, '/api/v1/subscription-contracts')).statusCode).toBe(200);
  });

  it('coming back from the platform’s page, the admin learns what became of the subscription: declined, or approved with access on at once', async () => {
    const admin = (domain: string, url: string) => p.t.inject({ method: 'GET', url, headers: { authorization: `Bearer ${p.standIn.sessionToken(domain)}` } });
    const upgrade = (domain: string) =>
      p.t.inject({ method: 'POST', url: '/admin/api/billing/upgrade', headers: { authorization: `Bearer ${p.standIn.sessionToken(domain)}`, 'content-type': 'application/json' }, payload: {} });
    const declined = await p.install({ contracts: 1, plan: 'basic' });
    expect((await upgrade(declined.domain)).statusCode).toBe(200);
    const [first] = p.standIn.shop(declined.domain).appSubscriptions;
    p.standIn.declineAppSubscription(declined.domain, first.id);
    const no = await admin(declined.domain, `/admin/api/billing/upgrade/${first.id}`);
    expect(no.json()).toEqual({ status: 'DECLINED', plan: 'basic' });

    const approved = await p.install({ contracts: 1, plan: 'basic' });
    expect((await upgrade(approved.domain)).statusCode).toBe(200);
    const [sub] = p.standIn.shop(approved.domain).appSubscriptions;
    p.standIn.webhooks.fault({ mode: 'drop' }, { shop: approved.domain, topic: 'app_subscriptions/update' });
    p.standIn.approveAppSubscription(approved.domain, sub.id);
    expect((await get(approved.key, '/api/v1/subscription-contracts')).statusCode).toBe(403); // its webhook is lost
    expect((await admin(approved.domain, `/admin/api/billing/upgrade/${sub.id}`)).json()).toEqual({ status: 'ACTIVE', plan: 'enterprise' });
    expect((await get(approved.key, '/api/v1/subscription-contracts')).statusCode).toBe(200);

    // Another shop's charge, an unknown one, or not a number.
    expect((await admin(approved.domain, `/admin/api/billing/upgrade/${first.id}`)).statusCode).toBe(404);
    expect((await admin(approved.domain, '/admin/api/billing/upgrade/999999999')).statusCode).toBe(404);
    const bad = await admin(approved.domain, '/admin/api/billing/upgrade/abc');
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.code).toBe('invalid_request');
  });

  it('app/uninstalled: keys answer 403 app_not_installed; reinstalling subscribes to webhooks again, reads the plan again, and restores the keys', async () => {
    const s = await p.install({ contracts: 1 });
    const subscribed = p.standIn.shop(s.domain).webhookSubscriptions.map((w) => w.topic).sort();
    expect(subscribed.length).toBeGreaterThan(0);
    p.standIn.uninstall(s.domain);
    await p.settle();
    const res = await get(s.key, `/api/v1/subscription-contracts/${s.contractIds[0]}`);
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe('app_not_installed');
    const row = await p.t.shopify!.installer.installation(s.shopId);
    expect(row?.accessToken).toBeNull();
    p.standIn.install(s.domain);
    await p.openAdmin(s.domain);
    // The platform removed the app's webhook subscriptions with the uninstall: the reinstall makes them again...
    expect(p.standIn.shop(s.domain).webhookSubscriptions.map((w) => w.topic).sort()).toEqual(subscribed);
    // ...so a change made on the platform reaches svc again.
    p.standIn.platform.pause(s.domain, s.contractIds[0]);
    await p.settle();
    expect((await p.t.shopify!.installer.installation(s.shopId))?.webhooksRegisteredAt).not.toBeNull();
    // The plan follows the app subscriptions again: the uninstall cancelled the Enterprise one.
    const forbidden = await get(s.key, `/api/v1/subscription-contracts/${s.contractIds[0]}`);
    expect(forbidden.statusCode).toBe(403);
    expect(forbidden.json().error.code).toBe('plan_required');
    // Reinstalling brings the keys back (with the Enterprise plan: the operator's override here).
    const { setShopPlan } = await import('../src/services/shops.js');
    await setShopPlan({ ctx: p.t.ctx, input: { domain: s.domain, plan: 'enterprise' } });
    const res2 = await get(s.key, `/api/v1/subscription-contracts/${s.contractIds[0]}`);
    expect(res2.statusCode).toBe(200);
    expect(res2.json().contract.status).toBe('PAUSED'); // the platform's pause, received by webhook
  });

  it('customers/redact erases the customer’s email and shipping address from the mirror, stored deliveries and recorded results', async () => {
    const s = await p.install({ contracts: 2 });
    const platformContract = p.standIn.contract(s.domain, s.contractIds[0]);
    const email = platformContract.customer.email;
    await act(s.key, s.contractIds[0], { action: 'pause' }, { 'idempotency-key': 'redact-1' });
    // The stand-in's contracts carry no delivery address yet: give the mirrored contract and the recorded result one,
    // as a platform address would have put there.
    const street = '31 Rue des Redactions';
    const address = { firstName: 'Ada', lastName: 'Lovelace', address1: street, address2: null, city: 'Paris', provinceCode: null, zip: '75002', countryCode: 'FR', phone: null };
    await count(`WITH u AS (UPDATE subscription_contracts SET shipping_address = $2 WHERE id = $1 RETURNING 1) SELECT count(*)::int AS n FROM u`, [s.contractIds[0], JSON.stringify(address)]);
    await count(
      `WITH u AS (UPDATE idempotency_keys SET result = jsonb_set(result::jsonb, '{shippingAddress}', $2::jsonb)::json WHERE shop_id = $1 AND result IS NOT NULL RETURNING 1) SELECT count(*)::int AS n FROM u`,
      [s.shopId, JSON.stringify(address)],
    );
    expect((await contract(s)).shippingAddress.address1).toBe(street);
    expect(await count(`SELECT count(*)::int AS n FROM idempotency_keys WHERE shop_id = $1 AND result::text LIKE $2`, [s.shopId, `%${street}%`])).toBe(1);
    p.standIn.sendCompliance(s.domain, 'customers/redact', { customer: platformContract.customer });
    await p.settle();
    expect((await contract(s)).customer.email).toBe('');
    expect((await contract(s)).shippingAddress).toBeNull();
    expect(await count(`SELECT count(*)::int AS n FROM idempotency_keys WHERE shop_id = $1 AND result::text LIKE $2`, [s.shopId, `%${email}%`])).toBe(0);
    expect(await count(`SELECT count(*)::int AS n FROM idempotency_keys WHERE shop_id = $1 AND result::text LIKE $2`, [s.shopId, `%${street}%`])).toBe(0);
    expect(await count(`SELECT count(*)::int AS n FROM subscription_contracts WHERE customer_email = $1`, [email])).toBe(0);
    expect(await count(`SELECT count(*)::int AS n FROM platform_webhooks WHERE payload::text LIKE $1`, [`%${email}%`])).toBe(0);
  });

  it('shop/redact deletes every row of a shop that uninstalled', async () => {
    const s = await p.install({ contracts: 2 });
    await act(s.key, s.contractIds[0], { action: 'pause' });
    // A bulk job (and its items) is the shop's too.
    const job = await p.t.inject({ method: 'POST', url: '/api/v1/bulk-jobs', headers: { authorization: `Bearer ${s.key}` }, payload: { preview: true, selector: { contractIds: s.contractIds }, change: { action: 'skip' } } });
    expect(job.statusCode).toBe(201);
    expect(await count(`SELECT count(*)::int AS n FROM bulk_jobs WHERE shop_id = $1`, [s.shopId])).toBe(1);
    p.standIn.uninstall(s.domain);
    await p.settle();
    p.standIn.sendCompliance(s.domain, 'shop/redact');
    await p.settle();
    // Every table with a shop_id column, so a table added later is held to this as well.
    const tables = await p.t.ctx.db.withSession((run) => run<{ table_name: string }>(
      `SELECT table_name FROM information_schema.columns WHERE table_schema = current_schema() AND column_name = 'shop_id' ORDER BY table_name`),
    );
    expect(tables.map((r) => r.table_name)).toEqual(expect.arrayContaining(['bulk_jobs', 'subscription_contracts', 'api_keys']));
    for (const { table_name: table } of tables) {
      expect(await count(`SELECT count(*)::int AS n FROM ${table} WHERE shop_id = $1`, [s.shopId]), table).toBe(0);
    }
    expect(await count(`SELECT count(*)::int AS n FROM bulk_job_items WHERE job_id = $1`, [job.json().bulkJob.id])).toBe(0);
    // A request log batch still in a buffer (this instance's or another's) writes nothing of the shop after it.
    const late = { s: s.shopId, k: randomUUID(), g: null, f: 'abcd', t: Date.now(), m: 'GET', p: '/api/v1/subscription-contracts', tool: null, st: 200, ms: null, e: null, d: 100, rid: randomUUID(), ik: null, ip: '127.0.0.1', ua: 'test' };
    await insertRequestLogBatch(p.t.ctx.db, [JSON.stringify(late)]);
    expect(await count(`SELECT count(*)::int AS n FROM request_log WHERE shop_id = $1`, [s.shopId])).toBe(0);
    expect(await count(`SELECT count(*)::int AS n FROM shops WHERE domain = $1`, [s.domain])).toBe(0);
    expect(await count(`SELECT count(*)::int AS n FROM platform_webhooks WHERE shop_domain = $1`, [s.domain])).toBe(0);
  });
});

describe('scheduled resume', () => {
  it('calls activate exactly once with two sweepers at once, and records one scheduler event', async () => {
    const { ResumeSweep } = await import('../src/workers/resumeSweep.js');
    const s = await p.install({ contracts: 1 });
    const resumeAt = new Date(p.clock.now().getTime() + 60_000).toISOString();
    expect((await act(s.key, s.contractIds[0], { action: 'pause', resumeAt })).statusCode).toBe(200);
    p.clock.advance(61_000);
    const before = p.standIn.calls('subscriptionContractActivate', s.domain).length;
    await Promise.all([new ResumeSweep(p.t.ctx, { intervalMs: 1000 }).tick(), new ResumeSweep(p.t.ctx, { intervalMs: 1000 }).tick()]);
    expect(p.standIn.calls('subscriptionContractActivate', s.domain).length - before).toBe(1);
    expect(p.standIn.contract(s.domain, s.contractIds[0]).status).toBe('ACTIVE');
    await p.settle();
    expect((await events(s)).map((e) => `${e.type}:${e.actor.type}`)).toEqual(['contract.resumed:scheduler', 'contract.paused:api_key']);
  });
});
