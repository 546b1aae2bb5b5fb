import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Resolve } from '../src/webhooks/addressGuard.js';
import { WebhookDispatcher } from '../src/workers/webhookDispatcher.js';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { API, expectError } from './support/fixtures.js';
import { startReceiver } from './support/receiver.js';

/**
 * SSRF (docs/product.md §10): with WEBHOOKS_ALLOW_PRIVATE off, an endpoint may point only at public unicast addresses,
 * checked when it is saved and again at connect time after DNS. DNS is a test double here (the machine has no other
 * network): names resolve to whatever the test says, as a rebinding attacker's would.
 */

const dns = new Map<string, string[]>();
const resolve: Resolve = async (host) => {
  const addresses = dns.get(host);
  if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
};

let t: TestApp;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
beforeAll(async () => {
  t = await startTestApp({ webhookAddresses: { allowPrivate: false, resolve } });
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await t?.close();
});

const json = { 'content-type': 'application/json' };
const create = (key: string, url: string) => t.inject({ method: 'POST', url: '/api/v1/webhook-endpoints', headers: { ...json, ...bearer(key) }, payload: { url } });

describe('when an endpoint is saved', () => {
  it.each([
    ['https://127.0.0.1/hook', /loopback/],
    ['https://[::1]/hook', /loopback/],
    ['https://10.0.0.7/hook', /private/],
    ['https://192.168.1.20/hook', /private/],
    ['https://169.254.169.254/latest/meta-data', /linkLocal/],
    ['https://224.0.0.1/hook', /multicast/],
    ['https://[::ffff:127.0.0.1]/hook', /ipv4Mapped/],
    ['https://[::ffff:a00:1]/hook', /ipv4Mapped/],
    ['https://0.0.0.0/hook', /unspecified/],
    ['https://[::127.0.0.1]/hook', /ipv4Compatible/],
    ['https://[64:ff9b::a00:1]/hook', /rfc6052/],
    ['https://[2002:a00:1::1]/hook', /6to4/],
    ['https://[100:0:0:1::1]/hook', /dummyPrefix/],
    ['https://192.0.2.1/hook', /reserved/],
    ['https://localhost.test/hook', /loopback/],
    ['https://internal.test/hook', /private/],
    ['https://half-internal.test/hook', /private/],
    ['https://nowhere.test/hook', /could not be resolved/],
    ['http://127.0.0.1:8080/hook', /https/],
  ])('%s is refused (400 naming url)', async (url, message) => {
    dns.set('localhost.test', ['127.0.0.1']);
    dns.set('internal.test', ['10.1.2.3']);
    // One public and one private address: refused, the connection could go to either.
    dns.set('half-internal.test', ['93.184.216.34', '172.16.5.4']);
    const s = await t.shopWithKey();
    const err = expectError(await create(s.key, url), 400, 'invalid_request');
    expect(err.details?.[0]).toMatchObject({ path: 'url', message: expect.stringMatching(message) });
  });

  it('a name resolving to public addresses is accepted', async () => {
    dns.set('hooks.example.test', ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946']);
    const s = await t.shopWithKey();
    expect((await create(s.key, 'https://hooks.example.test/svc')).statusCode).toBe(201);
  });
});

describe('at connect time, after DNS', () => {
  it('a name that resolves elsewhere by then (rebinding to 127.0.0.1) is refused: no connection, the attempt says why', async () => {
    dns.set('rebind.test', ['93.184.216.34']);
    const s = await t.shopWithKey();
    const port = new URL(receiver.url).port;
    const made = await create(s.key, `https://rebind.test:${port}/hook`);
    expect(made.statusCode).toBe(201);
    dns.set('rebind.test', ['127.0.0.1']);
    const [c] = await t.seed(s.shopId, 1);
    await t.inject({ method: 'POST', url: `${API}/${c.id}/actions`, headers: { ...json, ...bearer(s.key) }, payload: { action: 'skip' } });
    await new WebhookDispatcher(t.ctx).tick();
    expect(receiver.received).toHaveLength(0);
    const [d] = (await t.inject({ url: `/api/v1/webhook-endpoints/${made.json().endpoint.id}/deliveries`, headers: bearer(s.key) })).json().deliveries;
    expect(d.status).toBe('pending');
    expect(d.attemptLog[0]).toMatchObject({ statusCode: null, error: expect.stringMatching(/loopback address \(127\.0\.0\.1\)/) });
  });
});

describe('secrets and payloads stay out of the logs', () => {
  it('no signing secret and no payload content in any log line', async () => {
    const secrets = t.logs.join('\n');
    expect(secrets).not.toMatch(/whsec_/);
    expect(secrets).not.toMatch(/@example\.com/);
  });
});
