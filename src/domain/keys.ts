import crypto, { createHash, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';

/**
 * API key format: `svc_live_` + R (43 base62 chars: 32 CSPRNG bytes as an unsigned big-endian integer) + C (6 base62
 * chars: CRC-32 of `svc_live_` + R). The checksum lets us refuse a mistyped or forged key without a database query;
 * it is not a secret and adds no security of its own.
 */
export const KEY_PREFIX = 'svc_live_';
const RANDOM_LENGTH = 43;
const CHECKSUM_LENGTH = 6;
export const KEY_LENGTH = KEY_PREFIX.length + RANDOM_LENGTH + CHECKSUM_LENGTH; // 58
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const KEY_SHAPE = /^svc_live_[0-9A-Za-z]{49}$/;
/** What a secret scanner looks for (PRODUCT §1): a whole key. */
export const KEY_PATTERN_SOURCE = String.raw`\bsvc_live_[0-9A-Za-z]{49}\b`;

/*
 * Where a key must never be (PRODUCT §5: logs, URLs, error texts), anything that starts like one counts, whole or
 * cut short, in any case, with its underscores percent-encoded: better a false alarm than a leak.
 */
const MENTION = /svc(?:_|%5f)live(?:_|%5f)/i;
const ANYWHERE = /svc_live_[0-9A-Za-z]*/gi;

/** True when the text holds anything that looks like an API key. */
export const mentionsKey = (text: string): boolean => MENTION.test(text);

/** The text with every key (or piece of one) replaced: the last line of defence for logs and error messages. */
export function scrubKeys(text: string): string {
  return MENTION.test(text) ? text.replace(ANYWHERE, 'svc_live_[REDACTED]').replace(/svc%5flive%5f[0-9A-Za-z]*/gi, 'svc_live_[REDACTED]') : text;
}

export function base62(value: bigint, width: number): string {
  let out = '';
  let v = value;
  while (v > 0n) {
    out = ALPHABET[Number(v % 62n)] + out;
    v /= 62n;
  }
  return out.padStart(width, '0');
}

/** CRC-32 of the (ASCII) body in base62: plain numbers, as a CRC-32 fits in one (this runs on every request). */
function checksum(body: string): string {
  let v = crc32(body) >>> 0;
  let out = '';
  while (v > 0) {
    out = ALPHABET[v % 62] + out;
    v = Math.floor(v / 62);
  }
  return out.padStart(CHECKSUM_LENGTH, '0');
}

/** A new raw key. It is shown to the merchant once; only `keyDigest(raw)` is kept. */
export function newRawKey(random: Buffer = randomBytes(32)): string {
  const body = KEY_PREFIX + base62(BigInt('0x' + random.toString('hex')), RANDOM_LENGTH);
  return body + checksum(body);
}

/** Shape and checksum only: no I/O, so malformed and forged keys cost nothing. */
export function isWellFormedKey(raw: string): boolean {
  if (raw.length !== KEY_LENGTH || !KEY_SHAPE.test(raw)) return false;
  const body = raw.slice(0, KEY_LENGTH - CHECKSUM_LENGTH);
  return checksum(body) === raw.slice(KEY_LENGTH - CHECKSUM_LENGTH);
}

/** SHA-256 (hex) of the whole raw key: the stored, looked-up form. */
export function keyDigest(raw: string): string {
  return oneShotHash ? oneShotHash('sha256', raw, 'hex') : createHash('sha256').update(raw).digest('hex');
}
// crypto.hash (Node 20.12+): one call, no Hash object, for what runs on every request.
const oneShotHash = (crypto as { hash?: (alg: string, data: string, enc: 'hex') => string }).hash;

/** First 12 hex chars of the digest; a key holder can check it with `printf %s "$KEY" | sha256sum`. */
export function fingerprintOf(digest: string): string {
  return digest.slice(0, 12);
}
