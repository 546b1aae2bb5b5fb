import { createHash, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhook, type KeyLeakedWebhookEvent } from '../clients/typescript/src/index.js';
import { KEY_PATTERN_SOURCE, keyDigest, newRawKey } from '../src/domain/keys.js';
import { SecretScanningKeys } from '../src/services/secretScanningKeys.js';
import { WebhookDispatcher } from '../src/workers/webhookDispatcher.js';
import { bearer, startTestApp, TestClock, type TestApp } from './support/app.js';
import { adminAuth, API, expectError, secondInstance, sql } from './support/fixtures.js';
import { startReceiver } from './support/receiver.js';

/**
 * Leaked keys revoke themselves: GitHub's secret scanning partner program reports a key found in public to
 * POST /secret-scanning/github, signed (ECDSA P-256 / SHA-256, DER, base64) with a key GitHub publishes at a URL.
 * Here a key pair generated in the test plays GitHub's, published by a local server that counts its reads.
 */

type Pair = { id: string; privateKey: KeyObject; publicPem: string };
const newPair = (id: string): Pair => {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return { id, privateKey, publicPem: publicKey.export({ type: 'spki', format: 'pem' }) as string };
};
const signed = (body: string, pair: Pair) => sign('sha256', Buffer.from(body), { key: pair.privateKey, dsaEncoding: 'der' }).toString('base64');

const github = newPair('a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90');
/** The published key list: what it holds, how it answers, how often it was read. */
const published = { keys: [github], status: 200, reads: 0, notModified: 0 };
let keysServer: http.Server;
let keysUrl: string;

const clock = new TestClock();
let keys: SecretScanningKeys;
let t: TestApp;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let dispatcher: WebhookDispatcher;

beforeAll(async () => {
  keysServer = http.createServer((req, res) => {
    published.reads++;
    if (published.status !== 200) return res.writeHead(published.status).end('{"message":"down"}');
    const public_keys = published.keys.map((p, i) => ({ key_identifier: p.id, key: p.publicPem, is_current: i === 0 }));
    const body = JSON.stringify({ public_keys });
    // As GitHub's API: an ETag, and 304 to a request that names the current one.
    const etag = `"${createHash('sha256').update(body).digest('hex').slice(0, 16)}"`;
    if (req.headers['if-none-match'] === etag) {
      published.notModified++;
      return res.writeHead(304, { etag }).end();
    }
    res.writeHead(200, { 'content-type': 'application/json', etag }).end(body);
  });
  await new Promise<void>((resolve) => keysServer.listen(0, '127.0.0.1', resolve));
  keysUrl = `http://127.0.0.1:${(keysServer.address() as AddressInfo).port}/meta/public_keys/secret_scanning`;
  keys = new SecretScanningKeys({ url: keysUrl, clock });
  t = await startTestApp({ clock, appDeps: { secretScanningKeys: keys } });
  receiver = await startReceiver();
  dispatcher = new WebhookDispatcher(t.ctx, { random: () => 0.5 });
});
afterAll(async () => {
  await receiver?.close();
  await t?.close();
  await new Promise((resolve) => keysServer?.close(resolve));
});
afterEach(() => {
  published.keys = [github];
  published.status = 200;
  receiver.received.length = 0;
});

const URL_FOUND = 'https://github.com/octocat/hello-world/blob/5e1f2a9/config/production.env';

/** A report as GitHub sends it: the raw body, signed by `pair` (GitHub's key unless said), under `keyId`. */
function report(body: string | object, opts: { pair?: Pair; keyId?: string; signature?: string; headers?: Record<string, string> } = {}) {
  const raw = typeof body === 'string' ? body : JSON.stringify(body);
  const pair = opts.pair ?? github;
  return t.inject({
    method: 'POST',
    url: '/secret-scanning/github',
    headers: {
      'content-type': 'application/json',
      'github-public-key-identifier': opts.keyId ?? pair.id,
      'github-public-key-signature': opts.signature ?? signed(raw, pair),
      ...opts.headers,
    },
    payload: raw,
  });
}
const match = (token: string, over: object = {}) => ({ token, type: 'svc_api_key', url: URL_FOUND, source: 'commit', ...over });
const works = async (key: string, app: TestApp = t) => (await app.inject({ url: `${API}?limit=1`, headers: bearer(key) })).statusCode;
const keyRow = async (key: string) =>
  (await sql<{ revoked_at: Date | null; revoked_reason: string | null; leaked_at: Date | null; leaked_url: string | null }>(
    t, 'SELECT revoked_at, revoked_reason, leaked_at, leaked_url FROM api_keys WHERE digest = $1', [keyDigest(key)],
  ))[0];
