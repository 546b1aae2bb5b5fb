import { realpathSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { openConfiguredDatabase } from '../boot.js';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { EmbeddedDatabaseInUse } from '../db/embeddedLock.js';
import { ServiceError } from '../domain/errors.js';
import { createServiceContext, systemClock, type ServiceContext } from '../services/context.js';
import { seedContracts } from '../services/seedContracts.js';
import { loadAppCredentials, signSessionToken } from '../services/sessionTokens.js';
import { listShops, provisionShop, setShopPlan, shopApiAccess } from '../services/shops.js';

const USAGE = `Usage: npm run svc -- <command>

Commands:
  shops list                              List shops with their plan and API access
  shops set-plan <shop> <plan>            Set a shop's plan (creates the shop if needed); "enterprise" grants API access
  contracts seed <shop> [--count N] [--json]
                                          Create N (default 10) realistic ACTIVE contracts; --json prints only them
  admin-link <shop> [--ttl SECONDS]       Print a link to the Settings → API screen with a fresh session token
  migrate                                 Apply pending database migrations
  mcp-stdio                               MCP server over stdio for IDEs (reads SVC_API_KEY and SVC_BASE_URL)

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
 * Runs one CLI command; returns the exit code: 0 done, 1 failed (a plain message on stderr: bad configuration, the
 * embedded database held by another process, a refused input), 2 bad usage. Exported for tests.
 */
export async function runCli(argv: string[], io: Out, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  try {
    return await runCommand(argv, io, env);
  } catch (err) {
    if ((err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) return usageError(io, (err as Error).message);
    if (err instanceof ConfigError || err instanceof EmbeddedDatabaseInUse || err instanceof ServiceError) {
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
    options: { count: { type: 'string' }, json: { type: 'boolean' }, ttl: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
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
    const created = await withContext(config, async (ctx) => {
      const s = await provisionShop({ ctx, input: { domain: shop } });
      return seedContracts({ ctx, input: { shopId: s.id, count } });
    });
    if (values.json) io.out(JSON.stringify(created, null, 2));
    else io.out(`Created ${created.length} contracts for ${shop} (ids ${created[0].id}…${created[created.length - 1].id}).`);
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
  return usageError(io, `unknown command "${positionals.join(' ')}"`);
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
