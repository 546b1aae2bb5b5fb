import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { IdempotencyCleanup } from '../src/workers/idempotencyCleanup.js';
import { requestAction } from '../src/services/contractRequests.js';
import { PRESETS } from '../src/domain/permissions.js';
import { resolvedCaller } from '../src/services/principal.js';
import { claimIdempotencyKey, idempotencyKeyDigest, requestFingerprint } from '../src/services/idempotency.js';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { API, adminAuth, contractRow, eventRows, expectError, secondInstance, sql } from './support/fixtures.js';

/**
 * Idempotency-Key on the API's POSTs (docs/product.md §4): one execution per (shop, key, request) for 24 h, replayed
 * byte for byte; the key is scoped to the shop, refused for another request, held while running, and given back
 * after a 5xx or when its holder vanished.
 */

let t: TestApp;
// A test-only POST route under /api/v1 whose outcome the test controls: fail with a 500, or wait for a signal.
const flaky = { failures: 0, gate: null as Promise<void> | null, runs: 0 };
beforeAll(async () => {
  t = await startTestApp({
    extraRoutes: (app) =>
      // Under /api/v1/, so the app's key gate authenticates it like every API route (an operation that needs no
      // permission, as the calling key's own GET /key).
      app.post('/api/v1/test-flaky', { schema: { operationId: 'getCurrentKey', hide: true } }, async () => {
        flaky.runs++;
        if (flaky.gate) await flaky.gate;
        if (flaky.failures > 0) {
          flaky.failures--;
          throw new Error('boom');
        }
        return { ok: true, run: flaky.runs };
      }),
  });
});
afterAll(() => t.close());

const actions = (id: string) => `${API}/${id}/actions`;
let keyCounter = 0;
const newKey = () => `test-key-${process.pid}-${++keyCounter}`;

async function contractWithKey() {
  const s = await t.shopWithKey();
  const [c] = await t.seed(s.shopId, 1);
  return { ...s, contractId: c.id };
}

function post(key: string, url: string, payload: unknown, idem?: string, app: TestApp = t) {
  return app.inject({ method: 'POST', url, payload: payload as object, headers: { ...bearer(key), ...(idem === undefined ? {} : { 'idempotency-key': idem }) } });
}

const idempotencyRows = (shopId: string) =>
  sql<{ key_digest: string; state: string; status_code: number | null }>(t, 'SELECT key_digest, state, status_code FROM idempotency_keys WHERE shop_id = $1', [shopId]);

describe('the same key and the same request', () => {
  it('executes once and replays the first status and body with Idempotent-Replayed: true', async () => {
    const { key, contractId } = await contractWithKey();
    const idem = newKey();
    const first = await post(key, actions(contractId), { action: 'skip' }, idem);
    expect(first.statusCode).toBe(200);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const afterFirst = await contractRow(t, contractId);

    t.clock.advance(60 * 60_000);
    // Same request: the same fields in another order.
    const again = await t.inject({
      method: 'POST',
      url: actions(contractId),
      headers: { ...bearer(key), 'idempotency-key': idem, 'content-type': 'application/json' },
      payload: '{ "action" : "skip" }',
    });
    expect(again.statusCode).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.headers['original-request-id']).toBe(first.headers['x-request-id']);
    expect(again.headers['x-request-id']).not.toBe(first.headers['x-request-id']);
    expect(again.body).toBe(first.body);
    // Nothing else happened: one skip, one event.
    expect((await contractRow(t, contractId)).nextBillingDate).toEqual(afterFirst.nextBillingDate);
    expect((await eventRows(t, contractId)).filter((e) => e.type === 'contract.skipped')).toHaveLength(1);
  });

  it('replays a 4xx too, even once the request would now succeed, with the envelope naming the replay', async () => {
    const { key, contractId } = await contractWithKey();
    const idem = newKey();
    const first = await post(key, actions(contractId), { action: 'resume' }, idem);
    const err = expectError(first, 409, 'invalid_state');

    await post(key, actions(contractId), { action: 'pause' }); // now PAUSED: a resume would succeed
    const again = await post(key, actions(contractId), { action: 'resume' }, idem);
    const replayed = expectError(again, 409, 'invalid_state');
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(replayed.message).toBe(err.message);
    expect(again.headers['original-request-id']).toBe(err.requestId);
    expect((await contractRow(t, contractId)).status).toBe('PAUSED');
  });

  it('without the header, every request executes as before', async () => {
    const { key, contractId, shopId } = await contractWithKey();
    const a = await post(key, actions(contractId), { action: 'skip' });
    const b = await post(key, actions(contractId), { action: 'skip' });
    expect([a.statusCode, b.statusCode]).toEqual([200, 200]);
    expect(b.headers['idempotent-replayed']).toBeUndefined();
    expect((await eventRows(t, contractId)).filter((e) => e.type === 'contract.skipped')).toHaveLength(2);
    expect(await idempotencyRows(shopId)).toHaveLength(0);
  });
});

