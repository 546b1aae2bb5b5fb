import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_DOCUMENTS, BULK_CONTRACTS_QUERY } from '../src/platform/shopify/documents.js';
import { WEBHOOK_TOPICS } from '../src/platform/shopify/install.js';
import { bearer } from './support/app.js';
import { startPlatform, type PlatformHarness } from './support/platform.js';
import { validateAgainstAdminSchema } from './support/shopify/index.js';

let p: PlatformHarness;
beforeAll(async () => {
  p = await startPlatform();
});
afterAll(async () => {
  await p?.close();
});

const act = (key: string, id: string, body: object) =>
  p.t.inject({ method: 'POST', url: `/api/v1/subscription-contracts/${id}/actions`, headers: { ...bearer(key), 'content-type': 'application/json' }, payload: body });
const get = (key: string, url: string) => p.t.inject({ method: 'GET', url, headers: bearer(key) });
const history = async (key: string, id: string) => (await get(key, `/api/v1/subscription-contracts/${id}/events`)).json().events as { type: string; actor: { type: string } }[];

describe('documents', () => {
  it('every document svc sends is valid against the platform’s Admin schema (2026-10), without deprecated fields', () => {
    for (const [name, document] of Object.entries({ ...ALL_DOCUMENTS, BULK_CONTRACTS_QUERY })) {
      expect(validateAgainstAdminSchema(document, { noDeprecated: true }), name).toEqual([]);
    }
  });
});

describe('install', () => {
  it('exchanges the first session token, stores the token encrypted, registers every webhook once, and imports the contracts', async () => {
    const shop = await p.install({ contracts: 7 });
    const installation = await p.t.shopify!.installer.installation(shop.shopId);
    expect(installation?.importStatus).toBe('completed');
    expect(installation?.importDone).toBe(7);
    const live = p.standIn.tokens.liveAccessTokens(shop.domain);
    expect(live.length).toBeGreaterThan(0);
    for (const token of live) expect(installation!.accessToken).not.toContain(token);
    expect(installation!.accessToken).toMatch(/^v1\./);
    const topics = p.standIn.shop(shop.domain).webhookSubscriptions.map((s) => s.topic).sort();
    expect(topics).toEqual([...WEBHOOK_TOPICS].sort());
    // Opening the admin again registers nothing twice.
    await p.openAdmin(shop.domain);
    expect(p.standIn.shop(shop.domain).webhookSubscriptions).toHaveLength(WEBHOOK_TOPICS.length);

    const list = (await get(shop.key, '/api/v1/subscription-contracts?limit=100')).json();
    expect(list.contracts.map((c: { id: string }) => c.id).sort()).toEqual([...shop.contractIds].sort());
    const platform = p.standIn.contract(shop.domain, shop.contractIds[0]);
    const mirror = list.contracts.find((c: { id: string }) => c.id === shop.contractIds[0]);
    expect(mirror.status).toBe(platform.status);
    expect(mirror.customer.email).toBe(platform.customer.email);
    expect(mirror.lines[0].title).toBe(platform.lines[0].title);
    expect(Date.parse(mirror.nextBillingDate)).toBe(platform.nextBillingDate!.getTime());
  });

  it('a contract changed on the platform while the import pages through the shop is imported, and counted, once', async () => {
    const domain = `midimport-${Date.now()}.myshopify.com`;
    p.standIn.createShop(domain);
    const ids: number[] = [];
    for (let i = 0; i < 20; i++) ids.push(p.standIn.createContract(domain, {}, { silent: true }).id);
    // The pages answer late, so the change lands between two of them: once the second page has been asked for.
    p.standIn.faults.add({ kind: 'latency', ms: 150 }, { shop: domain, operation: 'SvcContractsPage', count: 3 });
    const pages = () => p.standIn.requests.filter((r) => r.shop === domain && r.operationName === 'SvcContractsPage').length;
    const opening = p.openAdmin(domain);
    while (pages() < 2) await new Promise((r) => setImmediate(r));
    p.standIn.platform.update(domain, ids[0], { lines: [{ title: 'Changed mid-import', quantity: 2 }] });
    await opening;
    await p.settle();
    const shop = (await p.t.ctx.db.withSession((q) => q<{ id: string }>(`SELECT id::text AS id FROM shops WHERE domain = $1`, [domain])))[0];
    expect(await p.t.shopify!.installer.installation(shop.id)).toMatchObject({ importStatus: 'completed', importDone: 20, importTotal: 20 });
    const [{ n }] = await p.t.ctx.db.withSession((q) => q<{ n: number }>(`SELECT count(*)::int AS n FROM subscription_contracts WHERE shop_id = $1`, [shop.id]));
    expect(n).toBe(20);
  });

  it('a large shop is imported with a bulk operation, every line of every contract included', async () => {
    const shop = await p.install({ contracts: 260 });
    const installation = await p.t.shopify!.installer.installation(shop.shopId);
    expect(installation).toMatchObject({ importStatus: 'completed', importMode: 'bulk', importDone: 260, importTotal: 260 });
    expect(p.standIn.calls('bulkOperationRunQuery', shop.domain)).toHaveLength(1);
    const n = await p.t.ctx.db.withSession((run) => run<{ n: number }>(`SELECT count(*)::int AS n FROM subscription_contracts WHERE shop_id = $1`, [shop.shopId]));
    expect(n[0].n).toBe(260);
    const last = shop.contractIds.at(-1)!;
    const mirror = (await get(shop.key, `/api/v1/subscription-contracts/${last}`)).json().contract;
    expect(mirror.lines.map((l: { title: string }) => l.title)).toEqual(p.standIn.contract(shop.domain, last).lines.map((l) => l.title));
  });

  it('the admin screen shows the import and the mode', async () => {
    const shop = await p.install({ contracts: 2 });
    const res = await p.t.inject({ method: 'GET', url: '/admin/api/shop', headers: { authorization: `Bearer ${p.standIn.sessionToken(shop.domain)}` } });
    expect(res.json().platform).toMatchObject({ mode: 'shopify', import: { status: 'completed', imported: 2, mode: 'paged' } });
  });
});

