import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { eq } from 'drizzle-orm';
import { oauthClients } from '../../db/schema.js';
import { CLIENT_DOCUMENT_MAX_AGE_MS, isAcceptableRedirectUri, newClientId, OAuthError } from '../../domain/oauth.js';
import { allowedAddresses, guardedLookup, isLoopbackHost, type AddressPolicy } from '../../webhooks/addressGuard.js';
import type { ServiceContext } from '../context.js';

/** An OAuth client as the authorization endpoint needs it. */
export type OAuthClient = { id: string; kind: 'registered' | 'metadata_document'; name: string; redirectUris: string[] };

const MAX_REDIRECT_URIS = 10;
const MAX_NAME = 100;
/** A metadata document larger than this is refused (the draft's advice is 5 KB; a little room above it). */
const MAX_DOCUMENT_BYTES = 8 * 1024;
const FETCH_TIMEOUT_MS = 5000;

const text = (v: unknown, max: number): string | undefined => (typeof v === 'string' && v.trim() && v.length <= max ? v.trim() : undefined);

/**
 * Client metadata (RFC 7591 §2) as svc keeps it: redirect URIs (required, each acceptable), a name, and only a public
 * client (`token_endpoint_auth_method: none`): svc issues no client secrets, PKCE binds the code to its client.
 * `invalid` names the error code (registration: invalid_client_metadata / invalid_redirect_uri).
 */
function readMetadata(body: unknown): { name: string; redirectUris: string[]; metadata: Record<string, unknown> } {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new OAuthError('invalid_client_metadata', 'The client metadata must be a JSON object.');
  const m = body as Record<string, unknown>;
  const uris = m.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0 || uris.length > MAX_REDIRECT_URIS || !uris.every((u) => typeof u === 'string')) {
    throw new OAuthError('invalid_redirect_uri', `redirect_uris must be an array of 1 to ${MAX_REDIRECT_URIS} URIs.`);
  }
  const bad = (uris as string[]).find((u) => !isAcceptableRedirectUri(u));
  if (bad !== undefined) {
    throw new OAuthError('invalid_redirect_uri', `Redirect URI "${bad.slice(0, 200)}" is not allowed: it must be https, http on a loopback address (127.0.0.1, [::1], localhost), or an app's private-use scheme, without a fragment.`);
  }
  const method = m.token_endpoint_auth_method;
  if (method !== undefined && method !== 'none') {
    throw new OAuthError('invalid_client_metadata', 'svc registers public clients only: token_endpoint_auth_method must be "none" (PKCE protects the code).');
  }
  for (const [field, allowed] of [
    ['grant_types', ['authorization_code', 'refresh_token']],
    ['response_types', ['code']],
  ] as const) {
    const v = m[field];
    if (v !== undefined && (!Array.isArray(v) || !v.every((g) => (allowed as readonly string[]).includes(g)))) {
      throw new OAuthError('invalid_client_metadata', `${field} may hold only ${allowed.join(', ')}.`);
    }
  }
  const name = text(m.client_name, MAX_NAME) ?? (new URL((uris as string[])[0]).host || 'An unnamed app');
  const keep: Record<string, unknown> = {};
  for (const f of ['client_uri', 'logo_uri', 'software_id', 'software_version', 'scope']) {
    const v = text(m[f], 2000);
    if (v) keep[f] = v;
  }
  return { name, redirectUris: uris as string[], metadata: keep };
}

/** Dynamic client registration (RFC 7591 §3): open, as the MCP specification expects; the answer is §3.2.1's. */
export async function registerClient(ctx: ServiceContext, body: unknown): Promise<Record<string, unknown>> {
  const { name, redirectUris, metadata } = readMetadata(body);
  const id = newClientId();
  const now = ctx.clock.now();
  await ctx.db.orm.insert(oauthClients).values({ id, kind: 'registered', name, redirectUris, metadata, createdAt: now });
  return {
    client_id: id,
    client_id_issued_at: Math.floor(now.getTime() / 1000),
    client_name: name,
    redirect_uris: redirectUris,
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    ...metadata,
  };
}

/** A client_id that is a metadata document's URL (draft-ietf-oauth-client-id-metadata-document): https with a path. */
export function isMetadataDocumentUrl(clientId: string, policy: AddressPolicy): boolean {
  if (!URL.canParse(clientId)) return false;
  const u = new URL(clientId);
  // http only for a loopback host while private addresses are allowed (development and tests), as for webhooks.
  const scheme = u.protocol === 'https:' || (u.protocol === 'http:' && policy.allowPrivate && isLoopbackHost(u.hostname.replace(/^\[|\]$/g, '')));
  return scheme && u.pathname !== '/' && !u.hash && !u.username && !u.password;
}

/**
 * GETs a client's metadata document through the same SSRF guard as webhook deliveries (webhooks/addressGuard.ts: the
 * address checked after DNS, at connect time): no redirect followed, at most MAX_DOCUMENT_BYTES, FETCH_TIMEOUT_MS.
 */
async function fetchDocument(url: URL, policy: AddressPolicy): Promise<unknown> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) await allowedAddresses(host, policy);
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.get(url, { lookup: guardedLookup(policy) as never, headers: { accept: 'application/json', 'user-agent': 'svc-oauth/1' }, timeout: FETCH_TIMEOUT_MS }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new Error(`HTTP ${res.statusCode}`));
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_DOCUMENT_BYTES) {
          res.destroy();
          reject(new Error('the document is too large'));
          return;
        }
        chunks.push(c);
      });
      res.on('end', () => {
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        } catch {
          reject(new Error('the document is not JSON'));
        }
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
  });
}

/**
 * The client a client_id names: one registered here, or one whose id is its metadata document's URL (fetched, kept,
 * fetched again once a day). Null when there is none; a document that cannot be read or does not name itself is none.
 */
export async function findClient(ctx: ServiceContext, clientId: string): Promise<OAuthClient | null> {
  if (clientId.length > 2000) return null;
  const [row] = await ctx.db.orm.select().from(oauthClients).where(eq(oauthClients.id, clientId));
  const now = ctx.clock.now();
  const fresh = row && (row.kind === 'registered' || (row.fetchedAt && now.getTime() - row.fetchedAt.getTime() < CLIENT_DOCUMENT_MAX_AGE_MS));
  if (fresh) return { id: row.id, kind: row.kind, name: row.name, redirectUris: row.redirectUris };
  if (!isMetadataDocumentUrl(clientId, ctx.webhookAddresses)) return null;
  let doc: unknown;
  try {
    doc = await fetchDocument(new URL(clientId), ctx.webhookAddresses);
  } catch (err) {
    ctx.warn?.({ clientId, err: (err as Error).message }, 'could not read an OAuth client metadata document');
    return null;
  }
  if (!doc || typeof doc !== 'object' || (doc as Record<string, unknown>).client_id !== clientId) return null;
  let read;
  try {
    read = readMetadata(doc);
  } catch {
    return null;
  }
  const values = { kind: 'metadata_document' as const, name: read.name, redirectUris: read.redirectUris, metadata: read.metadata, fetchedAt: now };
  await ctx.db.orm
    .insert(oauthClients)
    .values({ id: clientId, createdAt: now, ...values })
    .onConflictDoUpdate({ target: oauthClients.id, set: values });
  return { id: clientId, kind: 'metadata_document', name: read.name, redirectUris: read.redirectUris };
}