describe('refusals', () => {
  it('the same key with another body or another path is 422 idempotency_key_reused, and nothing runs', async () => {
    const { key, contractId, shopId } = await contractWithKey();
    const [other] = await t.seed(shopId, 1);
    const idem = newKey();
    expect((await post(key, actions(contractId), { action: 'skip' }, idem)).statusCode).toBe(200);
    const events = (await eventRows(t, contractId)).length;

    expectError(await post(key, actions(contractId), { action: 'cancel' }, idem), 422, 'idempotency_key_reused');
    expectError(await post(key, actions(other.id), { action: 'skip' }, idem), 422, 'idempotency_key_reused');
    expect((await contractRow(t, contractId)).status).toBe('ACTIVE');
    expect(await eventRows(t, contractId)).toHaveLength(events);
    expect(await eventRows(t, other.id)).toHaveLength(0);
  });

  it.each([
    ['empty', ''],
    ['256 characters', 'k'.repeat(256)],
    ['a non-ASCII character', 'clé'],
    ['a control character', 'a\u0001b'],
  ])('a key that is %s is 400 invalid_request naming the header, and nothing runs', async (_what, idem) => {
    const { key, contractId } = await contractWithKey();
    const res = await post(key, actions(contractId), { action: 'cancel' }, idem);
    const err = expectError(res, 400, 'invalid_request');
    expect(err.details).toEqual([{ path: 'idempotency-key', message: 'must be 1 to 255 printable ASCII characters' }]);
    expect((await contractRow(t, contractId)).status).toBe('ACTIVE');
  });

  it('a key of 255 printable characters, spaces and punctuation included, is accepted', async () => {
    const { key, contractId } = await contractWithKey();
    const idem = ' !"#$%&\'()*+,-./09:;<=>?@AZ[\\]^_`az{|}~'.padEnd(255, 'x').replace(/^ /, 'x');
    expect((await post(key, actions(contractId), { action: 'skip' }, idem)).statusCode).toBe(200);
    expect((await post(key, actions(contractId), { action: 'skip' }, idem)).headers['idempotent-replayed']).toBe('true');
  });

  it('a refused authentication claims nothing: the key still works for the real request', async () => {
    const { key, contractId, shopId } = await contractWithKey();
    const idem = newKey();
    const forged = key.slice(0, -1) + (key.endsWith('0') ? '1' : '0');
    expectError(await post(forged, actions(contractId), { action: 'skip' }, idem), 401, 'unauthorized');
    expect(await idempotencyRows(shopId)).toHaveLength(0);
    expect((await post(key, actions(contractId), { action: 'skip' }, idem)).headers['idempotent-replayed']).toBeUndefined();
  });
});

