import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSvcClient, SvcApiError, type SvcClient } from '../clients/typescript/src/index.js';
import { startTestApp, type TestApp } from './support/app.js';
import { eventRows } from './support/fixtures.js';
import { listen } from './support/mcp.js';

/**
 * @svc/client (docs/product.md §11) against a real listening server: reads, paging, every action, and the API's refusals as
 * typed errors. The test clock stands at 2026-11-22T10:00:00Z.
 */

let t: TestApp;
let base: string;
let shop: Awaited<ReturnType<TestApp['shopWithKey']>>;
let svc: SvcClient;
let seeded: string[];

beforeAll(async () => {
  t = await startTestApp();
  base = await listen(t);
  shop = await t.shopWithKey();
  seeded = (await t.seed(shop.shopId, 5)).map((c) => c.id);
  svc = createSvcClient({ baseUrl: base, apiKey: shop.key });
});
afterAll(() => t.close());

/** Catches the error a call throws (failing the test if it resolves). */
async function refusal(p: Promise<unknown>): Promise<SvcApiError> {
  const err = await p.then(
    () => expect.fail('expected the call to be refused'),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SvcApiError);
  return err as SvcApiError;
}

describe('reads', () => {
  it('getCurrentKey: what the key is and what it may do', async () => {
    expect(await svc.getCurrentKey()).toEqual({
      id: shop.keyId,
      name: 'test',
      fingerprint: shop.fingerprint,
      access: 'read_write',
      permissions: { contracts: 'write', billing: 'write', webhooks: 'write', bulk_jobs: 'write' },
      shop: { domain: shop.domain },
    });
  });

  it('lists the shop\'s contracts page by page, following nextCursor to the end', async () => {
    const ids: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await svc.listSubscriptionContracts({ limit: 2, cursor });
      expect(page.contracts.length).toBeLessThanOrEqual(2);
      ids.push(...page.contracts.map((c) => c.id));
      cursor = page.nextCursor ?? undefined;
      pages++;
    } while (cursor);
    expect(ids.sort()).toEqual([...seeded].sort());
    expect(pages).toBe(3);
  });

  it('gets one contract, the same as the list shows it', async () => {
    const { contracts } = await svc.listSubscriptionContracts({ status: ['ACTIVE'], limit: 100 });
    const listed = contracts.find((c) => c.id === seeded[0])!;
    const contract = await svc.getSubscriptionContract(seeded[0]);
    expect(contract).toEqual(listed);
    expect(contract.status).toBe('ACTIVE');
  });
});

describe('edits', () => {
  it('previews a quantity change without changing anything, then makes it, with the totals of the new quantity', async () => {
    // A contract of its own (seeded after the reads above): the later tests count the events of the first five.
    const [{ id }] = await t.seed(shop.shopId, 1);
    const before = await svc.getSubscriptionContract(id);
    const line = before.lines[0];
    const preview = await svc.editSubscriptionContract(id, { operations: [{ op: 'set_quantity', lineId: line.id, quantity: line.quantity + 2 }], preview: true });
    expect(preview.preview).toBe(true);
    expect(preview.contract.lines[0].quantity).toBe(line.quantity + 2);
    expect(await svc.getSubscriptionContract(id)).toEqual(before);
    const done = await svc.editSubscriptionContract(id, { operations: [{ op: 'set_quantity', lineId: line.id, quantity: line.quantity + 2 }] });
    expect(done.preview).toBe(false);
    expect(done.contract.totals).toEqual(preview.contract.totals);
    expect(done.contract.totals).not.toEqual(before.totals);
    expect(await svc.getSubscriptionContract(id)).toEqual(done.contract);
  });

  it('an unknown line is a typed refusal naming the problem', async () => {
    const err = await refusal(svc.editSubscriptionContract(seeded[0], { operations: [{ op: 'remove_line', lineId: '999999' }] }));
    expect(err.status).toBe(422);
    expect(err.code).toBe('invalid_edit');
  });
});

