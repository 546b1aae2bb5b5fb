import { randomBytes, randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { jwtVerify, SignJWT } from 'jose';
import { appSettings } from '../db/schema.js';
import { SHOP_DOMAIN } from '../domain/access.js';
import { ServiceError } from '../domain/errors.js';
import type { ServiceContext } from './context.js';

/** The app's identity on the platform: session tokens are HS256 JWTs signed with `secret`, audience `apiKey`. */
export type AppCredentials = { apiKey: string; secret: string };

/**
 * SHOPIFY_API_KEY / SHOPIFY_API_SECRET when configured; otherwise values generated on first start and kept in the
 * database, so a standalone install (and every instance sharing its database) signs and checks the same tokens.
 */
export async function loadAppCredentials(
  ctx: ServiceContext,
  configured: { apiKey?: string; secret?: string },
): Promise<AppCredentials> {
  const apiKey = configured.apiKey ?? (await storedSetting(ctx, 'app_api_key', () => `svc-${randomBytes(8).toString('hex')}`));
  const secret = configured.secret ?? (await storedSetting(ctx, 'app_api_secret', () => randomBytes(32).toString('base64url')));
  return { apiKey, secret };
}

async function storedSetting(ctx: ServiceContext, name: string, make: () => string): Promise<string> {
  await ctx.db.orm.insert(appSettings).values({ name, value: make() }).onConflictDoNothing();
  const [row] = await ctx.db.orm.select().from(appSettings).where(eq(appSettings.name, name));
  return row.value;
}

const invalidSession = () =>
  new ServiceError('unauthorized', 'The session token is missing, invalid or expired. Reload the app from the shop admin, or open a new admin link.');

/**
 * Verifies a platform session token (docs/product.md §6): HS256 with the app secret, `aud` = app key, `exp`/`nbf` against
 * the clock, `dest` = https://{shop} and `iss` = https://{shop}/admin for a valid shop domain. Returns the shop.
 */
export async function verifySessionToken(
  ctx: ServiceContext,
  credentials: AppCredentials,
  token: string,
): Promise<{ shopDomain: string; subject: string }> {
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(token, new TextEncoder().encode(credentials.secret), {
      algorithms: ['HS256'],
      audience: credentials.apiKey,
      currentDate: ctx.clock.now(),
      clockTolerance: 5,
      requiredClaims: ['exp', 'nbf', 'iat', 'sub', 'jti', 'iss', 'dest'],
    }));
  } catch {
    throw invalidSession();
  }
  const dest = typeof payload.dest === 'string' ? payload.dest : '';
  const m = /^https:\/\/([^/]+)$/.exec(dest);
  const shopDomain = m?.[1] ?? '';
  if (!SHOP_DOMAIN.test(shopDomain) || payload.iss !== `https://${shopDomain}/admin`) throw invalidSession();
  return { shopDomain, subject: String(payload.sub) };
}

/** Signs a session token like the platform does; used by `svc admin-link` in standalone mode and by tests. */
export async function signSessionToken(
  credentials: AppCredentials,
  shopDomain: string,
  opts: { now?: Date; ttlSeconds?: number; subject?: string } = {},
): Promise<string> {
  const now = Math.floor((opts.now ?? new Date()).getTime() / 1000);
  return new SignJWT({ dest: `https://${shopDomain}` })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(`https://${shopDomain}/admin`)
    .setAudience(credentials.apiKey)
    .setSubject(opts.subject ?? 'standalone-admin')
    .setJti(randomUUID())
    .setIssuedAt(now)
    .setNotBefore(now)
    .setExpirationTime(now + (opts.ttlSeconds ?? 3600))
    .sign(new TextEncoder().encode(credentials.secret));
}
