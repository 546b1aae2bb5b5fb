import type { KeyObject } from 'node:crypto';
import { publishedKeys } from '../domain/secretScanning.js';
import type { Clock } from './context.js';

/** What finding a signing key came to: the key, no such key (the report is refused), or the list could not be read. */
export type SigningKeyLookup = { key: KeyObject } | { unknown: true } | { unavailable: true };

export type SecretScanningKeysOptions = {
  /** GITHUB_SECRET_SCANNING_KEYS_URL. */
  url: string;
  clock: Clock;
  /** The list is read again after this long even when every identifier is known (1 hour). */
  maxAgeMs?: number;
  /**
   * An unknown identifier reads the list again at most this often (1 minute): anyone can send a report naming an
   * identifier that does not exist, and must not be able to make svc call the list's URL once per request.
   */
  minRereadIntervalMs?: number;
  /** How long one read of the list may take (5 s). */
  timeoutMs?: number;
  warn?: (obj: object, msg: string) => void;
};

/** The list is a few keys; anything this big is not it. */
const MAX_LIST_BYTES = 256 * 1024;

/**
 * The public keys GitHub signs its secret scanning reports with, read from their URL and kept in memory (they are
 * public, and the same for every instance). Read on first use, again when older than maxAgeMs, and again when a
 * report names an identifier the list lacks (GitHub added a key), no more than once per minRereadIntervalMs. Reads
 * that overlap share one request, and ask for the list only if it changed (If-None-Match). A list that cannot be
 * read leaves the keys already known in use.
 */
export class SecretScanningKeys {
  private keys: Map<string, KeyObject> | null = null;
  private readAt = -Infinity;
  private lastAttemptAt = -Infinity;
  private inFlight: Promise<boolean> | null = null;
  /** The list's ETag: a read asks "if changed" (GitHub does not count a 304 against its rate limit). */
  private etag: string | null = null;
  /** How many times the list was requested (for tests and logs). */
  reads = 0;

  constructor(private readonly opts: SecretScanningKeysOptions) {}

  async find(keyId: string): Promise<SigningKeyLookup> {
    const now = this.opts.clock.now().getTime();
    const stale = now - this.readAt >= (this.opts.maxAgeMs ?? 3_600_000);
    const known = this.keys?.get(keyId);
    if (known && !stale) return { key: known };
    const mayReread = this.keys === null || stale || now - this.lastAttemptAt >= (this.opts.minRereadIntervalMs ?? 60_000);
    if (!mayReread && !this.inFlight) return known ? { key: known } : { unknown: true };
    const ok = await this.read();
    const key = this.keys?.get(keyId);
    if (key) return { key };
    // The list could not be read just now: the identifier may well be a new key of GitHub's. The sender should try
    // again rather than hear that its signature is bad.
    return ok ? { unknown: true } : { unavailable: true };
  }

  private read(): Promise<boolean> {
    if (!this.inFlight) {
      this.lastAttemptAt = this.opts.clock.now().getTime();
      this.inFlight = this.fetchList().finally(() => {
        this.inFlight = null;
      });
    }
    return this.inFlight;
  }

  /** Reads the list; true when it was read and held at least one usable key. */
  private async fetchList(): Promise<boolean> {
    this.reads++;
    try {
      const headers: Record<string, string> = { accept: 'application/json', 'user-agent': 'svc-secret-scanning' };
      if (this.etag && this.keys) headers['if-none-match'] = this.etag;
      const res = await fetch(this.opts.url, { headers, redirect: 'error', signal: AbortSignal.timeout(this.opts.timeoutMs ?? 5_000) });
      if (res.status === 304 && this.keys) {
        // Unchanged since the last read: the keys held are the list.
        await res.body?.cancel();
        this.readAt = this.opts.clock.now().getTime();
        return true;
      }
      if (!res.ok) {
        await res.body?.cancel();
        throw new Error(`HTTP ${res.status}`);
      }
      const keys = publishedKeys(JSON.parse(await boundedText(res, MAX_LIST_BYTES)));
      if (!keys || keys.size === 0) throw new Error('no usable P-256 public key in the list');
      this.keys = keys;
      this.etag = res.headers.get('etag');
      this.readAt = this.opts.clock.now().getTime();
      return true;
    } catch (err) {
      const reason = err instanceof Error ? (err.name === 'TimeoutError' ? 'no answer in time' : err.message) : String(err);
      this.opts.warn?.({ url: this.opts.url, reason }, 'could not read the secret scanning public keys');
      return false;
    }
  }
}

/** The response's text, refused past `max` bytes without reading the rest. */
async function boundedText(res: Response, max: number): Promise<string> {
  if (!res.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > max) throw new Error(`the list is larger than ${max} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
