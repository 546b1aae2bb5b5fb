import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MAX_ATTEMPTS, RETRY_DELAYS_MS } from '../src/domain/webhooks.js';
import { WebhookDispatcher } from '../src/workers/webhookDispatcher.js';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { API, expectError, sql } from './support/fixtures.js';
import { startReceiver } from './support/receiver.js';

/**
 * Webhooks out when things go wrong (docs/product.md §10): refused input, receivers that fail, redirect, time out, are gone
 * or fail for days; the retry schedule, Retry-After, disabling and resending what failed.
 */

let t: TestApp;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let dispatcher: WebhookDispatcher;
beforeAll(async () => {
  t = await startTestApp();
  receiver = await startReceiver();
  dispatcher = new WebhookDispatcher(t.ctx, { random: () => 0.5, timeoutMs: 300 });
});
afterAll(async () => {
  await receiver?.close();
  await t?.close();
});
afterEach(() => {
  receiver.answers.length = 0;
  receiver.then = { status: 200, body: 'ok' };
});

const json = { 'content-type': 'application/json' };
const WEBHOOKS = '/api/v1/webhook-endpoints';
let n = 0;
async function shopWithEndpoint() {
  const s = await t.shopWithKey();
  const path = `/err/${++n}`;
  const res = await t.inject({ method: 'POST', url: WEBHOOKS, headers: { ...json, ...bearer(s.key) }, payload: { url: `${receiver.url}${path}` } });
  const { endpoint } = res.json();
  const [c] = await t.seed(s.shopId, 1);
  return { ...s, endpoint, contractId: c.id, got: () => receiver.received.filter((r) => r.path === path) };
}
const skip = (key: string, id: string) => t.inject({ method: 'POST', url: `${API}/${id}/actions`, headers: { ...json, ...bearer(key) }, payload: { action: 'skip' } });
const endpointOf = async (key: string, id: string) => (await t.inject({ url: `${WEBHOOKS}/${id}`, headers: bearer(key) })).json().endpoint;
const deliveriesOf = async (key: string, id: string) => (await t.inject({ url: `${WEBHOOKS}/${id}/deliveries`, headers: bearer(key) })).json().deliveries;

describe('resending', () => {
  it('a delivery being sent now keeps its lease: resending it changes nothing, so no second instance sends it twice', async () => {
    const s = await shopWithEndpoint();
    await skip(s.key, s.contractId);
    const [d] = await deliveriesOf(s.key, s.endpoint.id);
    const lease = new Date(t.clock.now().getTime() + 20_000);
    await sql(t, `UPDATE webhook_deliveries SET status = 'delivering', lease_until = $2 WHERE id = $1`, [d.id, lease]);
    const res = await t.inject({ method: 'POST', url: `${WEBHOOKS}/${s.endpoint.id}/deliveries/${d.id}/resend`, headers: bearer(s.key) });
    expect(res.statusCode).toBe(202);
    expect(res.json().delivery.status).toBe('delivering');
    const [row] = await sql<{ status: string; lease_until: Date }>(t, `SELECT status, lease_until FROM webhook_deliveries WHERE id = $1`, [d.id]);
    expect(row.status).toBe('delivering');
    expect(new Date(row.lease_until).getTime()).toBe(lease.getTime());
  });
});

