import { and, desc, eq, isNotNull, isNull } from 'drizzle-orm';
import { oauthGrants } from '../../db/schema.js';
import type { RunSql } from '../../db/client.js';
import { ServiceError } from '../../domain/errors.js';
import { isUuid } from '../../domain/ids.js';
import {
  ACCESS_TOKEN_TTL_S,
  newAccessToken,
  newRefreshToken,
  OAuthError,
  permissionsOfScope,
  pkceMatches,
  REFRESH_TOKEN_TTL_S,
  scopeOf,
  SCOPES,
  tokenDigest,
} from '../../domain/oauth.js';
import { allows, permissionsFrom, RESOURCES, type Permissions } from '../../domain/permissions.js';
import { isoString } from '../../domain/time.js';
import type { ServiceContext } from '../context.js';

/** The token endpoint's answer (RFC 6749 §5.1). */
export type TokenResponse = { access_token: string; token_type: 'Bearer'; expires_in: number; refresh_token: string; scope: string };

const NONE = Object.fromEntries(RESOURCES.map((r) => [r, 'none'])) as Permissions;
const grantPermissions = (stored: unknown) => permissionsFrom(stored, NONE);

/** A new access and refresh token for a grant, in the transaction of `run`; only their digests are stored. */
async function issueTokens(run: RunSql, now: Date, grant: { id: string; shopId: string; permissions: Permissions }): Promise<TokenResponse> {
  const access = newAccessToken();
  const refresh = newRefreshToken();
  const at = (s: number) => new Date(now.getTime() + s * 1000);
  await run(
    `INSERT INTO oauth_tokens (digest, grant_id, shop_id, kind, created_at, expires_at)
     VALUES ($1, $3, $4, 'access', $5, $6), ($2, $3, $4, 'refresh', $5, $7)`,
    [tokenDigest(access), tokenDigest(refresh), grant.id, grant.shopId, now, at(ACCESS_TOKEN_TTL_S), at(REFRESH_TOKEN_TTL_S)],
  );
  return { access_token: access, token_type: 'Bearer', expires_in: ACCESS_TOKEN_TTL_S, refresh_token: refresh, scope: scopeOf(grant.permissions) };
}

/** Ends a grant: every token of it stops working at once (each request reads the grant), on every instance. */
const REVOKE_GRANT = `UPDATE oauth_grants SET revoked_at = $2, revoked_reason = $3 WHERE id = $1 AND revoked_at IS NULL`;

const invalidGrant = (description: string) => new OAuthError('invalid_grant', description);

type GrantRow = { id: string; shopId: string; clientId: string; redirectUri: string; resource: string; permissions: unknown; revokedAt: Date | null };
const GRANT_COLUMNS = `g.id::text AS id, g.shop_id::text AS "shopId", g.client_id AS "clientId", g.redirect_uri AS "redirectUri", g.resource,
  g.permissions, g.revoked_at AS "revokedAt"`;

/**
 * grant_type=authorization_code (RFC 6749 §4.1.3, RFC 7636 §4.6): the code, once, within its 10 minutes, by the client
 * it was issued to, with the verifier of its challenge, for its redirect URI and resource. A code presented a second
 * time revokes the grant and so every token issued from it (RFC 6749 §4.1.2); a wrong verifier uses the code up.
 */
export async function exchangeCode(
  ctx: ServiceContext,
  p: { code?: string; code_verifier?: string; client_id?: string; redirect_uri?: string; resource?: string },
): Promise<TokenResponse> {
  if (!p.code || !p.code_verifier || !p.client_id) throw new OAuthError('invalid_request', 'code, code_verifier and client_id are required.');
  const now = ctx.clock.now();
  const outcome = await ctx.db.transaction(async (run): Promise<TokenResponse | OAuthError> => {
    const [row] = await run<GrantRow & { usedAt: Date | null; expiresAt: Date; challenge: string }>(
      `SELECT ${GRANT_COLUMNS}, c.used_at AS "usedAt", c.expires_at AS "expiresAt", c.code_challenge AS challenge
         FROM oauth_codes c JOIN oauth_grants g ON g.id = c.grant_id WHERE c.digest = $1 FOR UPDATE OF c, g`,
      [tokenDigest(p.code!)],
    );
    if (!row || row.clientId !== p.client_id) return invalidGrant('The code is unknown, or was issued to another client.');
    if (row.usedAt) {
      await run(REVOKE_GRANT, [row.id, now, 'code_replayed']);
      return invalidGrant('The code was used already; the tokens issued from it are revoked.');
    }
    await run(`UPDATE oauth_codes SET used_at = $2 WHERE digest = $1`, [tokenDigest(p.code!), now]);
    if (row.expiresAt.getTime() <= now.getTime()) return invalidGrant('The code has expired (codes last 10 minutes).');
    if (row.revokedAt) return invalidGrant('The connection was ended.');
    if (!pkceMatches(p.code_verifier!, row.challenge)) return invalidGrant('The code_verifier does not match the code_challenge.');
    if (p.redirect_uri !== undefined && p.redirect_uri !== row.redirectUri) return invalidGrant('redirect_uri is not the one the code was issued for.');
    if (p.resource !== undefined && p.resource !== row.resource) return new OAuthError('invalid_target', `The code was issued for ${row.resource}.`);
    await run(`UPDATE oauth_grants SET connected_at = $2 WHERE id = $1`, [row.id, now]);
    return issueTokens(run, now, { id: row.id, shopId: row.shopId, permissions: grantPermissions(row.permissions) });
  });
  if (outcome instanceof OAuthError) throw outcome;
  return outcome;
}