const leakDeliveries = async (shopId: string) =>
  (await sql<{ n: number }>(t, `SELECT count(*)::int AS n FROM webhook_deliveries WHERE shop_id = $1 AND type = 'api_key.leaked'`, [shopId]))[0].n;

/** A shop with a key (used once, so every cache has it) and a webhook endpoint taking `events`. */
async function shopWithEndpoint(events: string[] = ['*']) {
  const s = await t.shopWithKey();
  expect(await works(s.key)).toBe(200);
  const path = `/hook/${s.shopId}`;
  const res = await t.inject({ method: 'POST', url: '/api/v1/webhook-endpoints', headers: { 'content-type': 'application/json', ...bearer(s.key) }, payload: { url: `${receiver.url}${path}`, events } });
  expect(res.statusCode).toBe(201);
  return { ...s, secret: res.json().secret as string, got: () => receiver.received.filter((r) => r.path === path) };
}

describe('a verified report', () => {
  it('revokes the key at once (reason leaked, with the URL), answers labels, and the key is refused on the next request of every instance', async () => {
    const other = await secondInstance(t);
    try {
      const s = await t.shopWithKey();
      const bystander = await t.shopWithKey();
      expect(await works(s.key)).toBe(200);
      expect(await works(s.key, other)).toBe(200); // in both instances' key caches now
      const unknownKey = newRawKey();

      const res = await report([match(s.key), match(unknownKey), match('not-a-key-at-all', { type: 'other_type' })]);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual([
        { token_raw: s.key, token_type: 'svc_api_key', label: 'true_positive' },
        { token_raw: unknownKey, token_type: 'svc_api_key', label: 'false_positive' },
        { token_raw: 'not-a-key-at-all', token_type: 'other_type', label: 'false_positive' },
      ]);

      expect(await works(s.key)).toBe(401);
      expect(await works(s.key, other)).toBe(401);
      expect(await works(bystander.key)).toBe(200);
      expect(await keyRow(s.key)).toEqual({ revoked_at: clock.now(), revoked_reason: 'leaked', leaked_at: clock.now(), leaked_url: URL_FOUND });

      // The key lists say why and where.
      const list = (await t.inject({ url: '/admin/api/keys', headers: await adminAuth(t, s.domain) })).json();
      expect(list.activeCount).toBe(0);
      expect(list.keys).toEqual([
        expect.objectContaining({ status: 'revoked', revokedReason: 'leaked', revokedAt: clock.now().toISOString(), leakedAt: clock.now().toISOString(), leakedUrl: URL_FOUND, fingerprint: s.fingerprint }),
      ]);
      // Nothing of the key is logged: not the key, not the URL where it lies.
      const logs = t.logs.join('\n');
      expect(logs).not.toContain(s.key.slice(9, 30));
      expect(logs).not.toContain(URL_FOUND);
      expect(logs).toContain('leaked API keys revoked');
    } finally {
      await other.close();
    }
  });

  it('a key revoked by hand, or reported again, is a true positive and is not revoked again; a report may name a key twice', async () => {
    const s = await shopWithEndpoint();
    const admin = await adminAuth(t, s.domain);
    const [listed] = (await t.inject({ url: '/admin/api/keys', headers: admin })).json().keys;
    expect(listed).toMatchObject({ status: 'active', revokedReason: null, leakedAt: null, leakedUrl: null });
    expect((await t.inject({ method: 'POST', url: `/admin/api/keys/${listed.id}/revoke`, headers: admin })).json().key).toMatchObject({ revokedReason: 'revoked', leakedUrl: null });
    const byHand = await keyRow(s.key);
    clock.advance(1000);
    const res = await report([match(s.key), match(s.key, { url: 'https://github.com/elsewhere' })]);
    expect(res.json().map((l: { label: string }) => l.label)).toEqual(['true_positive', 'true_positive']);
    expect(await keyRow(s.key)).toEqual(byHand);
    expect(await leakDeliveries(s.shopId)).toBe(0);

    const leaked = await shopWithEndpoint();
    expect((await report([match(leaked.key), match(leaked.key, { url: 'https://github.com/elsewhere' })])).json()[1].label).toBe('true_positive');
    const first = await keyRow(leaked.key);
    expect(first.leaked_url).toBe(URL_FOUND);
    clock.advance(1000);
    expect((await report([match(leaked.key, { url: 'https://gist.github.com/again' })])).json()[0].label).toBe('true_positive');
    expect(await keyRow(leaked.key)).toEqual(first);
    expect(await leakDeliveries(leaked.shopId)).toBe(1);
  });

  it('sends api_key.leaked to the shop’s endpoints that take it, signed, with the key’s id, name and fingerprint, never the key', async () => {
    const s = await shopWithEndpoint();
    const contractsOnly = await t.inject({
      method: 'POST', url: '/api/v1/webhook-endpoints', headers: { 'content-type': 'application/json', ...bearer(s.key) },
      payload: { url: `${receiver.url}/contracts-only/${s.shopId}`, events: ['contract.paused'] },
    });
    const leakOnly = await t.inject({
      method: 'POST', url: '/api/v1/webhook-endpoints', headers: { 'content-type': 'application/json', ...bearer(s.key) },
      payload: { url: `${receiver.url}/leaks/${s.shopId}`, events: ['api_key.leaked'] },
    });
    expect(contractsOnly.statusCode).toBe(201);
    expect(leakOnly.statusCode).toBe(201);
    const [listed] = (await t.inject({ url: '/admin/api/keys', headers: await adminAuth(t, s.domain) })).json().keys;

    expect((await report([match(s.key, { source: 'content' })])).statusCode).toBe(200);
    await dispatcher.tick();
    const got = receiver.received.filter((r) => r.path.endsWith(`/${s.shopId}`));
    expect(got.map((r) => r.path).sort()).toEqual([`/hook/${s.shopId}`, `/leaks/${s.shopId}`]);
    const all = s.got()[0];
    // As an integrator's backend reads it, with @svc/client.
    const event = verifyWebhook<KeyLeakedWebhookEvent>(all.body, all.headers as Record<string, string>, s.secret);
    expect(event).toEqual({
      type: 'api_key.leaked',
      timestamp: clock.now().toISOString(),
      data: { key: { id: listed.id, name: 'test', fingerprint: s.fingerprint }, url: URL_FOUND, source: 'content' },
    });
    expect(new Webhook(leakOnly.json().secret).verify(got.find((r) => r.path.startsWith('/leaks'))!.body, got.find((r) => r.path.startsWith('/leaks'))!.headers as Record<string, string>)).toEqual(event);
    for (const r of got) expect(r.body).not.toContain(s.key.slice(9));
    // It is in the endpoint's delivery log like any other.
    const log = (await t.inject({ url: `/admin/api/webhook-endpoints/${leakOnly.json().endpoint.id}/deliveries`, headers: await adminAuth(t, s.domain) })).json();
    expect(log.deliveries).toEqual([expect.objectContaining({ type: 'api_key.leaked', status: 'succeeded', contractId: null })]);
  });

  it('reports of one key at once revoke it once, with one event', async () => {
    const s = await shopWithEndpoint();
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => report([match(s.key, { url: `https://github.com/race/${i}` })])));
    for (const res of answers) expect(res.json()).toEqual([{ token_raw: s.key, token_type: 'svc_api_key', label: 'true_positive' }]);
    expect(await leakDeliveries(s.shopId)).toBe(1);
    expect((await keyRow(s.key)).leaked_url).toMatch(/^https:\/\/github\.com\/race\/\d$/);
  });

  it('a test event of type api_key.leaked has the real event’s shape', async () => {
    const s = await shopWithEndpoint();
    const [endpoint] = (await t.inject({ url: '/api/v1/webhook-endpoints', headers: bearer(s.key) })).json().endpoints;
    const res = await t.inject({ method: 'POST', url: `/api/v1/webhook-endpoints/${endpoint.id}/test`, headers: { 'content-type': 'application/json', ...bearer(s.key) }, payload: { type: 'api_key.leaked' } });
    expect(res.statusCode).toBe(202);
    await dispatcher.tick();
    const [got] = s.got();
    const event = new Webhook(s.secret).verify(got.body, got.headers as Record<string, string>) as { type: string; data: Record<string, unknown> };
    expect(event.type).toBe('api_key.leaked');
    expect(event.data).toMatchObject({ key: { id: expect.any(String), name: expect.any(String), fingerprint: expect.stringMatching(/^[0-9a-f]{12}$/) }, url: expect.any(String), source: expect.any(String), test: true });
  });
});

