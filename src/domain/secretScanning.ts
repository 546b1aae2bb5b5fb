import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { z } from 'zod';

/**
 * GitHub's secret scanning partner program: when GitHub finds something matching svc's key pattern in public (a
 * commit, an issue, a gist, an npm package), it POSTs a report to svc, signed with one of the keys GitHub
 * publishes. What the report and the answer look like, and how the signature is made, is GitHub's documentation:
 * https://docs.github.com/en/code-security/secret-scanning/secret-scanning-partnership-program/secret-scanning-partner-program
 *
 * - body: a JSON array of matches `{ token, type, url, source }` (`url` may be empty; `source` names where the token
 *   was seen: `content`, `commit`, `issue_comment`, …, in any case);
 * - headers: `Github-Public-Key-Identifier` (which of the published keys signed it) and `Github-Public-Key-Signature`
 *   (base64 of a DER-encoded ECDSA signature, NIST P-256 with SHA-256, over the raw body bytes);
 * - the published keys: `{ public_keys: [ { key_identifier, key (PEM), is_current } ] }`;
 * - the answer: one `{ token_raw, token_type, label: "true_positive" | "false_positive" }` per match.
 */

/** Where GitHub publishes the keys (GITHUB_SECRET_SCANNING_KEYS_URL's default). */
export const GITHUB_SECRET_SCANNING_KEYS_URL = 'https://api.github.com/meta/public_keys/secret_scanning';

export const KEY_ID_HEADER = 'github-public-key-identifier';
export const SIGNATURE_HEADER = 'github-public-key-signature';

/** A report svc reads at most this big: a report can list many matches, far more than an API request holds. */
export const REPORT_BODY_LIMIT = 1024 * 1024;
/** What is kept of a match's url and source (the url is shown to the merchant and stored with the key). */
export const MAX_LEAK_URL_LENGTH = 2048;
const MAX_SOURCE_LENGTH = 64;

/**
 * One match of a report. Lenient on purpose beyond `token`: a report is signed by GitHub, and refusing it over an
 * unexpected field's shape would leave a leaked key working. Fields GitHub adds later are ignored.
 */
const ReportedMatch = z.object({
  token: z.string(),
  type: z.string().nullish(),
  url: z.string().nullish(),
  source: z.string().nullish(),
});
export const LeakReport = z.array(ReportedMatch).min(1);
export type ReportedMatch = z.infer<typeof ReportedMatch>;

export type MatchLabel = { token_raw: string; token_type: string; label: 'true_positive' | 'false_positive' };

/** Text fit to store and show: no NUL or other C0 control characters, at most `max` characters. */
function storable(text: string | null | undefined, max: number): string | null {
  if (!text) return null;
  // Unpaired surrogates become U+FFFD (jsonb refuses them), control characters go; cut at `max` code points.
  const wellFormed = text.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');
  // eslint-disable-next-line no-control-regex
  const clean = [...wellFormed.replace(/[\u0000-\u001f\u007f]/g, '')].slice(0, max).join('');
  return clean === '' ? null : clean;
}

/** Where a match was found, as svc stores it with the key and sends it in `api_key.leaked`. */
export const leakUrlOf = (m: ReportedMatch): string | null => storable(m.url, MAX_LEAK_URL_LENGTH);
export const leakSourceOf = (m: ReportedMatch): string | null => storable(m.source, MAX_SOURCE_LENGTH);

/** The keys GitHub publishes, as its key list has them; entries that are not objects of this shape are skipped. */
export const PublishedKeyList = z.object({
  public_keys: z.array(z.unknown()),
});
const PublishedKey = z.object({ key_identifier: z.string().min(1), key: z.string().min(1), is_current: z.boolean().optional() });

/**
 * The usable keys of a published list, by identifier: PEM public keys on the P-256 curve. A malformed entry or a key
 * of another kind is left out (it could verify nothing svc accepts).
 */
export function publishedKeys(list: unknown): Map<string, KeyObject> | null {
  const parsed = PublishedKeyList.safeParse(list);
  if (!parsed.success) return null;
  const keys = new Map<string, KeyObject>();
  for (const entry of parsed.data.public_keys) {
    const k = PublishedKey.safeParse(entry);
    if (!k.success) continue;
    try {
      const key = createPublicKey(k.data.key);
      if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') keys.set(k.data.key_identifier, key);
    } catch {
      // not a PEM public key: skipped
    }
  }
  return keys;
}

/** A key identifier as GitHub sends it (a hex digest today); anything else is refused before any lookup. */
export const isPlausibleKeyId = (id: string): boolean => /^[A-Za-z0-9._:-]{1,256}$/.test(id);

/** base64 of a DER ECDSA P-256 signature: at most 72 bytes, so at most 96 characters. */
const SIGNATURE_SHAPE = /^[A-Za-z0-9+/]{8,128}={0,2}$/;

/** True when `signature` (base64 DER) is `key`'s ECDSA P-256 / SHA-256 signature of exactly these bytes. */
export function isSignedBy(rawBody: Buffer, signature: string, key: KeyObject): boolean {
  if (!SIGNATURE_SHAPE.test(signature)) return false;
  try {
    return verify('sha256', rawBody, { key, dsaEncoding: 'der' }, Buffer.from(signature, 'base64'));
  } catch {
    return false;
  }
}
