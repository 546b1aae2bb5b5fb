import { revokeLeakedKeys, type LeakedKeyInput } from '../db/leakedKeys.js';
import { isWellFormedKey, keyDigest } from '../domain/keys.js';
import { leakSourceOf, leakUrlOf, type MatchLabel, type ReportedMatch } from '../domain/secretScanning.js';
import type { ServiceCall } from './context.js';

export type LeakReportOutcome = {
  labels: MatchLabel[];
  /** How many keys this report revoked (the others were already revoked, or are not svc's). */
  revoked: number;
};

/**
 * Acts on a verified report of keys found in public: every match that is an active key of svc is revoked at once
 * (reason `leaked`, with when and where it was found), which every instance sees on the key's very next request,
 * since each request reads its key's state; the shop's webhook endpoints get `api_key.leaked`. A match that is, or
 * was, a key of svc is labelled true_positive; anything else false_positive. A key already revoked stays as it is.
 * A token that is not of the key's shape, or whose checksum fails, is not looked up at all.
 */
export async function reportLeakedKeys({ ctx, input }: ServiceCall<{ matches: ReportedMatch[] }>): Promise<LeakReportOutcome> {
  const digests = input.matches.map((m) => (isWellFormedKey(m.token) ? keyDigest(m.token) : null));
  // A key reported twice in one report is revoked once, with where it was first reported found.
  const byDigest = new Map<string, LeakedKeyInput>();
  input.matches.forEach((m, i) => {
    const digest = digests[i];
    if (digest && !byDigest.has(digest)) byDigest.set(digest, { digest, url: leakUrlOf(m), source: leakSourceOf(m) });
  });
  const rows = await revokeLeakedKeys(ctx.db, [...byDigest.values()], ctx.clock.now());
  const svcKeys = new Set(rows.map((r) => r.digest));
  const labels = input.matches.map((m, i): MatchLabel => {
    const digest = digests[i];
    return { token_raw: m.token, token_type: m.type ?? '', label: digest && svcKeys.has(digest) ? 'true_positive' : 'false_positive' };
  });
  return { labels, revoked: rows.filter((r) => r.revokedNow).length };
}