describe('actions change the platform first', () => {
  it('pause, resume, skip, reschedule and cancel send the right mutation with the right variables, then record one event each', async () => {
    const shop = await p.install({ contracts: 1 });
    const id = shop.contractIds[0];
    const gid = `gid://shopify/SubscriptionContract/${id}`;
    const before = p.standIn.requests.length;

    expect((await act(shop.key, id, { action: 'pause' })).statusCode).toBe(200);
    expect(p.standIn.contract(shop.domain, id).status).toBe('PAUSED');
    expect((await act(shop.key, id, { action: 'resume' })).statusCode).toBe(200);
    expect(p.standIn.contract(shop.domain, id).status).toBe('ACTIVE');

    const nbd = p.standIn.contract(shop.domain, id).nextBillingDate!;
    const skipped = await act(shop.key, id, { action: 'skip' });
    expect(skipped.statusCode).toBe(200);
    const afterSkip = p.standIn.contract(shop.domain, id).nextBillingDate!;
    expect(afterSkip.getTime()).toBeGreaterThan(nbd.getTime());
    expect(Date.parse(skipped.json().contract.nextBillingDate)).toBe(afterSkip.getTime());

    const date = new Date(p.clock.now().getTime() + 40 * 86_400_000);
    date.setUTCMilliseconds(0);
    expect((await act(shop.key, id, { action: 'reschedule', nextBillingDate: date.toISOString() })).statusCode).toBe(200);
    expect(p.standIn.contract(shop.domain, id).nextBillingDate!.getTime()).toBe(date.getTime());

    expect((await act(shop.key, id, { action: 'cancel', reason: 'moving' })).statusCode).toBe(200);
    expect(p.standIn.contract(shop.domain, id).status).toBe('CANCELLED');

    const calls = p.standIn.requests.slice(before).flatMap((r) => r.rootCalls ?? []);
    const names = calls.map((c) => c.field);
    expect(names).toEqual([
      'subscriptionContractPause',
      'subscriptionContractActivate',
      'subscriptionBillingCycleSkip',
      'subscriptionBillingCycle',
      'subscriptionContractSetNextBillingDate',
      'subscriptionContractSetNextBillingDate',
      'subscriptionContractCancel',
    ]);
    expect(calls[0].args).toEqual({ subscriptionContractId: gid });
    expect(calls[2].args).toMatchObject({ billingCycleInput: { contractId: gid, selector: { date: nbd.toISOString() } } });
    expect(calls[5].args).toMatchObject({ contractId: gid });

    // The platform's own webhooks for those changes are echoes: no second event.
    await p.settle();
    const events = await history(shop.key, id);
    expect(events.map((e) => e.type).reverse()).toEqual(['contract.paused', 'contract.resumed', 'contract.skipped', 'contract.rescheduled', 'contract.cancelled']);
    expect(events.every((e) => e.actor.type === 'api_key')).toBe(true);

    // A call lease commits without waiting for the disk, for its own transaction alone: every connection of the
    // pool (more statements at once than it has connections) still commits a change durably.
    const settings = await Promise.all(Array.from({ length: 40 }, () => p.t.ctx.db.prepared<{ s: string }>('test_sync_commit', `SELECT current_setting('synchronous_commit') AS s, pg_sleep(0.01)`, [])));
    expect(new Set(settings.map(([r]) => r.s))).toEqual(new Set(['on']));
  });
});

describe('an action’s answer carries the platform’s other changes', () => {
  it('lines edited on the platform just before a pause reach the mirror with the pause, as a platform contract.updated', async () => {
    const shop = await p.install({ contracts: 1 });
    const id = shop.contractIds[0];
    p.standIn.webhooks.fault({ mode: 'drop' }, { shop: shop.domain, count: 10 });
    p.standIn.platform.update(shop.domain, id, { lines: [{ title: 'Coffee 1kg', quantity: 5 }] });
    const res = await act(shop.key, id, { action: 'pause' });
    expect(res.statusCode).toBe(200);
    expect(res.json().contract.lines[0]).toMatchObject({ title: 'Coffee 1kg', quantity: 5 });
    await p.settle();
    expect((await history(shop.key, id)).map((e) => `${e.type}:${e.actor.type}`).reverse()).toEqual(['contract.paused:api_key', 'contract.updated:platform']);
  });
});

