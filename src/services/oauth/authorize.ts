import { MESSAGES, ServiceError } from '../../domain/errors.js';
import { CODE_TTL_S, isS256Challenge, narrowed, newCode, OAuthError, permissionsOfScope, redirectUriMatches, tokenDigest } from '../../domain/oauth.js';
import type { Permissions } from '../../domain/permissions.js';
import { oauthCodes, oauthGrants, shops } from '../../db/schema.js';
import { eq } from 'drizzle-orm';
import type { ServiceContext } from '../context.js';
import { shopApiAccess } from '../shops.js';
import { findClient, type OAuthClient } from './clients.js';

/** The parameters of an authorization request (RFC 6749 §4.1.1, RFC 7636 §4.3, RFC 8707 §2), as sent. */
export type AuthorizeParams = Partial<
  Record<'response_type' | 'client_id' | 'redirect_uri' | 'code_challenge' | 'code_challenge_method' | 'state' | 'scope' | 'resource', string>
>;

export const AUTHORIZE_PARAMS = ['response_type', 'client_id', 'redirect_uri', 'code_challenge', 'code_challenge_method', 'state', 'scope', 'resource'] as const;

/**
 * A request that cannot go back to the client: an unknown client, or a redirect URI it did not register. RFC 6749
 * §4.1.2.1: the merchant is told, and the browser is NOT sent to the untrusted URI.
 */
export class UntrustedAuthorizeRequest extends Error {}

/** A request refused once its redirect URI is trusted: the browser goes back to the client with `error` (§4.1.2.1). */
export class RefusedAuthorizeRequest extends Error {
  constructor(
    readonly redirectTo: string,
    readonly error: OAuthError,
  ) {
    super(error.description);
  }
}

/** A checked authorization request: what the consent page shows and what approving it binds into the code. */
export type AuthorizationRequest = {
  client: OAuthClient;
  redirectUri: string;
  /** What the client asked for (every permission when it named no scope). */
  asked: Permissions;
  resource: string;
  codeChallenge: string;
  state: string | undefined;
};

/** The client's redirect URI with the answer's parameters: `code` or `error`, `state`, and `iss` (RFC 9207). */
export function redirectWith(redirectUri: string, params: Record<string, string | undefined>): string {
  const u = new URL(redirectUri);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) u.searchParams.set(k, v);
  return u.toString();
}

/**
 * Checks an authorization request, in RFC 6749's order: the client and its redirect URI first (UntrustedAuthorizeRequest:
 * shown, never redirected), then the rest (RefusedAuthorizeRequest: back to the client with the error and `state`).
 * `resource` is this server's MCP endpoint: a request for any other resource is refused (invalid_target, RFC 8707).
 */
export async function checkAuthorizationRequest(ctx: ServiceContext, p: AuthorizeParams, ourResource: string, issuer: string): Promise<AuthorizationRequest> {
  if (!p.client_id) throw new UntrustedAuthorizeRequest('The request names no client (client_id is missing).');
  const client = await findClient(ctx, p.client_id);
  if (!client) throw new UntrustedAuthorizeRequest('The app that sent you here is not known to svc (its client_id is unknown, or its metadata document could not be read).');
  let redirectUri = p.redirect_uri;
  if (redirectUri === undefined) {
    // OAuth 2.1 §4.1.1: optional only when the client registered exactly one.
    if (client.redirectUris.length !== 1) throw new UntrustedAuthorizeRequest('The request names no redirect_uri, and the app registered several.');
    redirectUri = client.redirectUris[0];
  } else if (!redirectUriMatches(client.redirectUris, redirectUri)) {
    throw new UntrustedAuthorizeRequest('The redirect_uri is not one the app registered, so svc will not send you there.');
  }
  const refuse = (error: string, description: string) =>
    new RefusedAuthorizeRequest(redirectWith(redirectUri, { error, error_description: description, state: p.state, iss: issuer }), new OAuthError(error, description));
  if (p.response_type !== 'code') throw refuse('unsupported_response_type', 'response_type must be "code".');
  if (!p.code_challenge || p.code_challenge_method !== 'S256' || !isS256Challenge(p.code_challenge)) {
    throw refuse('invalid_request', 'PKCE is required: code_challenge (43 base64url characters) with code_challenge_method S256 (plain is not accepted).');
  }
  const resource = p.resource ?? ourResource;
  if (resource !== ourResource) throw refuse('invalid_target', `This server's only resource is ${ourResource}.`);
  const asked = permissionsOfScope(p.scope);
  return { client, redirectUri, asked, resource, codeChallenge: p.code_challenge, state: p.state };
}

/**
 * The merchant approved (with `approved`, at most what was asked): a grant for their shop and a code for it, single
 * use, CODE_TTL_S; the answer is where the browser goes next. The shop must have API access (as for a key: 403
 * plan_required). Only the code's digest is stored.
 */
export async function approveAuthorization(
  ctx: ServiceContext,
  input: { shopId: string; request: AuthorizationRequest; approved: Permissions; issuer: string },
): Promise<{ redirectTo: string; grantId: string }> {
  const { request } = input;
  const [shop] = await ctx.db.orm.select({ plan: shops.plan }).from(shops).where(eq(shops.id, input.shopId));
  if (!shop) throw new ServiceError('not_found', 'Shop not found.');
  if (!shopApiAccess(ctx, shop.plan).allowed) throw new ServiceError('plan_required', MESSAGES.planRequired);
  const permissions = narrowed(request.asked, input.approved);
  const code = newCode();
  const now = ctx.clock.now();
  const grantId = await ctx.db.orm.transaction(async (tx) => {
    const [grant] = await tx
      .insert(oauthGrants)
      .values({
        shopId: input.shopId,
        clientId: request.client.id,
        clientName: request.client.name,
        redirectUri: request.redirectUri,
        resource: request.resource,
        permissions: { ...permissions },
        createdAt: now,
      })
      .returning({ id: oauthGrants.id });
    await tx.insert(oauthCodes).values({
      digest: tokenDigest(code),
      grantId: grant.id,
      shopId: input.shopId,
      codeChallenge: request.codeChallenge,
      expiresAt: new Date(now.getTime() + CODE_TTL_S * 1000),
    });
    return grant.id;
  });
  return { redirectTo: redirectWith(request.redirectUri, { code, state: request.state, iss: input.issuer }), grantId };
}

/** The merchant declined: back to the client with access_denied (RFC 6749 §4.1.2.1). */
export const denyAuthorization = (request: AuthorizationRequest, issuer: string): string =>
  redirectWith(request.redirectUri, { error: 'access_denied', error_description: 'The merchant declined.', state: request.state, iss: issuer });
