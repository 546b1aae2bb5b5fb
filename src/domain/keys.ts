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
/** What a secret scanner looks for (docs/product.md §1): a whole key. */
export const KEY_PATTERN_SOURCE = String.raw`\bsvc_live_[0-9A-Za-z]{49}\b`;

/*
 * Where a key must never be (logs, URLs, error texts), anything that starts like one counts, whole or cut short, in
 * any case, and percent-encoded in any way (`%73vc_live_`, `svc%255flive_`): better a false alarm than a leak.
 */
const MENTION = /svc_live_/i;
const ANYWHERE = /svc_live_[0-9A-Za-z]*/gi;
/** A %XX escape of an ASCII character: what a key's characters (letters, digits, `_`) and `%` itself encode to. */
const ASCII_ESCAPE = /%([0-7][0-9A-Fa-f])/g;
/** Enough for any encoding a client, a proxy and a framework could stack up; past it the text counts as a mention. */
const MAX_DECODING_ROUNDS = 8;
/**
 * A run of text without spaces, quotes, backslashes or the delimiters of a URL's parts (`/ ? & = #`): a path segment,
 * a query parameter's name or value, a word. A key's characters include none of these, and percent-decoding never
 * removes one, so a key (however encoded) lies inside one run: replacing that run alone keeps the rest of a URL
 * readable (the request log shows the path around it).
 */
const RUN = /[^\s"'\\<>/?&=#]+/g;

/**
 * The text with its percent-escapes of ASCII characters decoded, again and again until nothing changes, so that
 * `svc%255flive_` reads `svc_live_`; null if it still changes after MAX_DECODING_ROUNDS. Each round that changes
 * anything shortens the text, and the escapes of non-ASCII bytes are left alone (no key character is one), so a
 * malformed escape cannot fail it.
 */
export function percentDecoded(text: string): string | null {
  let out = text;
  for (let round = 0; round < MAX_DECODING_ROUNDS; round++) {
    const next = decodeOnce(out);
    if (next === out) return out;
    out = next;
  }
  return decodeOnce(out) === out ? out : null;
}

const decodeOnce = (text: string) =>
  text.includes('%') ? text.replace(ASCII_ESCAPE, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))) : text;

/** True when the text holds anything that looks like an API key, percent-encoded or not. */
export function mentionsKey(text: string): boolean {
  if (MENTION.test(text)) return true;
  if (!text.includes('%')) return false;
  const decoded = percentDecoded(text);
  return decoded === null || MENTION.test(decoded);
}

/**
 * The text with every key (or piece of one) replaced: the last line of defence for logs and error messages. A
 * percent-encoded key is replaced with the whole run of text around it (a path segment or a query value), as only
 * its decoded form shows where the key is.
 */
export function scrubKeys(text: string): string {
  const out = MENTION.test(text) ? text.replace(ANYWHERE, 'svc_live_[REDACTED]') : text;
  return out.includes('%') ? out.replace(RUN, (run) => (run.includes('%') && mentionsKey(run) ? '[REDACTED]' : run)) : out;
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
