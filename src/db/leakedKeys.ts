import type { Database } from './client.js';

/** A key a report named, as found: whether it was active until this report revoked it. */
export type ReportedKeyRow = { digest: string; revokedNow: boolean };

/** One key of a report: its digest, and where the report says it was found. */
export type LeakedKeyInput = { digest: string; url: string | null; source: string | null };

/*
 * One statement: finds every reported digest through the unique index, revokes the active ones (reason leaked,
 * with when and where), and queues an `api_key.leaked` delivery for each one revoked to every enabled endpoint of
 * its shop that takes that event. The revocation and its deliveries commit together or not at all; a key revoked
 * meanwhile (by hand, or by another report) is not revoked again and sends nothing (the UPDATE re-checks
 * `revoked_at IS NULL` under the row's lock). The event's data is the key's id, name and fingerprint (the first 12
 * hex characters of its digest, as domain/keys.ts fingerprintOf), the url and the source: never the key.
 */
const REVOKE_LEAKED = `
  WITH report AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) AS r(digest, url, source)
  ), found AS (
    SELECT k.id, k.digest FROM api_keys k JOIN report r ON r.digest = k.digest
  ), revoked AS (
    UPDATE api_keys k
       SET revoked_at = $4, revoked_reason = 'leaked', leaked_at = $4, leaked_url = r.url
      FROM report r
     WHERE k.digest = r.digest AND k.revoked_at IS NULL
    RETURNING k.id, k.shop_id, k.name, k.digest, r.url, r.source
  ), outbox AS (
    INSERT INTO webhook_deliveries (endpoint_id, shop_id, type, contract, next_attempt_at, created_at)
    SELECT w.id, rv.shop_id, 'api_key.leaked',
           jsonb_build_object('key', jsonb_build_object('id', rv.id, 'name', rv.name, 'fingerprint', left(rv.digest, 12)),
                              'url', rv.url, 'source', rv.source)::json,
           $4, $4
      FROM revoked rv
      JOIN webhook_endpoints w ON w.shop_id = rv.shop_id AND w.status = 'enabled'
                              AND (w.events = '{*}' OR 'api_key.leaked' = ANY (w.events))
  )
  SELECT f.digest, rv.id IS NOT NULL AS "revokedNow" FROM found f LEFT JOIN revoked rv ON rv.id = f.id`;

/** Revokes the reported keys that are active, with their deliveries; answers every reported digest that is a key. */
export async function revokeLeakedKeys(db: Database, keys: LeakedKeyInput[], now: Date): Promise<ReportedKeyRow[]> {
  if (keys.length === 0) return [];
  return db.prepared<ReportedKeyRow>('svc_revoke_leaked_keys', REVOKE_LEAKED, [
    keys.map((k) => k.digest),
    keys.map((k) => k.url),
    keys.map((k) => k.source),
    now,
  ]);
}