describe('refused input', () => {
  it.each([
    [{ url: 'http://example.com/hook' }, 'url', /https/],
    [{ url: 'not a url' }, 'url', /absolute URL/],
    [{ url: 'ftp://example.com/' }, 'url', /https/],
    [{ url: 'https://user:pass@127.0.0.1/' }, 'url', /credentials/],
    [{ url: 'https://127.0.0.1/', events: ['contract.exploded'] }, 'events.0', /^must be one of contract.paused, /],
    [{ url: 'https://127.0.0.1/', events: ['*', 'contract.paused'] }, 'events', /stands alone/],
    [{ url: 'https://127.0.0.1/', events: [] }, 'events', /.+/],
    [{ url: 'https://127.0.0.1/', colour: 'red' }, 'colour', /unknown field/],
    [{}, 'url', /.+/],
    // Text the database cannot store: refused, not a 500.
    [{ url: 'https://127.0.0.1/\u0000' }, 'url', /NUL/],
    [{ url: 'https://127.0.0.1/\ud800' }, 'url', /Unicode/],
  ])('%j → 400 invalid_request naming %s', async (payload, path, message) => {
    const s = await t.shopWithKey();
    const res = await t.inject({ method: 'POST', url: WEBHOOKS, headers: { ...json, ...bearer(s.key) }, payload });
    const err = expectError(res, 400, 'invalid_request');
    expect(err.details?.[0]).toMatchObject({ path, message: expect.stringMatching(message) });
  });

  it('a body that is not JSON is 415; an 11th endpoint is 409 endpoint_limit_reached; another shop\'s endpoint is 404', async () => {
    const s = await t.shopWithKey();
    expectError(await t.inject({ method: 'POST', url: WEBHOOKS, headers: bearer(s.key), payload: 'url=x' }), 415, 'unsupported_media_type');
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) => t.inject({ method: 'POST', url: WEBHOOKS, headers: { ...json, ...bearer(s.key) }, payload: { url: `${receiver.url}/limit/${i}` } })),
    );
    expect(results.filter((r) => r.statusCode === 201)).toHaveLength(10);
    for (const r of results.filter((r) => r.statusCode !== 201)) expectError(r, 409, 'endpoint_limit_reached');
    const other = await t.shopWithKey();
    const id = results.find((r) => r.statusCode === 201)!.json().endpoint.id;
    expectError(await t.inject({ url: `${WEBHOOKS}/${id}`, headers: bearer(other.key) }), 404, 'not_found');
    expectError(await t.inject({ method: 'DELETE', url: `${WEBHOOKS}/${id}`, headers: bearer(other.key) }), 404, 'not_found');
    expectError(await t.inject({ url: `${WEBHOOKS}/not-an-id`, headers: bearer(s.key) }), 404, 'not_found');
  });

  it('a URL the database cannot store is refused on an edit too; a delivery id past int8 is 404; a time in year 0, or not in UTC, is 400', async () => {
    const s = await t.shopWithKey();
    const made = await t.inject({ method: 'POST', url: WEBHOOKS, headers: { ...json, ...bearer(s.key) }, payload: { url: `${receiver.url}/storable` } });
    const id = made.json().endpoint.id;
    const patch = await t.inject({ method: 'PATCH', url: `${WEBHOOKS}/${id}`, headers: { ...json, ...bearer(s.key) }, payload: { url: 'https://127.0.0.1/\u0000' } });
    expect(expectError(patch, 400, 'invalid_request').details?.[0]).toMatchObject({ path: 'url' });
    for (const deliveryId of ['9223372036854775808', '9999999999999999999']) {
      expectError(await t.inject({ method: 'POST', url: `${WEBHOOKS}/${id}/deliveries/${deliveryId}/resend`, headers: bearer(s.key) }), 404, 'not_found');
    }
    for (const since of ['0000-01-01T00:00:00Z', '0000-01-01T00:00:00.000Z', '2026-11-24T00:00:00+01:00', 'yesterday']) {
      const res = await t.inject({ method: 'POST', url: `${WEBHOOKS}/${id}/resend-failed`, headers: { ...json, ...bearer(s.key) }, payload: { since } });
      expect(expectError(res, 400, 'invalid_request').details?.[0]).toMatchObject({ path: 'since' });
    }
    const ok = await t.inject({ method: 'POST', url: `${WEBHOOKS}/${id}/resend-failed`, headers: { ...json, ...bearer(s.key) }, payload: { since: '2026-01-01T00:00:00Z' } });
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toEqual({ resent: 0 });
  });
});

