import { realpathSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { eq } from 'drizzle-orm';
import { openConfiguredDatabase } from '../boot.js';
import { ConfigError, loadConfig, type Config, type ShopifyConfig } from '../config.js';
import { shops as shopsTable } from '../db/schema.js';
import { EmbeddedDatabaseInUse } from '../db/embeddedLock.js';
import { ServiceError } from '../domain/errors.js';
import { shopifyPlatform, type Shopify } from '../platform/shopify/index.js';
import { exportCustomer } from '../services/privacy.js';
import { createServiceContext, systemClock, type ServiceContext } from '../services/context.js';
import { createDiscountCode, seedProducts } from '../services/catalog.js';
import { seedContracts } from '../services/seedContracts.js';
import { parsePaymentBehaviour, setPaymentBehaviour } from '../services/paymentBehaviour.js';
import { PAYMENT_BEHAVIOURS } from '../db/schema.js';
import { loadAppCredentials, signSessionToken } from '../services/sessionTokens.js';
import { listShops, provisionShop, setShopPlan, shopApiAccess } from '../services/shops.js';

const USAGE = `Usage: npm run svc -- <command>

Commands:
  shops list                              List shops with their plan and API access
  shops set-plan <shop> <plan>            Set a shop's plan (creates the shop if needed); "enterprise" grants API access
  contracts seed <shop> [--count N] [--json] [--payment BEHAVIOUR]
                                          Create N (default 10) realistic ACTIVE contracts; --json prints only them;
                                          --payment: how the test gateway answers their renewals (see below)
  contracts set-payment <shop> <contract-id> <behaviour>
                                          Set how the test gateway answers a contract's renewals: succeeds (default),
                                          insufficient_funds, card_declined, expired_card, requires_action, out_of_stock
  products seed <shop>                    Create the shop's small catalog of variants (edits take titles and prices from it)
  discounts create <shop> <code> <percent>
                                          Create a discount code of the shop: <percent> off every order's lines
  admin-link <shop> [--ttl SECONDS]       Print a link to the Settings → API screen with a fresh session token
  migrate                                 Apply pending database migrations
  mcp-stdio                               MCP server over stdio for IDEs (reads SVC_API_KEY and SVC_BASE_URL)

Platform mode (PLATFORM=shopify, with the server's SHOPIFY_API_KEY, SHOPIFY_API_SECRET, TOKEN_ENCRYPTION_KEY, PUBLIC_URL):
  platform status <shop> [--json]         Installed or not, plan, token expiry, webhooks, import progress, last reconciliation
  platform sync <shop> [--json]           Reconcile the shop now: re-read the contracts the platform changed since the last sweep
  compliance export <shop> <customer-id>  Print (JSON) everything svc holds about one customer of the shop (both modes)

Configuration comes from the environment (see README): DATABASE_URL selects PostgreSQL, else ./.data (embedded).`;

type Out = { out: (s: string) => void; err: (s: string) => void };

async function withContext<T>(config: Config, fn: (ctx: ServiceContext) => Promise<T>): Promise<T> {
  const database = await openConfiguredDatabase(config, 'svc CLI');
  try {
    return await fn(createServiceContext({ db: database.db, clock: systemClock, freeUntil: config.freeUntil }));
  } finally {
    await database.close();
  }
}

/**
 * Like withContext, in platform mode: the context's platform is the shop's (the server's wiring, src/main.ts), and the
 * platform's services are built on it. Nothing runs in the background: the command does its one thing and closes.
 */
async function withPlatform<T>(config: Config, platform: ShopifyConfig, io: Out, fn: (ctx: ServiceContext, shopify: Shopify) => Promise<T>): Promise<T> {
  const database = await openConfiguredDatabase(config, 'svc CLI');
  try {
    const built = shopifyPlatform({ db: database.db, clock: systemClock }, platform);
    const ctx = createServiceContext({ db: database.db, clock: systemClock, freeUntil: config.freeUntil, platform: built.port });
    const shopify = built.attach(ctx, { publicUrl: config.publicUrl, log: { info: () => undefined, warn: (_obj, msg) => io.err(`svc: ${msg}`) } });
    return await fn(ctx, shopify);
  } finally {
    await database.close();
  }
}

/** A shop as the platform commands need it, or a refusal naming the domain. */
async function knownShop(ctx: ServiceContext, domain: string) {
  const [shop] = await ctx.db.orm.select().from(shopsTable).where(eq(shopsTable.domain, domain));
  if (!shop) throw new CliRefusal(`unknown shop "${domain}": this database has no such shop (see: shops list)`);
  return shop;
}

/** A refusal found while running a command: exit 1 with its message. */
class CliRefusal extends Error {}

/**
 * Runs one CLI command; returns the exit code: 0 done, 1 failed (a plain message on stderr: bad configuration, the
 * embedded database held by another process, a refused input), 2 bad usage. Exported for tests.
 */
export async function runCli(argv: string[], io: Out, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  try {
    return await runCommand(argv, io, env);
  } catch (err) {
    if ((err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) return usageError(io, (err as Error).message);
    if (err instanceof ConfigError || err instanceof EmbeddedDatabaseInUse || err instanceof ServiceError || err instanceof CliRefusal) {
      io.err(`svc: ${err.message}`);
      return 1;
    }
    throw err;
  }
}

async function runCommand(argv: string[], io: Out, env: NodeJS.ProcessEnv): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: { count: { type: 'string' }, json: { type: 'boolean' }, ttl: { type: 'string' }, payment: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  const [cmd, sub, ...rest] = positionals;
  if (values.help || !cmd) {
    io.out(USAGE);
    return values.help ? 0 : 2;
  }
  if (cmd === 'mcp-stdio') {
    const { runMcpStdio } = await import('../mcp/stdio.js');
    return runMcpStdio(env, io);
  }
  const config = loadConfig(env);

  if (cmd === 'migrate') {
    await withContext(config, async () => undefined);
    io.out('Migrations are up to date.');
    return 0;
  }
  if (cmd === 'shops' && sub === 'list') {
    const shops = await withContext(config, async (ctx) =>
      (await listShops({ ctx, input: {} })).map((s) => ({ ...s, access: shopApiAccess(ctx, s.plan) })),
    );
    if (!shops.length) io.out('No shops yet. A shop appears when it first opens the app, or with: shops set-plan <shop> <plan>');
    for (const s of shops) io.out(`${s.domain}\tplan=${s.plan}\tapiAccess=${s.access.allowed ? s.access.reason : 'no (plan_required)'}`);
    return 0;
  }
  if (cmd === 'shops' && sub === 'set-plan') {
    const [shop, plan] = rest;
    if (!shop || !plan) return usageError(io, 'shops set-plan <shop> <plan>');
    const s = await withContext(config, (ctx) => setShopPlan({ ctx, input: { domain: shop, plan } }));
    io.out(`${s.domain} is now on plan "${s.plan}"${s.plan === 'enterprise' ? ' (API access)' : ''}.`);
    return 0;
  }
  if (cmd === 'contracts' && sub === 'seed') {
    const [shop] = rest;
    if (!shop) return usageError(io, 'contracts seed <shop> [--count N] [--json]');
    const count = values.count === undefined ? 10 : Number(values.count);
    if (!Number.isInteger(count) || count < 1 || count > 100_000) return usageError(io, '--count must be a whole number from 1 to 100000');
    if (values.payment !== undefined && !(PAYMENT_BEHAVIOURS as readonly string[]).includes(values.payment)) {
      return usageError(io, `--payment must be one of ${PAYMENT_BEHAVIOURS.join(', ')}`);
    }
    const created = await withContext(config, async (ctx) => {
      const s = await provisionShop({ ctx, input: { domain: shop } });
      const made = await seedContracts({ ctx, input: { shopId: s.id, count } });
      if (values.payment) await setPaymentBehaviour(ctx, { shopId: s.id, contractIds: made.map((c) => c.id), behaviour: parsePaymentBehaviour(values.payment) });
      return made;
    });
    if (values.json) io.out(JSON.stringify(created, null, 2));
    else io.out(`Created ${created.length} contracts for ${shop} (ids ${created[0].id}…${created[created.length - 1].id}).`);
    return 0;
  }
  if (cmd === 'contracts' && sub === 'set-payment') {
    const [shop, id, behaviour, extra] = rest;
    if (!shop || !id || !behaviour || extra !== undefined) return usageError(io, 'contracts set-payment <shop> <contract-id> <behaviour>');
    if (!(PAYMENT_BEHAVIOURS as readonly string[]).includes(behaviour)) return usageError(io, `<behaviour> must be one of ${PAYMENT_BEHAVIOURS.join(', ')}`);
    await withContext(config, async (ctx) => {
      const s = await knownShop(ctx, shop);
      await setPaymentBehaviour(ctx, { shopId: s.id, contractIds: [id], behaviour: parsePaymentBehaviour(behaviour) });
    });
    io.out(`Contract ${id} of ${shop}: the test gateway now answers "${behaviour}" to its renewals.`);
    return 0;
  }
  if (cmd === 'products' && sub === 'seed') {
    const [shop, extra] = rest;
    if (!shop || extra !== undefined) return usageError(io, 'products seed <shop>');
    const variants = await withContext(config, async (ctx) => seedProducts(ctx, (await provisionShop({ ctx, input: { domain: shop } })).id));
    for (const v of variants) io.out(`${v.id}\t${v.price} ${v.currencyCode}\t${v.title}`);
    return 0;
  }
  if (cmd === 'discounts' && sub === 'create') {
    const [shop, code, percent, extra] = rest;
    if (!shop || !code || !percent || extra !== undefined) return usageError(io, 'discounts create <shop> <code> <percent>');
    await withContext(config, async (ctx) => createDiscountCode(ctx, { shopId: (await provisionShop({ ctx, input: { domain: shop } })).id, code, percentage: Number(percent) }));
    io.out(`${shop} has the discount code ${code}: ${Number(percent)} % off every order's lines.`);
    return 0;
  }
  if (cmd === 'admin-link') {
    const shop = sub;
    if (!shop) return usageError(io, 'admin-link <shop>');
    const ttl = values.ttl === undefined ? 3600 : Number(values.ttl);
    if (!Number.isInteger(ttl) || ttl < 60 || ttl > 86_400) return usageError(io, '--ttl must be 60 to 86400 seconds');
    const token = await withContext(config, async (ctx) => {
      await provisionShop({ ctx, input: { domain: shop } });
      const credentials = await loadAppCredentials(ctx, { apiKey: config.shopifyApiKey, secret: config.shopifyApiSecret });
      return signSessionToken(credentials, shop, { ttlSeconds: ttl });
    });
    io.out(`${config.publicUrl}/admin#token=${token}`);
    io.err(`Valid for ${Math.round(ttl / 60)} minutes. Anyone with this link can manage ${shop}'s API keys: do not share it.`);
    return 0;
  }
  if (cmd === 'platform' && (sub === 'status' || sub === 'sync')) {
    const [shop, extra] = rest;
    if (!shop || extra !== undefined) return usageError(io, `platform ${sub} <shop>`);
    if (config.platform.kind !== 'shopify') {
      io.err(
        `svc: platform ${sub} works in platform mode only: set PLATFORM=shopify with the server's SHOPIFY_API_KEY, SHOPIFY_API_SECRET, ` +
          `TOKEN_ENCRYPTION_KEY and PUBLIC_URL (this environment is standalone: the contracts are svc's own).`,
      );
      return 1;
    }
    if (sub === 'status') {
      const status = await withPlatform(config, config.platform, io, (ctx, shopify) => platformStatus(ctx, shopify, shop));
      if (values.json) io.out(JSON.stringify(status, null, 2));
      else for (const line of describeStatus(status, systemClock.now())) io.out(line);
      return 0;
    }
    const report = await withPlatform(config, config.platform, io, async (ctx, shopify) => {
      const s = await knownShop(ctx, shop);
      return shopify.reconciler.syncShop({ id: s.id, domain: s.domain });
    });
    if (values.json) io.out(JSON.stringify(report, null, 2));
    else io.out(`Reconciled ${report.shop}: checked ${report.checked} contracts updated on the platform since the last sweep; created: ${report.created}, changed: ${report.changed}.`);
    return 0;
  }
  if (cmd === 'compliance' && sub === 'export') {
    const [shop, customer, extra] = rest;
    if (!shop || !customer || extra !== undefined) return usageError(io, 'compliance export <shop> <customer-id>');
    // The platform's customer gid and its numeric id name the same customer; the mirror keeps the number.
    const customerId = /^gid:\/\/shopify\/Customer\/(\d+)$/.exec(customer)?.[1] ?? customer;
    const exported = await withContext(config, async (ctx) => {
      await knownShop(ctx, shop);
      return exportCustomer(ctx, shop, customerId);
    });
    io.out(JSON.stringify(exported, null, 2));
    return 0;
  }
  return usageError(io, `unknown command "${positionals.join(' ')}"`);
}

export type PlatformStatus = {
  shop: string;
  installed: boolean;
  installedAt: string | null;
  uninstalledAt: string | null;
  plan: string;
  accessToken: { stored: boolean; expiresAt: string | null; decrypts: boolean | null };
  refreshToken: { stored: boolean; expiresAt: string | null };
  scopes: string | null;
  webhooksRegisteredAt: string | null;
  import: { status: string; mode: string | null; imported: number; total: number | null; startedAt: string | null; finishedAt: string | null; error: string | null } | null;
  lastSyncAt: string | null;
};

const iso = (d: Date | null | undefined) => (d ? new Date(d).toISOString() : null);

/** The shop's platform state as the database holds it; the tokens themselves are never read out, only whether they open. */
async function platformStatus(ctx: ServiceContext, shopify: Shopify, domain: string): Promise<PlatformStatus> {
  const shop = await knownShop(ctx, domain);
  const row = await shopify.installer.installation(shop.id);
  const progress = await shopify.installer.importProgress(shop.id);
  return {
    shop: shop.domain,
    installed: !!row?.accessToken && !shop.uninstalledAt,
    installedAt: iso(row?.installedAt),
    uninstalledAt: iso(shop.uninstalledAt),
    plan: shop.plan,
    accessToken: {
      stored: !!row?.accessToken,
      expiresAt: iso(row?.accessTokenExpiresAt),
      decrypts: row?.accessToken ? shopify.admin.cipher.open(row.accessToken, shop.id) !== null : null,
    },
    refreshToken: { stored: !!row?.refreshToken, expiresAt: iso(row?.refreshTokenExpiresAt) },
    scopes: row?.scopes ?? null,
    webhooksRegisteredAt: iso(row?.webhooksRegisteredAt),
    import: progress,
    lastSyncAt: iso(row?.lastSyncAt),
  };
}

/** "in 59 min" / "3 h ago": how far a moment is from now, roughly. */
function relative(at: string, now: Date): string {
  const ms = new Date(at).getTime() - now.getTime();
  const abs = Math.abs(ms);
  const span =
    abs < 90_000 ? `${Math.round(abs / 1000)} s` : abs < 90 * 60_000 ? `${Math.round(abs / 60_000)} min` : abs < 36 * 3_600_000 ? `${Math.round(abs / 3_600_000)} h` : `${Math.round(abs / 86_400_000)} days`;
  return ms >= 0 ? `in ${span}` : `${span} ago`;
}

function describeStatus(s: PlatformStatus, now: Date): string[] {
  const when = (at: string | null) => (at ? `${at} (${relative(at, now)})` : '');
  const state = s.uninstalledAt
    ? `uninstalled ${when(s.uninstalledAt)}: keys answer 403 app_not_installed until the shop opens the app again`
    : s.installed
      ? `installed ${when(s.installedAt)}`
      : s.installedAt
        ? 'not installed: svc holds no access token (the shop opens the app to install it again)'
        : 'not installed: the shop has not opened the app since platform mode was turned on';
  const token = !s.accessToken.stored
    ? 'none'
    : `${s.accessToken.expiresAt ? `expires ${when(s.accessToken.expiresAt)}` : 'does not expire'}; ` +
      (s.accessToken.decrypts ? 'opens with this TOKEN_ENCRYPTION_KEY' : 'does NOT open with this TOKEN_ENCRYPTION_KEY (is it the server’s?)');
  const imp = s.import;
  const importLine = !imp
    ? 'not started'
    : [
        `${imp.status}${imp.mode ? ` (${imp.mode})` : ''}, ${imp.imported}${imp.total !== null ? `/${imp.total}` : ''} contracts`,
        imp.startedAt ? `started ${imp.startedAt}` : null,
        imp.finishedAt ? `finished ${imp.finishedAt}` : null,
        imp.error ? `error: ${imp.error}` : null,
      ]
        .filter(Boolean)
        .join(', ');
  const rows: [string, string][] = [
    ['Shop', s.shop],
    ['State', state],
    ['Plan', `${s.plan}${s.plan === 'enterprise' ? ' (API access)' : ''}`],
    ['Access token', token],
    ['Refresh token', !s.refreshToken.stored ? 'none' : s.refreshToken.expiresAt ? `expires ${when(s.refreshToken.expiresAt)}` : 'does not expire'],
    ['Scopes', s.scopes ?? ''],
    ['Webhooks', s.webhooksRegisteredAt ? `registered ${when(s.webhooksRegisteredAt)}` : 'not registered'],
    ['Import', importLine],
    ['Last reconciliation', s.lastSyncAt ? when(s.lastSyncAt) : 'never'],
  ];
  const width = Math.max(...rows.map(([k]) => k.length)) + 1;
  return rows.map(([k, v]) => `${`${k}:`.padEnd(width + 1)}${v}`);
}

function usageError(io: Out, msg: string): number {
  io.err(`svc: ${msg}\n\n${USAGE}`);
  return 2;
}

// The whole path, not the file name: src/main.ts (the server) is also a "main.ts".
const real = (file: string) => {
  try {
    return realpathSync(path.resolve(file));
  } catch {
    return file;
  }
};
const isMain = !!process.argv[1] && real(process.argv[1]) === real(fileURLToPath(import.meta.url));
if (isMain) {
  runCli(process.argv.slice(2), { out: (s) => process.stdout.write(s + '\n'), err: (s) => process.stderr.write(s + '\n') })
    .then((code) => {
      process.exitCode = code;
    })
    .catch((err) => {
      process.stderr.write(`svc: ${(err as Error).message}\n`);
      process.exitCode = 1;
    });
}
