import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { fingerprintOf, isWellFormedKey, KEY_LENGTH, KEY_PATTERN_SOURCE, keyDigest, newRawKey } from '../../src/domain/keys.js';

/** The key format of docs/product.md §1, checked against computations written here from the spec, not from src/. */

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Bitwise CRC-32 (IEEE 802.3, reflected, poly 0xEDB88320), as zlib computes it. */
function crc32Reference(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const b of bytes) {
    crc ^= b;
    for (let i = 0; i < 8; i++) crc = crc & 1 ? (crc >>> 1) ^ 0xedb88320 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}

function toBase62(n: bigint, width: number): string {
  const digits: string[] = [];
  for (let v = n; v > 0n; v /= 62n) digits.unshift(ALPHABET[Number(v % 62n)]);
  return digits.join('').padStart(width, '0');
}

function fromBase62(s: string): bigint {
  return [...s].reduce((acc, ch) => acc * 62n + BigInt(ALPHABET.indexOf(ch)), 0n);
}

const bytesToBigInt = (b: Buffer) => b.reduce((acc, byte) => (acc << 8n) | BigInt(byte), 0n);

describe('API key format (docs/product.md §1)', () => {
  it('the reference CRC-32 agrees with the standard check value', () => {
    expect(crc32Reference(Buffer.from('123456789', 'ascii'))).toBe(0xcbf43926);
  });

  it('is svc_live_ + 43 + 6 base62 characters, 58 in all, and matches the secret-scanner regex', () => {
    for (let i = 0; i < 200; i++) {
      const key = newRawKey();
      expect(key).toHaveLength(58);
      expect(KEY_LENGTH).toBe(58);
      expect(key).toMatch(/^svc_live_[0-9A-Za-z]{43}[0-9A-Za-z]{6}$/);
      expect(new RegExp(String.raw`\bsvc_live_[0-9A-Za-z]{49}\b`).test(`token=${key}.`)).toBe(true);
      expect(new RegExp(KEY_PATTERN_SOURCE).test(key)).toBe(true);
    }
  });

  it('R is the 32 random bytes as a big-endian integer in base62, left-padded to 43', () => {
    const cases = [Buffer.alloc(32, 0), Buffer.alloc(32, 0xff), Buffer.from([...Array(31).fill(0), 61]), Buffer.from(Array.from({ length: 32 }, (_, i) => i * 7))];
    for (const random of cases) {
      const key = newRawKey(random);
      const r = key.slice(9, 52);
      expect(r).toBe(toBase62(bytesToBigInt(random), 43));
      expect(fromBase62(r)).toBe(bytesToBigInt(random));
    }
    expect(newRawKey(Buffer.alloc(32, 0)).slice(9, 52)).toBe('0'.repeat(43));
    expect(newRawKey(Buffer.from([...Array(31).fill(0), 61])).slice(9, 52)).toBe('0'.repeat(42) + 'z');
  });

  it('C is the CRC-32 of "svc_live_" + R in base62, left-padded to 6', () => {
    for (let i = 0; i < 200; i++) {
      const key = newRawKey();
      const body = key.slice(0, 52);
      const expected = toBase62(BigInt(crc32Reference(Buffer.from(body, 'ascii'))), 6);
      expect(key.slice(52)).toBe(expected);
    }
  });

  it('a key built independently from the spec is well formed', () => {
    const body = 'svc_live_' + toBase62(123456789n ** 5n, 43);
    const key = body + toBase62(BigInt(crc32Reference(Buffer.from(body))), 6);
    expect(isWellFormedKey(key)).toBe(true);
  });

  it('any one-character change fails isWellFormedKey', () => {
    const key = newRawKey();
    expect(isWellFormedKey(key)).toBe(true);
    for (let pos = 0; pos < key.length; pos++) {
      for (const replacement of [ALPHABET[(ALPHABET.indexOf(key[pos]) + 1) % 62] ?? 'x', ALPHABET[(ALPHABET.indexOf(key[pos]) + 31) % 62] ?? 'y', '_']) {
        if (replacement === key[pos]) continue;
        const changed = key.slice(0, pos) + replacement + key.slice(pos + 1);
        expect(isWellFormedKey(changed), `position ${pos} → ${replacement}`).toBe(false);
      }
    }
  });

  it('rejects wrong lengths, prefixes and characters', () => {
    const key = newRawKey();
    for (const bad of ['', key.slice(0, -1), key + 'a', key.replace('svc_live_', 'svc_test_'), key.replace('svc_live_', 'SVC_LIVE_'), ` ${key.slice(1)}`, key.slice(0, 20) + '-' + key.slice(21)]) {
      expect(isWellFormedKey(bad), JSON.stringify(bad)).toBe(false);
    }
  });

  it('digest is the SHA-256 hex of the whole key (as sha256sum prints it), fingerprint its first 12 hex chars', () => {
    const key = newRawKey();
    const sha256sum = execFileSync('sha256sum', { input: key }).toString().split(' ')[0];
    expect(keyDigest(key)).toBe(sha256sum);
    expect(keyDigest(key)).toMatch(/^[0-9a-f]{64}$/);
    expect(fingerprintOf(keyDigest(key))).toBe(sha256sum.slice(0, 12));
  });

  it('keys are unique', () => {
    const keys = new Set(Array.from({ length: 1000 }, () => newRawKey()));
    expect(keys.size).toBe(1000);
  });
});
