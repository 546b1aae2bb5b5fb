import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import type { ClaimedDelivery } from '../../src/db/webhookOutbox.js';
import { signedRequest } from '../../src/workers/webhookDispatcher.js';
import { forbiddenRange } from '../../src/webhooks/addressGuard.js';
import { MAX_ATTEMPTS, parseRetryAfter, retryDelayMs, RETRY_DELAYS_MS } from '../../src/domain/webhooks.js';

describe('the retry schedule', () => {
  it('is at once, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h, then nothing', () => {
    const mid = () => 0.5;
    expect([1, 2, 3, 4, 5, 6, 7, 8, 9].map((a) => retryDelayMs(a, { random: mid }))).toEqual([
      5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 50_400_000, 72_000_000, 86_400_000,
    ]);
    expect(retryDelayMs(MAX_ATTEMPTS, { random: mid })).toBeNull();
    expect(MAX_ATTEMPTS).toBe(10);
  });

  it('is jittered by at most 10 % either way, and never earlier than Retry-After (capped at a day)', () => {
    expect(retryDelayMs(1, { random: () => 0 })).toBe(4_500);
    expect(retryDelayMs(1, { random: () => 1 })).toBe(5_500);
    expect(retryDelayMs(1, { random: () => 0.5, retryAfterMs: 60_000 })).toBe(60_000);
    expect(retryDelayMs(2, { random: () => 0.5, retryAfterMs: 1_000 })).toBe(RETRY_DELAYS_MS[1]);
    expect(retryDelayMs(1, { random: () => 0.5, retryAfterMs: 10 * 86_400_000 })).toBe(86_400_000);
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = new Date('2026-11-22T10:00:00Z');
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter('Sun, 22 Nov 2026 10:01:00 GMT', now)).toBe(60_000);
    expect(parseRetryAfter('soon', now)).toBeNull();
    expect(parseRetryAfter(undefined, now)).toBeNull();
  });
});

describe('addresses webhooks may reach', () => {
  it.each([
    ['8.8.8.8', null],
    ['2001:4860:4860::8888', null],
    ['127.0.0.1', 'loopback'],
    ['::1', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'linkLocal'],
    ['fe80::1', 'linkLocal'],
    ['fc00::1', 'uniqueLocal'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'ipv4Mapped'],
    ['::ffff:8.8.8.8', 'ipv4Mapped'],
    ['0.0.0.0', 'unspecified'],
    ['255.255.255.255', 'broadcast'],
    // Special-purpose IPv4 blocks (IANA registry).
    ['192.0.0.8', 'reserved'],
    ['192.0.2.10', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['203.0.113.9', 'reserved'],
    ['192.31.196.1', 'as112'],
    ['192.52.193.1', 'amt'],
    ['240.0.0.1', 'reserved'],
    // IPv6 forms that carry an IPv4 address, private or not.
    ['::127.0.0.1', 'ipv4Compatible'],
    ['::10.0.0.1', 'ipv4Compatible'],
    ['::8.8.8.8', 'ipv4Compatible'],
    ['::ffff:0:a00:1', 'rfc6145'],
    ['64:ff9b::a00:1', 'rfc6052'],
    ['64:ff9b::808:808', 'rfc6052'],
    ['64:ff9b:1::a00:1', 'rfc6052'],
    ['2002:c0a8:101::1', '6to4'],
    ['2002:7f00:1::1', '6to4'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'teredo'],
    // Special-purpose IPv6 blocks (IANA registry), and what lies outside global unicast (2000::/3).
    ['::', 'unspecified'],
    ['100::1', 'discard'],
    ['100:0:0:1::1', 'dummyPrefix'],
    ['2001:2::1', 'benchmarking'],
    ['2001:db8::1', 'reserved'],
    ['3fff::1', 'reserved'],
    ['5f00::1', 'segmentRouting'],
    ['fec0::1', 'deprecatedSiteLocal'],
    ['2620:4f:8000::1', 'as112v6'],
    ['::2', 'ipv4Compatible'],
    ['4000::1', 'notGlobalUnicast'],
    ['1::1', 'notGlobalUnicast'],
  ])('%s → %s', (ip, range) => {
    expect(forbiddenRange(ip)).toBe(range);
  });

  it('passes only global unicast addresses', () => {
    for (const ip of ['8.8.8.8', '1.1.1.1', '93.184.216.34', '2606:4700:4700::1111', '2a00:1450:4001:80b::200e']) expect(forbiddenRange(ip)).toBeNull();
  });
});

describe('the request load background work gives way to', () => {
  it('is busy while requests arrive at the given rate or more, looked at every 100 ms', async () => {
    const { RequestLoad } = await import('../../src/http/load.js');
    const load = new RequestLoad();
    expect(load.busy(1000, 1_000)).toBe(false);
    load.started += 150; // 150 requests in 100 ms: 1,500 a second
    expect(load.busy(1000, 1_100)).toBe(true);
    load.started += 5;
    expect(load.busy(1000, 1_150)).toBe(true); // within 100 ms of the last look: the same answer
    expect(load.busy(1000, 1_300)).toBe(false); // 5 in 200 ms
  });
});

describe('the signature of a delivery', () => {
  const delivery = (over: Partial<ClaimedDelivery> = {}): ClaimedDelivery => ({
    id: '42',
    endpointId: '1',
    contractId: '4001',
    eventId: '7',
    contractVersion: 3,
    type: 'subscription_contract.paused',
    contract: '{"id":"4001","note":"café ☕ \\u2028 ünïcödé"}',
    test: false,
    attempts: 1,
    createdAt: new Date('2026-11-29T10:00:00Z'),
    url: 'https://example.com/hook',
    secret: `whsec_${randomBytes(24).toString('base64')}`,
    previousSecret: null,
    previousSecretExpiresAt: null,
    event: { at: new Date('2026-11-29T10:00:00Z'), actorType: 'api_key', actorKeyFingerprint: 'svc_live_abcd…wxyz', actorId: null, fromStatus: 'ACTIVE', toStatus: 'PAUSED', data: {} },
    ...over,
  });

  it('verifies with the Standard Webhooks library, for any body', () => {
    const d = delivery();
    const at = new Date();
    const { body, headers } = signedRequest(d, at);
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(new Webhook(d.secret).verify(body, headers)).toEqual(JSON.parse(body));
    // Signed with another secret, or with the body changed by one character: refused.
    expect(() => new Webhook(`whsec_${randomBytes(24).toString('base64')}`).verify(body, headers)).toThrow();
    expect(() => new Webhook(d.secret).verify(body.replace('café', 'cafe'), headers)).toThrow();
  });

  it('carries both signatures during a rotation, each verifying with its own secret', () => {
    const previous = `whsec_${randomBytes(24).toString('base64')}`;
    const at = new Date();
    const d = delivery({ previousSecret: previous, previousSecretExpiresAt: new Date(at.getTime() + 60_000) });
    const { body, headers } = signedRequest(d, at);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(new Webhook(d.secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(new Webhook(previous).verify(body, headers)).toEqual(JSON.parse(body));
    // Once the overlap has ended, the previous secret no longer signs.
    const after = signedRequest({ ...d, previousSecretExpiresAt: new Date(at.getTime() - 1) }, at);
    expect(() => new Webhook(previous).verify(after.body, after.headers)).toThrow();
  });
});
