import { batchRows } from './batchInput.js';
import { Batcher, perDatabase } from './batcher.js';
import { isDatabaseUnavailable, type Database } from './client.js';
import { byOrd, type KeyState } from './contractRows.js';

/**
 * The state of an OAuth grant (a connection) as a request reads it, in a key's shape (KeyState: ended? the shop's
 * plan, installed, the permissions), batched over concurrent callers like a key's: what decides, on every request,
 * whether a connection may act and with what. Never cached.
 */
const GRANT_STATES = `
  SELECT q.ord::int AS ord, g.revoked_at AS "revokedAt", s.plan, s.uninstalled_at IS NOT NULL AS uninstalled, 'custom' AS access, g.permissions::text AS permissions
    FROM ${batchRows(['$1::uuid[]'])} WITH ORDINALITY AS q(grant_id, ord)
    JOIN oauth_grants g ON g.id = q.grant_id
    JOIN shops s ON s.id = g.shop_id`;

function create(db: Database) {
  return {
    states: new Batcher<string, KeyState | undefined>(
      async (grantIds) => {
        const rows = await db.prepared<KeyState & { ord: number }>('svc_grant_states', GRANT_STATES, [grantIds]);
        return byOrd(rows, grantIds.length);
      },
      { failsEveryInput: isDatabaseUnavailable },
    ),
  };
}

/** The batched grant reads of one database. */
export const grantRows = perDatabase(create);