describe('webhooks in', () => {
  it('a change made on the platform appears with actor platform, once, even when the webhook comes twice', async () => {
    const shop = await p.install({ contracts: 1 });
    const id = shop.contractIds[0];
    p.standIn.webhooks.fault({ mode: 'twice' }, { count: 1 });
    p.standIn.platform.pause(shop.domain, id);
    await p.settle();
    const contract = (await get(shop.key, `/api/v1/subscription-contracts/${id}`)).json().contract;
    expect(contract.status).toBe('PAUSED');
    const events = await history(shop.key, id);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'contract.paused', actor: { type: 'platform' } });
  });

  it('asks the platform only what it must: an echo is not read back, and signals are read eight contracts a request', async () => {
    const shop = await p.install({ contracts: 12 });
    const reads = (from: number) =>
      p.standIn.requests.slice(from).flatMap((r) => (r.rootCalls ?? []).filter((c) => c.field === 'nodes' || c.field === 'subscriptionContract'));
    // svc's own pause: the mirror already holds the revision the platform's webhook names.
    expect((await act(shop.key, shop.contractIds[0], { action: 'pause' })).statusCode).toBe(200);
    let from = p.standIn.requests.length;
    await p.settle();
    expect(p.standIn.webhooks.deliveries.length).toBeGreaterThan(0);
    expect(reads(from)).toEqual([]);

    // Twelve changes on the platform, two of them delivered twice: two requests, one event each.
    p.standIn.webhooks.fault({ mode: 'twice' }, { count: 2 });
    for (const id of shop.contractIds.slice(1)) p.standIn.platform.pause(shop.domain, id);
    p.standIn.platform.update(shop.domain, shop.contractIds[0], { lines: [{ title: 'Tea 250g', quantity: 2 }] });
    from = p.standIn.requests.length;
    await p.settle();
    const calls = reads(from);
    expect(calls.map((c) => c.field)).toEqual(['nodes', 'nodes']);
    expect(calls.flatMap((c) => (c.args as { ids: string[] }).ids)).toHaveLength(12);
    for (const id of shop.contractIds.slice(1)) {
      expect((await history(shop.key, id)).map((e) => `${e.type}:${e.actor.type}`)).toEqual(['contract.paused:platform']);
    }
    const first = (await get(shop.key, `/api/v1/subscription-contracts/${shop.contractIds[0]}`)).json().contract;
    expect(first.lines[0]).toMatchObject({ title: 'Tea 250g', quantity: 2 });
  });

  it('an echo that comes after its action is stored as processed: the inbox has no round to run for it', async () => {
    const shop = await p.install({ contracts: 2 });
    const [id, other] = shop.contractIds;
    // The platform's webhooks for the pause are held until svc has committed it, then delivered.
    p.standIn.webhooks.fault({ mode: 'hold' }, { count: Infinity });
    expect((await act(shop.key, id, { action: 'pause' })).statusCode).toBe(200);
    // And a change made on the platform meanwhile: its signal is news, for the inbox.
    p.standIn.platform.pause(shop.domain, other);
    p.standIn.webhooks.clearFaults();
    p.standIn.webhooks.release('fifo');
    await p.standIn.webhooks.flush();
    const rows = await p.t.ctx.db.withSession((run) =>
      run<{ contract: string; processed: boolean; attempts: number }>(
        `SELECT payload->>'id' AS contract, processed_at IS NOT NULL AS processed, attempts FROM platform_webhooks
          WHERE shop_domain = $1 AND topic LIKE 'subscription_contracts/%' ORDER BY received_at`,
        [shop.domain],
      ),
    );
    expect(rows.filter((r) => r.contract === id).length).toBeGreaterThan(0);
    expect(rows.filter((r) => r.contract === id).every((r) => r.processed && r.attempts === 0)).toBe(true);
    expect(rows.filter((r) => r.contract === other).every((r) => !r.processed)).toBe(true);
    // One round, for the platform's own change only.
    expect(await p.t.shopify!.inbox.processDue()).toBe(rows.filter((r) => r.contract === other).length);
    expect(await p.t.shopify!.inbox.processDue()).toBe(0);
    expect((await history(shop.key, id)).map((e) => `${e.type}:${e.actor.type}`)).toEqual(['contract.paused:api_key']);
    expect((await history(shop.key, other)).map((e) => `${e.type}:${e.actor.type}`)).toEqual(['contract.paused:platform']);
  });

  it('a contract created on the platform is imported with contract.created', async () => {
    const shop = await p.install({ contracts: 0 });
    const c = p.standIn.createContract(shop.domain);
    await p.settle();
    const res = await get(shop.key, `/api/v1/subscription-contracts/${c.id}`);
    expect(res.statusCode).toBe(200);
    expect((await history(shop.key, String(c.id))).map((e) => e.type)).toEqual(['contract.created']);
  });
});