describe('actions and history', () => {
  it('pause with resumeAt, resume, skip, reschedule, cancel: each returns the contract after it', async () => {
    const id = seeded[1];
    const before = await svc.getSubscriptionContract(id);

    const paused = await svc.pause(id, { resumeAt: '2027-01-05T00:00:00Z' });
    expect(paused).toMatchObject({ id, status: 'PAUSED', resumeAt: '2027-01-05T00:00:00.000Z' });
    expect(await svc.getSubscriptionContract(id)).toEqual(paused);

    expect(await svc.resume(id)).toMatchObject({ status: 'ACTIVE', resumeAt: null });
    const skipped = await svc.skip(id);
    expect(skipped.nextBillingDate > before.nextBillingDate).toBe(true);
    expect(await svc.reschedule(id, { nextBillingDate: '2027-03-01T09:00:00Z' })).toMatchObject({ nextBillingDate: '2027-03-01T09:00:00.000Z' });
    expect(await svc.cancel(id, { reason: 'Moving abroad' })).toMatchObject({ status: 'CANCELLED', cancellationReason: 'Moving abroad' });

    const { events, nextCursor } = await svc.listContractEvents(id);
    expect(events.map((e) => e.type)).toEqual(['contract.cancelled', 'contract.rescheduled', 'contract.skipped', 'contract.resumed', 'contract.paused']);
    expect(nextCursor).toBeNull();
    for (const e of events) expect(e.actor).toEqual({ type: 'api_key', keyFingerprint: shop.fingerprint });
  });

  it('an action repeated with the caller\'s own Idempotency-Key acts once and answers the same', async () => {
    const id = seeded[2];
    const key = `order-change-${id}`;
    const first = await svc.skip(id, { idempotencyKey: key });
    const again = await svc.skip(id, { idempotencyKey: key });
    expect(again).toEqual(first);
    expect(await eventRows(t, id)).toHaveLength(1);
    // Without a key of the caller's, every call gets a fresh one: a second skip is a second action.
    await svc.skip(id);
    expect(await eventRows(t, id)).toHaveLength(2);
  });
});

describe('options', () => {
  it('sends every request through the caller\'s fetch, with the key only in the Authorization header', async () => {
    const seen: { url: string; authorization: string | null }[] = [];
    const own = createSvcClient({
      baseUrl: `${base}/`,
      apiKey: shop.key,
      fetch: (input, init) => {
        const req = input as Request;
        seen.push({ url: req.url, authorization: req.headers.get('authorization') });
        return fetch(input, init);
      },
    });
    expect((await own.getSubscriptionContract(seeded[0])).id).toBe(seeded[0]);
    expect(seen).toEqual([{ url: `${base}/api/v1/subscription-contracts/${seeded[0]}`, authorization: `Bearer ${shop.key}` }]);
  });
});

describe('refusals are SvcApiErrors carrying the envelope', () => {
  it('404 not_found for an unknown contract', async () => {
    const err = await refusal(svc.getSubscriptionContract('999999999'));
    expect(err).toMatchObject({ status: 404, code: 'not_found' });
    expect(err.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(err.message.length).toBeGreaterThan(0);
  });

  it('409 invalid_state: skip on a paused contract, with the message and the action\'s Idempotency-Key', async () => {
    const id = seeded[3];
    await svc.pause(id);
    const err = await refusal(svc.skip(id, { idempotencyKey: 'skip-paused' }));
    expect(err).toMatchObject({ status: 409, code: 'invalid_state', idempotencyKey: 'skip-paused' });
    expect(err.message).toMatch(/PAUSED/);
    expect(await eventRows(t, id)).toHaveLength(1);
  });

  it('400 invalid_request with details: a date in the past', async () => {
    const err = await refusal(svc.reschedule(seeded[4], { nextBillingDate: '2020-01-01T00:00:00Z' }));
    expect(err).toMatchObject({ status: 400, code: 'invalid_request' });
    expect(err.details).toEqual([{ path: 'nextBillingDate', message: 'must be in the future' }]);
  });

  it('401 unauthorized for a revoked or made-up key', async () => {
    const wrong = createSvcClient({ baseUrl: base, apiKey: 'svc_live_wrong' });
    const err = await refusal(wrong.listSubscriptionContracts());
    expect(err).toMatchObject({ status: 401, code: 'unauthorized' });
  });
});