/**
 * grant_type=refresh_token (RFC 6749 §6, OAuth 2.1 §4.3.1): a refresh token works once and is replaced by a new one
 * (rotation); one presented again revokes the whole grant (whoever holds the other copy, the client or a thief, is
 * cut off and the merchant's app must be connected again). `scope` may narrow nothing past the grant (invalid_scope).
 */
export async function refreshTokens(ctx: ServiceContext, p: { refresh_token?: string; client_id?: string; resource?: string; scope?: string }): Promise<TokenResponse> {
  if (!p.refresh_token || !p.client_id) throw new OAuthError('invalid_request', 'refresh_token and client_id are required.');
  const now = ctx.clock.now();
  const digest = tokenDigest(p.refresh_token);
  const outcome = await ctx.db.transaction(async (run): Promise<TokenResponse | OAuthError> => {
    const [row] = await run<GrantRow & { usedAt: Date | null; expiresAt: Date; kind: string }>(
      `SELECT ${GRANT_COLUMNS}, t.used_at AS "usedAt", t.expires_at AS "expiresAt", t.kind
         FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id WHERE t.digest = $1 FOR UPDATE OF t, g`,
      [digest],
    );
    if (!row || row.kind !== 'refresh' || row.clientId !== p.client_id) return invalidGrant('The refresh token is unknown, or was issued to another client.');
    if (row.revokedAt) return invalidGrant('The connection was ended; connect the app again.');
    if (row.usedAt) {
      await run(REVOKE_GRANT, [row.id, now, 'refresh_reused']);
      return invalidGrant('The refresh token was used already; the connection is revoked. Connect the app again.');
    }
    if (row.expiresAt.getTime() <= now.getTime()) return invalidGrant('The refresh token has expired; connect the app again.');
    if (p.resource !== undefined && p.resource !== row.resource) return new OAuthError('invalid_target', `The grant is for ${row.resource}.`);
    const permissions = grantPermissions(row.permissions);
    // A scope naming none of svc's asks for nothing in particular: the grant's permissions, as they are.
    if (p.scope !== undefined && p.scope.split(' ').some((w) => SCOPES.includes(w))) {
      const asked = permissionsOfScope(p.scope);
      if (!RESOURCES.every((r) => asked[r] === 'none' || allows(permissions, { resource: r, level: asked[r] as 'read' | 'write' }))) {
        return new OAuthError('invalid_scope', 'A refresh cannot ask for more than the merchant approved.');
      }
    }
    await run(`UPDATE oauth_tokens SET used_at = $2 WHERE digest = $1`, [digest, now]);
    return issueTokens(run, now, { id: row.id, shopId: row.shopId, permissions });
  });
  if (outcome instanceof OAuthError) throw outcome;
  return outcome;
}

/** A connected app as Settings → API lists it. */
export type Connection = { id: string; clientName: string; clientId: string; permissions: Permissions; createdAt: string; lastUsedAt: string | null };

/** A shop's connections: grants whose code was exchanged and that are not ended, newest first. */
export async function listConnections(ctx: ServiceContext, shopId: string): Promise<Connection[]> {
  const rows = await ctx.db.orm
    .select()
    .from(oauthGrants)
    .where(and(eq(oauthGrants.shopId, shopId), isNotNull(oauthGrants.connectedAt), isNull(oauthGrants.revokedAt)))
    .orderBy(desc(oauthGrants.createdAt));
  return rows.map((g) => ({
    id: g.id,
    clientName: g.clientName,
    clientId: g.clientId,
    permissions: grantPermissions(g.permissions),
    createdAt: isoString(g.createdAt),
    lastUsedAt: g.lastUsedAt ? isoString(g.lastUsedAt) : null,
  }));
}

/**
 * Disconnects an app: its grant ends at once, so its very next request is refused on every instance (each request
 * reads the grant, as each reads a key's state). Disconnecting one already ended changes nothing.
 */
export async function disconnectConnection(ctx: ServiceContext, shopId: string, grantId: string): Promise<void> {
  const notFound = () => new ServiceError('not_found', 'No connected app with this id exists for this shop.');
  if (!isUuid(grantId)) throw notFound();
  const [row] = await ctx.db.orm.select({ revokedAt: oauthGrants.revokedAt }).from(oauthGrants).where(and(eq(oauthGrants.id, grantId), eq(oauthGrants.shopId, shopId)));
  if (!row) throw notFound();
  if (row.revokedAt) return;
  await ctx.db.orm
    .update(oauthGrants)
    .set({ revokedAt: ctx.clock.now(), revokedReason: 'disconnected' })
    .where(and(eq(oauthGrants.id, grantId), eq(oauthGrants.shopId, shopId), isNull(oauthGrants.revokedAt)));
}