describe('scope and storage', () => {
  it('two shops may use the same key: each executes its own request', async () => {
    const a = await contractWithKey();
    const b = await contractWithKey();
    const idem = newKey();
    const ra = await post(a.key, actions(a.contractId), { action: 'skip' }, idem);
    const rb = await post(b.key, actions(b.contractId), { action: 'skip' }, idem);
    expect([ra.statusCode, rb.statusCode]).toEqual([200, 200]);
    expect(rb.headers['idempotent-replayed']).toBeUndefined();
    expect(rb.json().contract.id).toBe(b.contractId);
  });

  it('keeps the key only as a digest, in the database (another instance replays it)', async () => {
    const { key, contractId, shopId } = await contractWithKey();
    const idem = newKey();
    const first = await post(key, actions(contractId), { action: 'skip' }, idem);
    const rows = await sql<Record<string, unknown>>(t, 'SELECT * FROM idempotency_keys WHERE shop_id = $1', [shopId]);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ key_digest: createHash('sha256').update(idem).digest('hex'), state: 'completed', status_code: 200 });
    expect(JSON.stringify(rows)).not.toContain(idem);

    const b = await secondInstance(t);
    try {
      const replay = await post(key, actions(contractId), { action: 'skip' }, idem, b);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.body).toBe(first.body);
    } finally {
      await b.close();
    }
  });

  it('is not applied to admin key generation: each request makes a new key and no secret is stored', async () => {
    const { domain, shopId } = await t.shopWithKey();
    const headers = { ...(await adminAuth(t, domain)), 'idempotency-key': newKey() };
    const a = await t.inject({ method: 'POST', url: '/admin/api/keys', headers, payload: { name: 'one' } });
    const b = await t.inject({ method: 'POST', url: '/admin/api/keys', headers, payload: { name: 'one' } });
    expect([a.statusCode, b.statusCode]).toEqual([201, 201]);
    expect(a.json().secret).not.toBe(b.json().secret);
    expect(b.headers['idempotent-replayed']).toBeUndefined();
    expect(await idempotencyRows(shopId)).toHaveLength(0);
  });
});

describe('5xx, running requests and crashes', () => {
  it('a 5xx is not kept: the key is given back and the retry runs and succeeds', async () => {
    const { key, shopId } = await contractWithKey();
    const idem = newKey();
    flaky.failures = 1;
    const runs = flaky.runs;
    expectError(await post(key, '/api/v1/test-flaky', { n: 1 }, idem), 500, 'internal_error');
    expect(await idempotencyRows(shopId)).toHaveLength(0);
    const retry = await post(key, '/api/v1/test-flaky', { n: 1 }, idem);
    expect(retry.statusCode).toBe(200);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
    const replay = await post(key, '/api/v1/test-flaky', { n: 1 }, idem);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body).toBe(retry.body);
    expect(flaky.runs - runs).toBe(2);
  });

  it('while the first is still running, the same request is 409 idempotency_in_progress with Retry-After', async () => {
    const { key } = await contractWithKey();
    const idem = newKey();
    let open!: () => void;
    flaky.gate = new Promise((r) => (open = r));
    const runs = flaky.runs;
    const first = post(key, '/api/v1/test-flaky', { n: 2 }, idem);
    try {
      while (flaky.runs === runs) await new Promise((r) => setImmediate(r));
      const during = await post(key, '/api/v1/test-flaky', { n: 2 }, idem);
      expectError(during, 409, 'idempotency_in_progress');
      expect(during.headers['retry-after']).toBe('1');
      expectError(await post(key, '/api/v1/test-flaky', { n: 3 }, idem), 422, 'idempotency_key_reused');
    } finally {
      flaky.gate = null;
      open();
    }
    expect((await first).statusCode).toBe(200);
    expect((await post(key, '/api/v1/test-flaky', { n: 2 }, idem)).headers['idempotent-replayed']).toBe('true');
    expect(flaky.runs - runs).toBe(1);
  });

  it('a key left in progress by a crashed instance is held for the lock timeout, then taken over', async () => {
    const { key, contractId, shopId } = await contractWithKey();
    const idem = newKey();
    const url = actions(contractId);
    const hash = requestFingerprint({ method: 'POST', path: url, body: { action: 'skip' } });
    const now = t.clock.now();
    // What an instance killed mid-request leaves behind.
    await sql(
      t,
      `INSERT INTO idempotency_keys (shop_id, key_digest, request_hash, state, owner_request_id, locked_at, created_at, expires_at)
       VALUES ($1, $2, $3, 'in_progress', 'dead-instance', $4, $4, $5)`,
      [shopId, createHash('sha256').update(idem).digest('hex'), hash, now.toISOString(), new Date(now.getTime() + 86_400_000).toISOString()],
    );
    t.clock.advance(59_000);
    expectError(await post(key, url, { action: 'skip' }, idem), 409, 'idempotency_in_progress');
    t.clock.advance(2_000);
    expectError(await post(key, url, { action: 'cancel' }, idem), 422, 'idempotency_key_reused');
    const taken = await post(key, url, { action: 'skip' }, idem);
    expect(taken.statusCode).toBe(200);
    expect(taken.headers['idempotent-replayed']).toBeUndefined();
    expect((await eventRows(t, contractId)).filter((e) => e.type === 'contract.skipped')).toHaveLength(1);
    expect((await post(key, url, { action: 'skip' }, idem)).headers['idempotent-replayed']).toBe('true');
  });
});