describe('failing receivers', () => {
  it('follows the retry schedule to its end, then the delivery has failed; every attempt is logged', async () => {
    const s = await shopWithEndpoint();
    receiver.then = { status: 500 };
    await skip(s.key, s.contractId);
    // Each attempt as the schedule has it (at once, 5 s, 5 min, … 24 h, ±10 %): about 3 days in all.
    const times: number[] = [];
    for (const delay of [0, ...RETRY_DELAYS_MS, 86_400_000]) {
      t.clock.advance(delay * 1.1);
      const before = s.got().length;
      await dispatcher.tick();
      if (s.got().length > before) times.push(t.clock.now().getTime());
    }
    expect(s.got()).toHaveLength(MAX_ATTEMPTS);
    expect(times).toHaveLength(MAX_ATTEMPTS);
    expect(await endpointOf(s.key, s.endpoint.id)).toMatchObject({ status: 'enabled' }); // 3 days is not 5
    const [d] = await deliveriesOf(s.key, s.endpoint.id);
    expect(d).toMatchObject({ status: 'failed', attempts: MAX_ATTEMPTS, nextAttemptAt: null });
    expect(d.attemptLog).toHaveLength(MAX_ATTEMPTS);
    expect(d.attemptLog.every((a: { statusCode: number }) => a.statusCode === 500)).toBe(true);
  });

  it('honours a Retry-After longer than the schedule (429 and 503)', async () => {
    const s = await shopWithEndpoint();
    receiver.answers.push({ status: 429, headers: { 'retry-after': '120' } });
    await skip(s.key, s.contractId);
    await dispatcher.tick();
    t.clock.advance(60_000); // the schedule says 5 s; the receiver said 120 s
    await dispatcher.tick();
    expect(s.got()).toHaveLength(1);
    t.clock.advance(61_000);
    await dispatcher.tick();
    expect(s.got()).toHaveLength(2);
  });

  it('a redirect is not followed and counts as a failure; a receiver that does not answer in time is a failure', async () => {
    const s = await shopWithEndpoint();
    receiver.answers.push({ status: 302, headers: { location: `${receiver.url}/elsewhere` } }, 'hang');
    await skip(s.key, s.contractId);
    await dispatcher.tick();
    t.clock.advance(6_000);
    await dispatcher.tick();
    t.clock.advance(400_000);
    await dispatcher.tick();
    expect(receiver.received.filter((r) => r.path === '/elsewhere')).toHaveLength(0);
    const [d] = await deliveriesOf(s.key, s.endpoint.id);
    expect(d.attemptLog.map((a: { statusCode: number | null; error: string }) => [a.statusCode, a.error])).toEqual([
      [302, 'redirect (302) not followed'],
      [null, 'no answer within 0 s'],
      [200, null],
    ]);
    expect(d.status).toBe('succeeded');
  });

  it('410 Gone disables the endpoint at once; nothing more is sent to it', async () => {
    const s = await shopWithEndpoint();
    receiver.answers.push({ status: 410 });
    await skip(s.key, s.contractId);
    await skip(s.key, s.contractId);
    await dispatcher.tick();
    expect(await endpointOf(s.key, s.endpoint.id)).toMatchObject({ status: 'disabled', disabledReason: 'gone', disabledAt: t.clock.now().toISOString() });
    t.clock.advance(3_600_000);
    await dispatcher.tick();
    expect(s.got()).toHaveLength(1);
    // Changes while it is disabled write no deliveries.
    await skip(s.key, s.contractId);
    expect(await sql(t, 'SELECT id FROM webhook_deliveries WHERE endpoint_id = $1', [s.endpoint.id])).toHaveLength(2);
  });

  it('5 days of failures disable it; enabling it again says what failed meanwhile, and resends it on request', async () => {
    const s = await shopWithEndpoint();
    receiver.then = { status: 500 };
    const started = t.clock.now();
    await skip(s.key, s.contractId);
    expect(await endpointOf(s.key, s.endpoint.id)).toMatchObject({ status: 'enabled', failingSince: null, disabledAt: null });
    await dispatcher.tick();
    // Failing, still enabled: since the first failed attempt.
    expect(await endpointOf(s.key, s.endpoint.id)).toMatchObject({ status: 'enabled', failingSince: started.toISOString(), disabledAt: null });
    for (let day = 0; day < 6; day++) {
      t.clock.advance(24 * 3_600_000 * 1.1);
      await dispatcher.tick();
    }
    const off = await endpointOf(s.key, s.endpoint.id);
    expect(off).toMatchObject({ status: 'disabled', disabledReason: 'failing', failingSince: started.toISOString() });
    expect(Date.parse(off.disabledAt) - started.getTime()).toBeGreaterThanOrEqual(5 * 24 * 3_600_000);
    // Failing deliveries of a disabled endpoint are not sent; give up on this one as the schedule would.
    await sql(t, `UPDATE webhook_deliveries SET status = 'failed', finished_at = $2 WHERE endpoint_id = $1`, [s.endpoint.id, t.clock.now()]);
    receiver.then = { status: 200 };
    const enabled = await t.inject({ method: 'PATCH', url: `${WEBHOOKS}/${s.endpoint.id}`, headers: { ...json, ...bearer(s.key) }, payload: { status: 'enabled' } });
    expect(enabled.json().endpoint).toMatchObject({ status: 'enabled', disabledReason: null, disabledAt: null, failingSince: null });
    expect(enabled.json().resendable).toEqual({ count: 1, since: started.toISOString() });
    const resend = await t.inject({ method: 'POST', url: `${WEBHOOKS}/${s.endpoint.id}/resend-failed`, headers: { ...json, ...bearer(s.key) }, payload: { since: enabled.json().resendable.since } });
    expect(resend.json()).toEqual({ resent: 1 });
    const sentBefore = s.got().length;
    await dispatcher.tick();
    expect(s.got()).toHaveLength(sentBefore + 1);
    expect((await deliveriesOf(s.key, s.endpoint.id))[0].status).toBe('succeeded');
  });
});