describe('refused reports: 401 (or 400, 413) in the envelope, and nothing happens', () => {
  const refusedWith = async (s: { key: string; shopId: string }, res: Awaited<ReturnType<typeof report>>, status: number, code: string) => {
    expectError(res, status, code);
    expect(await works(s.key)).toBe(200);
    expect((await keyRow(s.key)).revoked_at).toBeNull();
    expect(await leakDeliveries(s.shopId)).toBe(0);
  };

  it('without the headers, with a bad signature, or signed by a key GitHub does not publish', async () => {
    const s = await shopWithEndpoint();
    const body = JSON.stringify([match(s.key)]);
    const impostor = newPair(github.id);
    const noHeaders = await t.inject({ method: 'POST', url: '/secret-scanning/github', headers: { 'content-type': 'application/json' }, payload: body });
    await refusedWith(s, noHeaders, 401, 'unauthorized');
    await refusedWith(s, await report(body, { headers: { 'github-public-key-signature': '' } }), 401, 'unauthorized');
    await refusedWith(s, await report(body, { headers: { 'github-public-key-identifier': '' } }), 401, 'unauthorized');
    // Signed, but over another body (the same matches, spaced differently: the signature covers the raw bytes).
    await refusedWith(s, await report(body, { signature: signed(JSON.stringify([match(s.key)], null, 1), github) }), 401, 'unauthorized');
    await refusedWith(s, await report(body, { signature: 'bm90IGEgc2lnbmF0dXJl' }), 401, 'unauthorized');
    await refusedWith(s, await report(body, { signature: '%%%not base64%%%' }), 401, 'unauthorized');
    // The published identifier, signed with another private key.
    await refusedWith(s, await report(body, { pair: impostor }), 401, 'unauthorized');
    // The signature of a report for another key does not carry over.
    const other = await t.shopWithKey();
    await refusedWith(s, await report(body, { signature: signed(JSON.stringify([match(other.key)]), github) }), 401, 'unauthorized');
  });

  it('another method on the path is 405 in the envelope', async () => {
    const res = await t.inject({ url: '/secret-scanning/github' });
    expectError(res, 405, 'method_not_allowed');
  });

  it('a signed body that is not a report: bad JSON, too deep, a key twice, not an array, too large', async () => {
    const s = await shopWithEndpoint();
    const token = JSON.stringify(s.key);
    await refusedWith(s, await report(`[{"token":${token}`), 400, 'invalid_request');
    await refusedWith(s, await report(`${'['.repeat(70)}${']'.repeat(70)}`), 400, 'invalid_request');
    await refusedWith(s, await report(`[{"token":${token},"token":"x"}]`), 400, 'invalid_request');
    await refusedWith(s, await report({ token: s.key }), 400, 'invalid_request');
    await refusedWith(s, await report([]), 400, 'invalid_request');
    await refusedWith(s, await report([{ url: URL_FOUND }]), 400, 'invalid_request');
    const huge = JSON.stringify([match(s.key, { url: `https://github.com/${'x'.repeat(1024 * 1024)}` })]);
    await refusedWith(s, await report(huge), 413, 'payload_too_large');
  });
});