/** A shop's key as the route has resolved it. */
const keyCaller = (shopId: string) =>
  resolvedCaller({ kind: 'shop', shopId, actor: { type: 'api_key', keyFingerprint: 'f' }, permissions: PRESETS.read_write, who: 'This API key' });

describe('the response is kept in the commit of the action', () => {
  it('a process that died right after the commit leaves a replay, not a second execution', async () => {
    const { key, contractId, shopId } = await contractWithKey();
    const idem = newKey();
    const url = actions(contractId);
    const requestId = 'killed-after-commit';
    // What the route does, up to the commit of the action; then the process "dies" before it answers.
    const claimed = await claimIdempotencyKey({
      ctx: t.ctx,
      input: { shopId, key: idem, requestId, requestHash: requestFingerprint({ method: 'POST', path: url, body: { action: 'skip' } }) },
    });
    expect(claimed.kind).toBe('claimed');
    if (claimed.kind !== 'claimed') return;
    const { contract } = await requestAction(t.ctx, keyCaller(shopId), contractId, { action: 'skip' }, { record: claimed.record });

    // Long past the lock timeout, the client's retry is answered with what the dead request did.
    t.clock.advance(5 * 60_000);
    const retry = await post(key, url, { action: 'skip' }, idem);
    expect(retry.statusCode).toBe(200);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.headers['original-request-id']).toBe(requestId);
    expect(retry.json()).toEqual({ contract });
    expect((await eventRows(t, contractId)).filter((e) => e.type === 'contract.skipped')).toHaveLength(1);
  });

  it('also when the action had to wait for another writer (the locked path): each key keeps its own response', async () => {
    const { contractId, shopId } = await contractWithKey();
    const url = actions(contractId);
    // Two skips of one contract at once, as the route runs them, and nothing after: one commits optimistically, the
    // other is redone under the row lock; both must have recorded their result with their change.
    const runs = ['locked-a', 'locked-b'].map(async (requestId) => {
      const idem = newKey();
      const claimed = await claimIdempotencyKey({
        ctx: t.ctx,
        input: { shopId, key: idem, requestId, requestHash: requestFingerprint({ method: 'POST', path: url, body: { action: 'skip' } }) },
      });
      if (claimed.kind !== 'claimed') throw new Error('not claimed');
      const { contract } = await requestAction(t.ctx, keyCaller(shopId), contractId, { action: 'skip' }, { record: claimed.record });
      return { idem, contract };
    });
    const done = await Promise.all(runs);
    // Different responses: the second skip saw the first.
    expect(done[0].contract.nextBillingDate).not.toBe(done[1].contract.nextBillingDate);
    for (const d of done) {
      const [row] = await sql<{ state: string; status_code: number; result: unknown }>(
        t,
        'SELECT state, status_code, result FROM idempotency_keys WHERE shop_id = $1 AND key_digest = $2',
        [shopId, idempotencyKeyDigest(d.idem)],
      );
      // The result the service returned is what was recorded: a replay renders the same body from it.
      expect(row).toEqual({ state: 'completed', status_code: 200, result: d.contract });
    }
    expect((await eventRows(t, contractId)).filter((e) => e.type === 'contract.skipped')).toHaveLength(2);
  });
});