describe('deleting an endpoint', () => {
  it('deletes its delivery log with it, attempts included', async () => {
    const s = await shopWithEndpoint();
    await skip(s.key, s.contractId);
    await dispatcher.tick();
    expect(s.got()).toHaveLength(1);
    const ids = (await sql<{ id: string }>(t, `SELECT id::text AS id FROM webhook_deliveries WHERE endpoint_id = $1`, [s.endpoint.id])).map((r) => r.id);
    const attempts = async () => (await sql<{ n: number }>(t, `SELECT count(*)::int AS n FROM webhook_attempts WHERE delivery_id = ANY ($1::bigint[])`, [ids]))[0].n;
    expect(ids).toHaveLength(1);
    expect(await attempts()).toBe(1);
    expect((await t.inject({ method: 'DELETE', url: `${WEBHOOKS}/${s.endpoint.id}`, headers: bearer(s.key) })).statusCode).toBe(204);
    expect((await sql<{ n: number }>(t, `SELECT count(*)::int AS n FROM webhook_deliveries WHERE id = ANY ($1::bigint[])`, [ids]))[0].n).toBe(0);
    expect(await attempts()).toBe(0);
  });

  it('a delivery its change wrote while the endpoint was being deleted is dropped by the next claim, and nothing is sent', async () => {
    const s = await shopWithEndpoint();
    await skip(s.key, s.contractId);
    // The change committed its delivery after the deletion had read the endpoint's deliveries: the endpoint is gone,
    // its delivery is left.
    await sql(t, `DELETE FROM webhook_endpoints WHERE id = $1`, [s.endpoint.id]);
    expect((await sql<{ n: number }>(t, `SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1`, [s.endpoint.id]))[0].n).toBe(1);
    await dispatcher.tick();
    expect(s.got()).toHaveLength(0);
    expect((await sql<{ n: number }>(t, `SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1`, [s.endpoint.id]))[0].n).toBe(0);
  });
});
