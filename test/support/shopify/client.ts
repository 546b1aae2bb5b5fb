import { ADMIN_API_VERSION } from './schema.js';
import type { StandIn } from './standIn.js';

/** Small HTTP helpers for tests that talk to the stand-in the way svc will. */
export type HttpAnswer = { status: number; body: any };

async function post(url: string, body: string, headers: Record<string, string>, timeoutMs = 5000): Promise<HttpAnswer> {
  const res = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(timeoutMs) });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: res.status, body: parsed };
}

/** POST a GraphQL document to a shop's Admin API with an access token. */
export function adminGraphql(
  standIn: StandIn,
  shop: string,
  token: string,
  query: string,
  variables?: Record<string, unknown>,
  opts: { operationName?: string; timeoutMs?: number } = {},
): Promise<HttpAnswer> {
  return post(
    `${standIn.shopUrl(shop)}/admin/api/${ADMIN_API_VERSION}/graphql.json`,
    JSON.stringify({ query, variables, operationName: opts.operationName }),
    { 'Content-Type': 'application/json', 'X-Shopify-Access-Token': token },
    opts.timeoutMs,
  );
}

/** POST to a shop's token endpoint, as JSON (default) or as a form. */
export function tokenRequest(standIn: StandIn, shop: string, params: Record<string, string>, form = false): Promise<HttpAnswer> {
  const url = `${standIn.shopUrl(shop)}/admin/oauth/access_token`;
  return form
    ? post(url, new URLSearchParams(params).toString(), { 'Content-Type': 'application/x-www-form-urlencoded' })
    : post(url, JSON.stringify(params), { 'Content-Type': 'application/json', Accept: 'application/json' });
}

/** Token exchange of a session token for an expiring offline access token. */
export function exchangeToken(standIn: StandIn, shop: string, sessionToken = standIn.sessionToken(shop), form = false): Promise<HttpAnswer> {
  return tokenRequest(
    standIn,
    shop,
    {
      client_id: standIn.options.appKey,
      client_secret: standIn.options.appSecret,
      grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
      subject_token: sessionToken,
      subject_token_type: 'urn:ietf:params:oauth:token-type:id_token',
      requested_token_type: 'urn:shopify:params:oauth:token-type:offline-access-token',
      expiring: '1',
    },
    form,
  );
}

export function refreshToken(standIn: StandIn, shop: string, token: string): Promise<HttpAnswer> {
  return tokenRequest(standIn, shop, {
    client_id: standIn.options.appKey,
    client_secret: standIn.options.appSecret,
    grant_type: 'refresh_token',
    refresh_token: token,
  });
}

/** Exchanges a fresh session token and returns the access token (throws on failure). */
export async function accessTokenFor(standIn: StandIn, shop: string): Promise<string> {
  const answer = await exchangeToken(standIn, shop);
  if (answer.status !== 200) throw new Error(`token exchange failed: ${JSON.stringify(answer.body)}`);
  return answer.body.access_token;
}
