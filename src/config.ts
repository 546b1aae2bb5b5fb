import { isIP } from 'node:net';
import { z } from 'zod';
import { GITHUB_SECRET_SCANNING_KEYS_URL } from './domain/secretScanning.js';
import { parseUtcTimestamp } from './domain/time.js';
import { durationMs } from './domain/billing.js';

// 0 lets the OS pick a free port (several instances on one host, tests); the bound address is logged at start.
const port = z.coerce.number().int().min(0).max(65535);
const positiveInt = z.coerce.number().int().min(1);
const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

export const ConfigSchema = z.object({
  PORT: port.default(3000),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATABASE_URL: optionalString.refine((v) => v === undefined || /^postgres(ql)?:\/\//.test(v), {
    message: 'must be a postgres:// or postgresql:// URL (leave it unset for the embedded database)',
  }),
  DATA_DIR: z.string().min(1).default('./.data'),
  REDIS_URL: optionalString.refine((v) => v === undefined || /^rediss?:\/\//.test(v), {
    message: 'must be a redis:// or rediss:// URL',
  }),
  REDIS_KEY_PREFIX: z.string().regex(/^[A-Za-z0-9:_-]{1,64}$/, 'must be 1 to 64 of A-Z a-z 0-9 : _ -').default('svc:ratelimit:'),
  SHOPIFY_API_KEY: optionalString,
  SHOPIFY_API_SECRET: optionalString.refine((v) => v === undefined || v.length >= 16, {
    message: 'must be at least 16 characters',
  }),
  API_ACCESS_FREE_UNTIL: optionalString.refine((v) => v === undefined || parseUtcTimestamp(v) !== null, {
    message: 'must be an ISO 8601 UTC timestamp ending in Z, e.g. 2027-01-01T00:00:00Z',
  }),
  PUBLIC_URL: optionalString.refine((v) => v === undefined || /^https?:\/\/[^\s/]+/.test(v), {
    message: 'must be an http:// or https:// URL',
  }),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  RATE_LIMIT_PER_MINUTE: positiveInt.default(600),
  AUTH_FAILURE_LIMIT_PER_MINUTE: positiveInt.default(60),
  SCHEDULER_INTERVAL_MS: z.coerce.number().int().min(100).max(60_000).default(1000),
  SCHEDULER_ENABLED: z.enum(['true', 'false']).default('true'),
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(0).default(10_000),
  // Hostile clients: a request (body included) must arrive in full within this time; open connections per address.
  REQUEST_BODY_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(10_000),
  MAX_CONNECTIONS_PER_IP: positiveInt.max(1_000_000).default(256),
  // Webhooks may reach private and loopback addresses, and http on loopback (development and tests only: SSRF).
  WEBHOOKS_ALLOW_PRIVATE: z.enum(['true', 'false']).default('false'),
  WEBHOOK_DISPATCH_INTERVAL_MS: z.coerce.number().int().min(50).max(60_000).default(1000),
  // How long a receiver has to answer one delivery (docs/product.md, "Webhooks out": 15 s).
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(500).max(60_000).default(15_000),
  // How long a bulk-job worker's claim keeps other instances off the items it took: far longer than a batch takes,
  // since a killed instance's items wait this long before another instance takes them over.
  BULK_JOB_LEASE_MS: z.coerce.number().int().min(1000).max(3_600_000).default(60_000),
  // Where the contracts live (docs/product.md, "Platform mode"): svc's own table, or the platform's (Shopify).
  PLATFORM: z.enum(['standalone', 'shopify']).default('standalone'),
  // 32 bytes, base64 or hex: the key the platform's access tokens are stored under (AES-256-GCM). Platform mode only.
  TOKEN_ENCRYPTION_KEY: optionalString.refine((v) => v === undefined || decodeKey(v) !== null, {
    message: 'must be 32 bytes, as 64 hex digits or base64 (openssl rand -base64 32)',
  }),
  SHOPIFY_API_VERSION: z.string().regex(/^\d{4}-(01|04|07|10)$/, 'must be a version like 2026-10').default('2026-10'),
  // Where a shop's Admin API and token endpoint are reached; {shop} is replaced by the shop's domain.
  SHOPIFY_SHOP_URL: z
    .string()
    .refine((v) => /^https?:\/\/[^\s]+$/.test(v) && v.includes('{shop}'), { message: 'must be an http(s) URL containing {shop}' })
    .default('https://{shop}'),
  // The Enterprise app subscription's price: an amount and a currency, e.g. "299.00 USD".
  ENTERPRISE_PLAN_PRICE: z.string().regex(/^\d+(\.\d{1,2})? [A-Z]{3}$/, 'must be an amount and a currency, e.g. 299.00 USD').default('299.00 USD'),
  SHOPIFY_BILLING_TEST: z.enum(['true', 'false']).default('false'),
  // How often reconciliation re-reads the contracts updated since its last sweep (docs/product.md, "Platform mode":
  // 15 minutes).
  PLATFORM_SYNC_INTERVAL_MS: z.coerce.number().int().min(1000).max(86_400_000).default(900_000),
  // Renewals: bill ACTIVE contracts on their next billing date (off: nothing is billed by this instance); a cycle
  // later than BILLING_MAX_LATE (an ISO 8601 duration) is recorded as missed instead; attempts in flight per process.
  BILLING: z.enum(['on', 'off']).default('on'),
  BILLING_MAX_LATE: z
    .string()
    .refine((v) => (durationMs(v) ?? 0) >= 60_000, { message: 'must be an ISO 8601 duration of at least a minute, e.g. P3D or PT12H' })
    .default('P3D'),
  BILLING_CONCURRENCY: positiveInt.max(10_000).default(64),
  // Optional bearer token for GET /metrics; without it /metrics is open (keep the port on a private network).
  METRICS_TOKEN: optionalString.refine((v) => v === undefined || v.length >= 16, { message: 'must be at least 16 characters' }),
  // Where GitHub's secret scanning publishes the public keys its reports are signed with (POST /secret-scanning/github).
  GITHUB_SECRET_SCANNING_KEYS_URL: z
    .string()
    .refine((v) => /^https?:\/\/[^\s]+$/.test(v) && URL.canParse(v), { message: 'must be an http(s) URL' })
    .default(GITHUB_SECRET_SCANNING_KEYS_URL),
  // Which proxies' X-Forwarded-For to believe for the client IP (the failed-authentication limit is per IP).
  // The request log (every API and MCP request, 14 days, shown per key in the admin): on, or off to measure without it.
  REQUEST_LOG: z.enum(['on', 'off']).default('on'),
  TRUST_PROXY: optionalString.refine((v) => v === undefined || parseTrustProxy(v) !== null, {
    message: 'must be true, false, a number of proxy hops, or a comma-separated list of proxy IPs/CIDRs',
  }),
});

