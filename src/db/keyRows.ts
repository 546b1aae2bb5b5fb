import { batchRows } from './batchInput.js';
import { Batcher, perDatabase } from './batcher.js';
import { isDatabaseUnavailable, type Database } from './client.js';
import { byOrd, type KeyState } from './contractRows.js';

/**
 * The key reads of authentication, batched over concurrent callers (see Batcher) and prepared by name: a lookup by
 * digest through the unique index (never a comparison in code), and the state of a key the process already knows.
 */

/** An API key's row as authentication needs it: what never changes (ids) and what decides access now. */
export type KeyRow = KeyState & { keyId: string; shopId: string; lastUsedAt: Date | null };

const KEYS_BY_DIGEST = `
  SELECT q.ord::int AS ord, k.id::text AS "keyId", k.shop_id::text AS "shopId", k.access, k.permissions::text AS permissions, k.revoked_at AS "revokedAt",
         k.last_used_at AS "lastUsedAt", s.plan, s.uninstalled_at IS NOT NULL AS uninstalled
    FROM ${batchRows(['$1::text[]'])} WITH ORDINALITY AS q(digest, ord)
    JOIN api_keys k ON k.digest = q.digest
    JOIN shops s ON s.id = k.shop_id`;

const KEY_STATES = `
  SELECT q.ord::int AS ord, k.revoked_at AS "revokedAt", s.plan, s.uninstalled_at IS NOT NULL AS uninstalled, k.access, k.permissions::text AS permissions
    FROM ${batchRows(['$1::uuid[]'])} WITH ORDINALITY AS q(key_id, ord)
    JOIN api_keys k ON k.id = q.key_id
    JOIN shops s ON s.id = k.shop_id`;

function create(db: Database) {
  const opts = { failsEveryInput: isDatabaseUnavailable };
  return {
    byDigest: new Batcher<string, KeyRow | undefined>(async (digests) => {
      const rows = await db.prepared<KeyRow & { ord: number }>('svc_keys_by_digest', KEYS_BY_DIGEST, [digests]);
      return byOrd(rows, digests.length);
    }, opts),
    states: new Batcher<string, KeyState | undefined>(async (keyIds) => {
      const rows = await db.prepared<KeyState & { ord: number }>('svc_key_states', KEY_STATES, [keyIds]);
      return byOrd(rows, keyIds.length);
    }, opts),
  };
}

/** The batched key reads of one database. */
export const keyRows = perDatabase(create);