describe('concurrency', () => {
  it('20 parallel identical requests (over two instances) execute exactly once', async () => {
    const { key, contractId } = await contractWithKey();
    const idem = newKey();
    const b = await secondInstance(t);
    try {
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => post(key, actions(contractId), { action: 'skip' }, idem, i % 2 ? b : t)),
      );
      const executed = results.filter((r) => r.statusCode === 200 && r.headers['idempotent-replayed'] === undefined);
      const replayed = results.filter((r) => r.statusCode === 200 && r.headers['idempotent-replayed'] === 'true');
      const inProgress = results.filter((r) => r.statusCode === 409);
      expect(executed).toHaveLength(1);
      expect(replayed.length + inProgress.length).toBe(19);
      for (const r of inProgress) expectError(r, 409, 'idempotency_in_progress');
      for (const r of replayed) expect(r.body).toBe(executed[0].body);
      expect((await eventRows(t, contractId)).filter((e) => e.type === 'contract.skipped')).toHaveLength(1);
    } finally {
      await b.close();
    }
  });
});

describe('expiry', () => {
  it('after 24 h the key is free again, and the cleanup deletes expired keys and only those', async () => {
    const { key, contractId, shopId } = await contractWithKey();
    const idem = newKey();
    expect((await post(key, actions(contractId), { action: 'skip' }, idem)).statusCode).toBe(200);
    t.clock.advance(12 * 3_600_000);
    const younger = newKey();
    expect((await post(key, actions(contractId), { action: 'skip' }, younger)).statusCode).toBe(200);

    t.clock.advance(12 * 3_600_000 + 1);
    const cleanup = new IdempotencyCleanup(t.ctx);
    expect(await cleanup.tick()).toBeGreaterThanOrEqual(1);
    const left = await idempotencyRows(shopId);
    expect(left.map((r) => r.key_digest)).toEqual([createHash('sha256').update(younger).digest('hex')]);

    // The expired key now belongs to whatever request comes with it.
    const reuse = await post(key, actions(contractId), { action: 'cancel' }, idem);
    expect(reuse.statusCode).toBe(200);
    expect(reuse.json().contract.status).toBe('CANCELLED');
  });

  it('an expired key not yet cleaned up is free as well', async () => {
    const { key, contractId } = await contractWithKey();
    const idem = newKey();
    expect((await post(key, actions(contractId), { action: 'skip' }, idem)).statusCode).toBe(200);
    t.clock.advance(24 * 3_600_000);
    const again = await post(key, actions(contractId), { action: 'skip' }, idem);
    expect(again.statusCode).toBe(200);
    expect(again.headers['idempotent-replayed']).toBeUndefined();
    expect((await eventRows(t, contractId)).filter((e) => e.type === 'contract.skipped')).toHaveLength(2);
  });
});

describe('documentation', () => {
  it('the OpenAPI document lists the optional Idempotency-Key header on the actions route', async () => {
    const doc = (await t.inject({ url: '/api/v1/openapi.json' })).json();
    const op = doc.paths['/api/v1/subscription-contracts/{contract_id}/actions'].post;
    const header = op.parameters.find((p: { in: string; name: string }) => p.in === 'header' && p.name === 'idempotency-key');
    expect(header).toMatchObject({ required: false, schema: { type: 'string' } });
    expect(header.description ?? header.schema.description).toMatch(/24 h/);
  });
});