describe('the published keys', () => {
  it('are read once and cached; an unknown identifier reads them again, at most once a minute; an unreadable list is 503', async () => {
    const s = await t.shopWithKey();
    const before = published.reads;
    // Known identifier: no read at all.
    expect((await report([match(newRawKey())])).statusCode).toBe(200);
    expect(published.reads).toBe(before);

    // GitHub rotates: a new key is published beside the old one. A report signed with it reads the list again.
    clock.advance(61_000);
    const rotated = newPair('f0e1d2c3b4a5968778695a4b3c2d1e0ff0e1d2c3b4a5968778695a4b3c2d1e0f');
    published.keys = [rotated, github];
    const res = await report([match(s.key)], { pair: rotated });
    expect(res.statusCode).toBe(200);
    expect(res.json()[0].label).toBe('true_positive');
    expect(published.reads).toBe(before + 1);
    expect(await works(s.key)).toBe(401);

    // Made-up identifiers, one after another: 401, and the list is not read again within the minute.
    const unknown = newPair('0000000000000000000000000000000000000000000000000000000000000000');
    for (let i = 0; i < 5; i++) {
      expectError(await report([match(newRawKey())], { pair: unknown, keyId: `deadbeef${i}` }), 401, 'unauthorized');
    }
    expect(published.reads).toBe(before + 1);
    // A minute later one is read again (and still refused).
    clock.advance(61_000);
    expectError(await report([match(newRawKey())], { pair: unknown }), 401, 'unauthorized');
    expect(published.reads).toBe(before + 2);

    // The list cannot be read when an identifier is new: 503 with Retry-After (GitHub tries again), nothing revoked.
    const victim = await t.shopWithKey();
    clock.advance(61_000);
    published.status = 503;
    const later = newPair('1111111111111111111111111111111111111111111111111111111111111111');
    published.keys = [later, github];
    const down = await report([match(victim.key)], { pair: later });
    expectError(down, 503, 'unavailable');
    expect(down.headers['retry-after']).toBe('60');
    expect(await works(victim.key)).toBe(200);
    // Keys already known still verify while the list is down.
    expect((await report([match(victim.key)])).json()[0].label).toBe('true_positive');
    expect(await works(victim.key)).toBe(401);
    // Back up (a minute on): the new key verifies.
    published.status = 200;
    clock.advance(61_000);
    expect((await report([match(victim.key)], { pair: later })).statusCode).toBe(200);
  });

  it('a list that is stale (an hour old) is read again before it is trusted, as "if changed"', async () => {
    published.keys = [github];
    const before = published.reads;
    clock.advance(3_600_000);
    expect((await report([match(newRawKey())])).statusCode).toBe(200);
    clock.advance(3_600_000);
    const notModified = published.notModified;
    expect((await report([match(newRawKey())])).statusCode).toBe(200);
    expect(published.reads).toBe(before + 2);
    expect(published.notModified).toBe(notModified + 1);
    // GitHub withdrew the key: once the list is stale again, reports signed with it are refused.
    const replacement = newPair('2222222222222222222222222222222222222222222222222222222222222222');
    published.keys = [replacement];
    clock.advance(3_600_000);
    expectError(await report([match(newRawKey())]), 401, 'unauthorized');
  });
});

