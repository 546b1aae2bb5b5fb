import { describe, expect, it } from 'vitest';
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
  ])('%s → %s', (ip, range) => {
    expect(forbiddenRange(ip)).toBe(range);
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