export type Config = {
  port: number;
  host: string;
  database: { kind: 'pglite'; dataDir: string } | { kind: 'postgres'; url: string };
  redisUrl?: string;
  redisKeyPrefix: string;
  shopifyApiKey?: string;
  shopifyApiSecret?: string;
  freeUntil: Date | null;
  publicUrl: string;
  logLevel: z.infer<typeof ConfigSchema>['LOG_LEVEL'];
  rateLimitPerMinute: number;
  authFailureLimitPerMinute: number;
  schedulerIntervalMs: number;
  schedulerEnabled: boolean;
  shutdownTimeoutMs: number;
  requestBodyTimeoutMs: number;
  maxConnectionsPerIp: number;
  metricsToken?: string;
  trustProxy: TrustProxy;
  webhooksAllowPrivate: boolean;
  webhookDispatchIntervalMs: number;
  webhookTimeoutMs: number;
  bulkJobLeaseMs: number;
  platform: PlatformConfig;
  /** GITHUB_SECRET_SCANNING_KEYS_URL: the public keys GitHub signs its leaked-key reports with. */
  secretScanningKeysUrl: string;
  requestLog: boolean;
  billing: BillingConfig;
};

/** Renewals: whether this instance bills, how late a cycle may be billed, and how many attempts it has in flight. */
export type BillingConfig = { enabled: boolean; maxLateMs: number; concurrency: number };

/** Platform mode's settings (docs/product.md, "Platform mode"); `kind: 'standalone'` has none. */
export type PlatformConfig = { kind: 'standalone' } | ShopifyConfig;
export type ShopifyConfig = {
  kind: 'shopify';
  apiKey: string;
  apiSecret: string;
  apiVersion: string;
  shopUrlTemplate: string;
  tokenKey: Buffer;
  enterprisePrice: { amount: string; currencyCode: string };
  billingTest: boolean;
  syncIntervalMs: number;
};

export class ConfigError extends Error {}

/** Variables whose value is a secret: a refusal names them but never prints them. */
const SECRET_VARIABLES = new Set(['SHOPIFY_API_SECRET', 'METRICS_TOKEN', 'SVC_API_KEY', 'TOKEN_ENCRYPTION_KEY']);

/**
 * A refused value as the error message shows it: secrets not at all, connection URLs without their password, anything
 * else as given. Such messages go to stderr and from there into process supervisors' logs.
 */
function shown(name: string, value: string | undefined): string {
  if (value === undefined || value === '') return '""';
  if (SECRET_VARIABLES.has(name)) return `(${value.length} characters, not shown)`;
  if (name === 'DATABASE_URL' || name === 'REDIS_URL') return JSON.stringify(value.replace(/(\/\/[^/:@]*:)[^@/]*@/, '$1***@'));
  return JSON.stringify(value);
}