describe('reading the published list', () => {
  /** A one-off server answering every request with `answer` (or never, for 'hang'). */
  async function listServer(answer: ((res: http.ServerResponse) => void) | 'hang') {
    const server = http.createServer((_req, res) => {
      if (answer !== 'hang') answer(res);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/keys`;
    return { url, close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))) };
  }
  const json = (body: unknown) => (res: http.ServerResponse) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));

  it('gives up on a list that does not answer in time, or is not one, and keeps only usable P-256 keys from one that is', async () => {
    const warnings: string[] = [];
    const warn = (o: object) => warnings.push(JSON.stringify(o));
    const hanging = await listServer('hang');
    const huge = await listServer((res) => res.writeHead(200).end(`{"public_keys":[${'"x",'.repeat(100_000)}"x"]}`));
    const notJson = await listServer((res) => res.writeHead(200).end('<html>'));
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'pem' }) as string;
    const mixed = await listServer(
      json({
        public_keys: [
          'not an object',
          { key_identifier: 'rsa', key: rsa, is_current: false },
          { key_identifier: 'garbage', key: '-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n' },
          { key_identifier: github.id, key: github.publicPem, is_current: true },
        ],
      }),
    );
    try {
      expect(await new SecretScanningKeys({ url: hanging.url, clock, timeoutMs: 200, warn }).find(github.id)).toEqual({ unavailable: true });
      expect(warnings.pop()).toContain('no answer in time');
      expect(await new SecretScanningKeys({ url: huge.url, clock, warn }).find(github.id)).toEqual({ unavailable: true });
      expect(warnings.pop()).toContain('larger than');
      expect(await new SecretScanningKeys({ url: notJson.url, clock, warn }).find(github.id)).toEqual({ unavailable: true });
      const fromMixed = new SecretScanningKeys({ url: mixed.url, clock, warn });
      expect(await fromMixed.find(github.id)).toEqual({ key: expect.anything() });
      expect(await fromMixed.find('rsa')).toEqual({ unknown: true });
      expect(await fromMixed.find('garbage')).toEqual({ unknown: true });
      expect(fromMixed.reads).toBe(1);
    } finally {
      await Promise.all([hanging.close(), huge.close(), notJson.close(), mixed.close()]);
    }
  });
});

describe('the keys documentation', () => {
  it('gives GitHub the pattern svc keys match, and the URL reports are received at', () => {
    const readme = readFileSync(new URL('../docs/keys-and-permissions.md', import.meta.url), 'utf8');
    const row = readme.split('\n').find((l) => l.startsWith('| the regular expression |'));
    expect(row).toContain(`\`${KEY_PATTERN_SOURCE}\``);
    const pattern = new RegExp(KEY_PATTERN_SOURCE, 'g');
    const key = newRawKey();
    expect(`KEY=${key}\nother=svc_live_short`.match(pattern)).toEqual([key]);
    expect(readme).toContain('`{PUBLIC_URL}/secret-scanning/github`');
  });
});
