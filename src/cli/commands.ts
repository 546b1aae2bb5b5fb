import type { Config, ShopifyConfig } from '../config.js';
import { PAYMENT_BEHAVIOURS } from '../db/schema.js';
import type { Shopify } from '../platform/shopify/index.js';
import { createDiscountCode, seedProducts } from '../services/catalog.js';
import { systemClock, type ServiceContext } from '../services/context.js';
import { parsePaymentBehaviour, setPaymentBehaviour } from '../services/paymentBehaviour.js';
import { exportCustomer } from '../services/privacy.js';
import { seedContracts } from '../services/seedContracts.js';
import { loadAppCredentials, signSessionToken } from '../services/sessionTokens.js';
import { listShops, provisionShop, setShopPlan, shopApiAccess } from '../services/shops.js';
import { CliRefusal, knownShop, UsageError, type Out } from './io.js';
import { describeStatus, platformStatus } from './platformStatus.js';

/**
 * Every `svc` command, once: its name (the words that select it), its usage and summary (the help is written from
 * them), whether it works on the database, and its handler. A handler reaches the database only through its host:
 * the CLI's own connection (run.ts), or a running server's, when the CLI asks the server to run it (control.ts).
 */

/** The options every command may be given (parsed once, strictly: an unknown option is a usage error). */
export const OPTIONS = {
  count: { type: 'string' },
  json: { type: 'boolean' },
  ttl: { type: 'string' },
  payment: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export type Options = { count?: string; json?: boolean; ttl?: string; payment?: string; help?: boolean };

/** What a command works with: the configuration, and the service context (with the platform's, in platform mode). */
export type CliHost = {
  config: Config;
  withContext<T>(fn: (ctx: ServiceContext) => Promise<T>): Promise<T>;
  withPlatform<T>(platform: ShopifyConfig, io: Out, fn: (ctx: ServiceContext, shopify: Shopify) => Promise<T>): Promise<T>;
};

export type CommandCall = { args: string[]; options: Options; io: Out; host: CliHost };

export type CliCommand = {
  /** The words that select it: `shops list`, `migrate`. */
  name: string;
  /** Its arguments as the help shows them (after the name). */
  usage: string;
  /** The help's lines about it. */
  summary: string[];
  /** The help's section. */
  section: 'commands' | 'platform';
  /** False for the commands that never open the database (they run in the CLI's own process, always). */
  database: boolean;
  run(call: CommandCall): Promise<number>;
};

/** Throws the usage error unless the command was given exactly `n` arguments (`optional` more at most). */
function argsOf(args: string[], n: number, usage: string, optional = 0): string[] {
  if (args.length < n || args.length > n + optional || args.slice(0, n).some((a) => !a)) throw new UsageError(usage);
  return args;
}

export const COMMANDS: readonly CliCommand[] = [
  {
    name: 'shops list',
    usage: '',
    summary: ['List shops with their plan and API access'],
    section: 'commands',
    database: true,
    async run({ io, host }) {
      const shops = await host.withContext(async (ctx) => (await listShops({ ctx, input: {} })).map((s) => ({ ...s, access: shopApiAccess(ctx, s.plan) })));
      if (!shops.length) io.out('No shops yet. A shop appears when it first opens the app, or with: shops set-plan <shop> <plan>');
      for (const s of shops) io.out(`${s.domain}\tplan=${s.plan}\tapiAccess=${s.access.allowed ? s.access.reason : 'no (plan_required)'}`);
      return 0;
    },
  },
  {
    name: 'shops set-plan',
    usage: '<shop> <plan>',
    summary: ['Set a shop\'s plan, "basic" or "enterprise" (creates the shop if needed); "enterprise" grants API access'],
    section: 'commands',
    database: true,
    async run({ args, io, host }) {
      const [shop, plan] = args;
      if (!shop || !plan) throw new UsageError('shops set-plan <shop> <plan>');
      const s = await host.withContext((ctx) => setShopPlan({ ctx, input: { domain: shop, plan } }));
      io.out(`${s.domain} is now on plan "${s.plan}"${s.plan === 'enterprise' ? ' (API access)' : ''}.`);
      return 0;
    },
  },
  {
    name: 'contracts seed',
    usage: '<shop> [--count N] [--json] [--payment BEHAVIOUR]',
    summary: [
      'Create N (default 10) realistic ACTIVE contracts; --json prints only them;',
      '--payment: how the test gateway answers their renewals (see below)',
    ],
    section: 'commands',
    database: true,
    async run({ args, options, io, host }) {
      const [shop] = args;
      if (!shop) throw new UsageError('contracts seed <shop> [--count N] [--json]');
      const count = options.count === undefined ? 10 : Number(options.count);
      if (!Number.isInteger(count) || count < 1 || count > 100_000) throw new UsageError('--count must be a whole number from 1 to 100000');
      const payment = options.payment;
      if (payment !== undefined && !(PAYMENT_BEHAVIOURS as readonly string[]).includes(payment)) {
        throw new UsageError(`--payment must be one of ${PAYMENT_BEHAVIOURS.join(', ')}`);
      }
      const created = await host.withContext(async (ctx) => {
        const s = await provisionShop({ ctx, input: { domain: shop } });
        const made = await seedContracts({ ctx, input: { shopId: s.id, count } });
        if (payment) await setPaymentBehaviour(ctx, { shopId: s.id, contractIds: made.map((c) => c.id), behaviour: parsePaymentBehaviour(payment) });
        return made;
      });
      if (options.json) io.out(JSON.stringify(created, null, 2));
      else {
        // The ids, so the next command (a curl of the README) can name one of them.
        const ids = created.map((c) => c.id);
        io.out(`Created ${created.length} contract${created.length === 1 ? '' : 's'} for ${shop}: ${ids.length <= 20 ? ids.join(', ') : `${ids.slice(0, 10).join(', ')}, … ${ids[ids.length - 1]}`}`);
        io.out(`Try: curl -s $SVC/api/v1/subscription-contracts/${ids[0]} -H "Authorization: Bearer $KEY"`);
      }
      return 0;
    },
  },
  {
    name: 'contracts set-payment',
    usage: '<shop> <contract-id> <behaviour>',
    summary: [
      "Set how the test gateway answers a contract's renewals: succeeds (default),",
      'insufficient_funds, card_declined, expired_card, requires_action, out_of_stock',
    ],
    section: 'commands',
    database: true,
    async run({ args, io, host }) {
      const [shop, id, behaviour] = argsOf(args, 3, 'contracts set-payment <shop> <contract-id> <behaviour>');
      if (!(PAYMENT_BEHAVIOURS as readonly string[]).includes(behaviour)) throw new UsageError(`<behaviour> must be one of ${PAYMENT_BEHAVIOURS.join(', ')}`);
      await host.withContext(async (ctx) => {
        const s = await knownShop(ctx, shop);
        await setPaymentBehaviour(ctx, { shopId: s.id, contractIds: [id], behaviour: parsePaymentBehaviour(behaviour) });
      });
      io.out(`Contract ${id} of ${shop}: the test gateway now answers "${behaviour}" to its renewals.`);
      return 0;
    },
  },
  {
    name: 'products seed',
    usage: '<shop>',
    summary: ["Create the shop's small catalog of variants (edits take titles and prices from it)"],
    section: 'commands',
    database: true,
    async run({ args, io, host }) {
      const [shop] = argsOf(args, 1, 'products seed <shop>');
      const variants = await host.withContext(async (ctx) => seedProducts(ctx, (await provisionShop({ ctx, input: { domain: shop } })).id));
      for (const v of variants) io.out(`${v.id}\t${v.price} ${v.currencyCode}\t${v.title}`);
      return 0;
    },
  },
  {
    name: 'discounts create',
    usage: '<shop> <code> <percent>',
    summary: ["Create a discount code of the shop: <percent> off every order's lines"],
    section: 'commands',
    database: true,
    async run({ args, io, host }) {
      const [shop, code, percent] = argsOf(args, 3, 'discounts create <shop> <code> <percent>');
      await host.withContext(async (ctx) => createDiscountCode(ctx, { shopId: (await provisionShop({ ctx, input: { domain: shop } })).id, code, percentage: Number(percent) }));
      io.out(`${shop} has the discount code ${code}: ${Number(percent)} % off every order's lines.`);
      return 0;
    },
  },
  {
    name: 'admin-link',
    usage: '<shop> [--ttl SECONDS]',
    summary: ['Print a link to the Settings → API screen with a fresh session token'],
    section: 'commands',
    database: true,
    async run({ args, options, io, host }) {
      const [shop] = args;
      if (!shop) throw new UsageError('admin-link <shop>');
      const ttl = options.ttl === undefined ? 3600 : Number(options.ttl);
      if (!Number.isInteger(ttl) || ttl < 60 || ttl > 86_400) throw new UsageError('--ttl must be 60 to 86400 seconds');
      const { config } = host;
      const token = await host.withContext(async (ctx) => {
        await provisionShop({ ctx, input: { domain: shop } });
        const credentials = await loadAppCredentials(ctx, { apiKey: config.shopifyApiKey, secret: config.shopifyApiSecret });
        return signSessionToken(credentials, shop, { ttlSeconds: ttl });
      });
      io.out(`${config.publicUrl}/admin#token=${token}`);
      io.err(`Valid for ${Math.round(ttl / 60)} minutes. Anyone with this link can manage ${shop}'s API keys: do not share it.`);
      return 0;
    },
  },
  {
    name: 'migrate',
    usage: '',
    summary: ['Apply pending database migrations'],
    section: 'commands',
    database: true,
    async run({ io, host }) {
      await host.withContext(async () => undefined);
      io.out('Migrations are up to date.');
      return 0;
    },
  },
  {
    name: 'mcp-stdio',
    usage: '',
    summary: ['MCP server over stdio for IDEs (reads SVC_API_KEY and SVC_BASE_URL)'],
    section: 'commands',
    database: false,
    run: () => {
      throw new Error('mcp-stdio runs before the configuration is read (run.ts)');
    },
  },
  {
    name: 'platform status',
    usage: '<shop> [--json]',
    summary: ['Installed or not, plan, token expiry, webhooks, import progress, last reconciliation'],
    section: 'platform',
    database: true,
    async run({ args, options, io, host }) {
      const [shop] = argsOf(args, 1, 'platform status <shop>');
      const status = await host.withPlatform(platformMode(host.config, 'status'), io, (ctx, shopify) => platformStatus(ctx, shopify, shop));
      if (options.json) io.out(JSON.stringify(status, null, 2));
      else for (const line of describeStatus(status, systemClock.now())) io.out(line);
      return 0;
    },
  },
  {
    name: 'platform sync',
    usage: '<shop> [--json]',
    summary: ['Reconcile the shop now: re-read the contracts the platform changed since the last sweep'],
    section: 'platform',
    database: true,
    async run({ args, options, io, host }) {
      const [shop] = argsOf(args, 1, 'platform sync <shop>');
      const report = await host.withPlatform(platformMode(host.config, 'sync'), io, async (ctx, shopify) => {
        const s = await knownShop(ctx, shop);
        return shopify.reconciler.syncShop({ id: s.id, domain: s.domain });
      });
      if (options.json) io.out(JSON.stringify(report, null, 2));
      else io.out(`Reconciled ${report.shop}: checked ${report.checked} contracts updated on the platform since the last sweep; created: ${report.created}, changed: ${report.changed}.`);
      return 0;
    },
  },
  {
    name: 'compliance export',
    usage: '<shop> <customer-id>',
    summary: ['Print (JSON) everything svc holds about one customer of the shop (both modes)'],
    section: 'platform',
    database: true,
    async run({ args, io, host }) {
      const [shop, customer] = argsOf(args, 2, 'compliance export <shop> <customer-id>');
      // The platform's customer gid and its numeric id name the same customer; the mirror keeps the number.
      const customerId = /^gid:\/\/shopify\/Customer\/(\d+)$/.exec(customer)?.[1] ?? customer;
      const exported = await host.withContext(async (ctx) => {
        await knownShop(ctx, shop);
        return exportCustomer(ctx, shop, customerId);
      });
      io.out(JSON.stringify(exported, null, 2));
      return 0;
    },
  },
];

/** The platform's configuration, or the refusal of a platform command in standalone mode. */
function platformMode(config: Config, sub: string): ShopifyConfig {
  if (config.platform.kind === 'shopify') return config.platform;
  throw new CliRefusal(
    `platform ${sub} works in platform mode only: set PLATFORM=shopify with the server's SHOPIFY_API_KEY, SHOPIFY_API_SECRET, ` +
      `TOKEN_ENCRYPTION_KEY and PUBLIC_URL (this environment is standalone: the contracts are svc's own).`,
  );
}

/** The command `positionals` name (its words first), with the arguments that follow them; null when none does. */
export function findCommand(positionals: string[]): { command: CliCommand; args: string[] } | null {
  for (const words of [2, 1]) {
    const name = positionals.slice(0, words).join(' ');
    const command = COMMANDS.find((c) => c.name === name);
    if (command && positionals.length >= words) return { command, args: positionals.slice(words) };
  }
  return null;
}

const COLUMN = 40;
const line = (c: CliCommand) => {
  const head = `  ${c.name}${c.usage ? ` ${c.usage}` : ''}`;
  const pad = ' '.repeat(COLUMN + 2);
  const [first, ...more] = c.summary;
  const lines = head.length < COLUMN + 2 ? [`${head.padEnd(COLUMN + 2)}${first}`] : [head, `${pad}${first}`];
  return [...lines, ...more.map((m) => `${pad}${m}`)].join('\n');
};

/** The help, written from the table. */
export const USAGE = `Usage: npm run svc -- <command>

Commands:
${COMMANDS.filter((c) => c.section === 'commands').map(line).join('\n')}

Platform mode (PLATFORM=shopify, with the server's SHOPIFY_API_KEY, SHOPIFY_API_SECRET, TOKEN_ENCRYPTION_KEY, PUBLIC_URL):
${COMMANDS.filter((c) => c.section === 'platform').map(line).join('\n')}

Configuration comes from the environment (see README): DATABASE_URL selects PostgreSQL, else ./.data (embedded).`;