/**
 * Reads configuration from the environment, once, at boot. The only place that looks at process.env; a bad value
 * throws a ConfigError naming the variable.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = ConfigSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => {
      const name = String(i.path[0]);
      return `${name}=${shown(name, env[name])} ${i.message}`;
    });
    throw new ConfigError(`Invalid configuration: ${lines.join('; ')}`);
  }
  const e = parsed.data;
  const platform = platformConfig(e);
  const displayHost = e.HOST === '0.0.0.0' || e.HOST === '::' ? 'localhost' : e.HOST;
  return {
    port: e.PORT,
    host: e.HOST,
    database: e.DATABASE_URL ? { kind: 'postgres', url: e.DATABASE_URL } : { kind: 'pglite', dataDir: e.DATA_DIR },
    redisUrl: e.REDIS_URL,
    redisKeyPrefix: e.REDIS_KEY_PREFIX,
    shopifyApiKey: e.SHOPIFY_API_KEY,
    shopifyApiSecret: e.SHOPIFY_API_SECRET,
    freeUntil: e.API_ACCESS_FREE_UNTIL ? parseUtcTimestamp(e.API_ACCESS_FREE_UNTIL) : null,
    publicUrl: (e.PUBLIC_URL ?? `http://${displayHost}:${e.PORT}`).replace(/\/+$/, ''),
    logLevel: e.LOG_LEVEL,
    rateLimitPerMinute: e.RATE_LIMIT_PER_MINUTE,
    authFailureLimitPerMinute: e.AUTH_FAILURE_LIMIT_PER_MINUTE,
    schedulerIntervalMs: e.SCHEDULER_INTERVAL_MS,
    schedulerEnabled: e.SCHEDULER_ENABLED === 'true',
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    requestBodyTimeoutMs: e.REQUEST_BODY_TIMEOUT_MS,
    maxConnectionsPerIp: e.MAX_CONNECTIONS_PER_IP,
    metricsToken: e.METRICS_TOKEN,
    trustProxy: e.TRUST_PROXY ? parseTrustProxy(e.TRUST_PROXY)! : false,
    webhooksAllowPrivate: e.WEBHOOKS_ALLOW_PRIVATE === 'true',
    webhookDispatchIntervalMs: e.WEBHOOK_DISPATCH_INTERVAL_MS,
    webhookTimeoutMs: e.WEBHOOK_TIMEOUT_MS,
    bulkJobLeaseMs: e.BULK_JOB_LEASE_MS,
    platform,
    secretScanningKeysUrl: e.GITHUB_SECRET_SCANNING_KEYS_URL,
    requestLog: e.REQUEST_LOG === 'on',
    billing: { enabled: e.BILLING === 'on', maxLateMs: durationMs(e.BILLING_MAX_LATE)!, concurrency: e.BILLING_CONCURRENCY },
  };
}

/** 32 bytes from 64 hex digits or base64 (either alphabet), or null. */
export function decodeKey(v: string): Buffer | null {
  const b = /^[0-9a-fA-F]{64}$/.test(v) ? Buffer.from(v, 'hex') : /^[A-Za-z0-9+/_-]{43}=?$/.test(v) ? Buffer.from(v, 'base64') : null;
  return b && b.length === 32 ? b : null;
}

function platformConfig(e: z.infer<typeof ConfigSchema>): PlatformConfig {
  if (e.PLATFORM === 'standalone') return { kind: 'standalone' };
  const missing = (['SHOPIFY_API_KEY', 'SHOPIFY_API_SECRET', 'TOKEN_ENCRYPTION_KEY', 'PUBLIC_URL'] as const).filter((n) => !e[n]);
  if (missing.length) throw new ConfigError(`Invalid configuration: PLATFORM=shopify needs ${missing.join(', ')}`);
  // The platform sends webhooks and merchants to PUBLIC_URL: https, except on a loopback address (development, tests).
  const u = new URL(e.PUBLIC_URL!);
  const loopback = u.hostname === 'localhost' || u.hostname === '[::1]' || /^127\./.test(u.hostname);
  if (u.protocol !== 'https:' && !loopback) {
    throw new ConfigError(`Invalid configuration: PUBLIC_URL=${JSON.stringify(e.PUBLIC_URL)} must be https in platform mode (http only on a loopback address)`);
  }
  const [amount, currencyCode] = e.ENTERPRISE_PLAN_PRICE.split(' ');
  return {
    kind: 'shopify',
    apiKey: e.SHOPIFY_API_KEY!,
    apiSecret: e.SHOPIFY_API_SECRET!,
    apiVersion: e.SHOPIFY_API_VERSION,
    shopUrlTemplate: e.SHOPIFY_SHOP_URL.replace(/\/+$/, ''),
    tokenKey: decodeKey(e.TOKEN_ENCRYPTION_KEY!)!,
    enterprisePrice: { amount, currencyCode },
    billingTest: e.SHOPIFY_BILLING_TEST === 'true',
    syncIntervalMs: e.PLATFORM_SYNC_INTERVAL_MS,
  };
}

/** Fastify's trustProxy: off, every proxy, a number of hops, or the proxies' addresses. */
export type TrustProxy = boolean | number | string[];

function parseTrustProxy(v: string): TrustProxy | null {
  if (v === 'true' || v === 'false') return v === 'true';
  if (/^\d{1,2}$/.test(v)) return Number(v);
  const list = v.split(',').map((s) => s.trim()).filter(Boolean);
  const isAddress = (s: string) => {
    const [ip, bits, extra] = s.split('/');
    return extra === undefined && isIP(ip) !== 0 && (bits === undefined || /^\d{1,3}$/.test(bits));
  };
  return list.length && list.every(isAddress) ? list : null;
}
