/**
 * `npm run demo:platform`: svc in platform mode (docs/product.md §9) on this machine, against the stand-in of the platform
 * that the tests use (test/support/shopify; it needs the dev dependencies that `npm install` brings).
 *
 * It starts the stand-in on a fixed port, creates a shop with realistic subscription contracts, starts the real
 * server (src/main.ts) with PLATFORM=shopify pointed at the stand-in and an embedded database of its own, and prints
 * the link that opens the app as that shop (which installs it). While it runs, a contract is paused or resumed "on
 * the platform" now and then, as a merchant or another app would. Ctrl-C stops both.
 *
 * Settings (environment): DEMO_STANDIN_PORT (7777), DEMO_SVC_PORT (3000), DEMO_DATA_DIR (./.data-demo, recreated on
 * every run: the stand-in keeps nothing between runs), DEMO_LOG_FILE (./.data-demo.log, the server's JSON log),
 * DEMO_SHOP (demo-shop.myshopify.com), DEMO_CONTRACTS (25), DEMO_CHANGE_EVERY_SECONDS (30; 0 turns the changes off).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { createWriteStream, existsSync, readdirSync, rmSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { startStandIn, type ContractInit, type RunningStandIn } from '../test/support/shopify/index.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function intSetting(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) fail(`${name}=${JSON.stringify(raw)} must be a whole number from ${min} to ${max}`);
  return n;
}

function fail(message: string): never {
  process.stderr.write(`demo: ${message}\n`);
  process.exit(1);
}

const standInPort = intSetting('DEMO_STANDIN_PORT', 7777, 1, 65535);
const svcPort = intSetting('DEMO_SVC_PORT', 3000, 1, 65535);
const contractCount = intSetting('DEMO_CONTRACTS', 25, 1, 250);
const changeEverySeconds = intSetting('DEMO_CHANGE_EVERY_SECONDS', 30, 0, 86_400);
const shopDomain = process.env.DEMO_SHOP?.trim() || 'demo-shop.myshopify.com';
const dataDir = path.resolve(ROOT, process.env.DEMO_DATA_DIR?.trim() || '.data-demo');
const logFile = path.resolve(ROOT, process.env.DEMO_LOG_FILE?.trim() || '.data-demo.log');
if (!/^[a-z0-9][a-z0-9-]*\.myshopify\.com$/.test(shopDomain)) fail(`DEMO_SHOP=${JSON.stringify(shopDomain)} is not a shop domain (name.myshopify.com)`);
if (standInPort === svcPort) fail('DEMO_STANDIN_PORT and DEMO_SVC_PORT must differ');
// The demo's data directory is wiped on every run: never the project, its normal embedded database, or a stranger's.
const holdsProject = path.relative(dataDir, ROOT).split(path.sep)[0] !== '..';
if (holdsProject || dataDir === path.join(ROOT, '.data')) {
  fail(`DEMO_DATA_DIR=${dataDir} would wipe more than the demo's own data; choose a directory of its own`);
}
if (existsSync(dataDir) && readdirSync(dataDir).length && !existsSync(path.join(dataDir, 'PG_VERSION'))) {
  fail(`DEMO_DATA_DIR=${dataDir} exists and is not an embedded database; choose another directory`);
}

const svcUrl = `http://127.0.0.1:${svcPort}`;
const appKey = 'demo-app-key';
const appSecret = randomBytes(24).toString('hex');
const tokenKey = randomBytes(32).toString('base64');

// ---- a shop with realistic contracts ----

const FIRST = ['Ada', 'Grace', 'Alan', 'Katherine', 'Linus', 'Margaret', 'Edsger', 'Barbara', 'Dennis', 'Frances', 'Tim', 'Radia', 'Ken', 'Hedy', 'Donald', 'Sophie'];
const LAST = ['Lovelace', 'Hopper', 'Turing', 'Johnson', 'Torvalds', 'Hamilton', 'Dijkstra', 'Liskov', 'Ritchie', 'Allen', 'Berners-Lee', 'Perlman', 'Thompson', 'Lamarr', 'Knuth', 'Wilson'];
const PRODUCTS: { title: string; variants: string[]; price: string; sku: string }[] = [
  { title: 'House Blend Coffee', variants: ['250 g / Whole bean', '250 g / Ground', '1 kg / Whole bean'], price: '14.50', sku: 'COF-HB' },
  { title: 'Single Origin Ethiopia', variants: ['250 g / Whole bean', '500 g / Whole bean'], price: '18.00', sku: 'COF-ETH' },
  { title: 'Decaf Colombia', variants: ['250 g / Ground'], price: '15.00', sku: 'COF-DEC' },
  { title: 'Sencha Green Tea', variants: ['100 g / Loose leaf'], price: '12.00', sku: 'TEA-SEN' },
  { title: 'Earl Grey', variants: ['100 g / Loose leaf', '40 bags'], price: '9.50', sku: 'TEA-EG' },
  { title: 'Oat Milk Barista', variants: ['6 × 1 l'], price: '16.80', sku: 'OAT-6' },
  { title: 'Paper Filters #4', variants: ['100 pcs'], price: '4.90', sku: 'FIL-4' },
  { title: 'Dark Chocolate 70%', variants: ['4 × 100 g'], price: '11.60', sku: 'CHO-70' },
];
const POLICIES: { interval: 'WEEK' | 'MONTH'; intervalCount: number }[] = [
  { interval: 'MONTH', intervalCount: 1 },
  { interval: 'MONTH', intervalCount: 1 },
  { interval: 'WEEK', intervalCount: 2 },
  { interval: 'WEEK', intervalCount: 4 },
  { interval: 'MONTH', intervalCount: 2 },
];
const pick = <T>(xs: readonly T[]): T => xs[randomInt(xs.length)];

function contractInit(i: number, now: Date): ContractInit {
  const first = FIRST[i % FIRST.length];
  const last = LAST[(i * 7 + 3) % LAST.length];
  const lines = Array.from({ length: 1 + (i % 3 === 0 ? 1 : 0) + (i % 7 === 0 ? 1 : 0) }, (_, n) => {
    const p = PRODUCTS[(i + n * 3) % PRODUCTS.length];
    const variant = p.variants[(i + n) % p.variants.length];
    return { title: p.title, variantTitle: variant, sku: `${p.sku}-${(i + n) % p.variants.length + 1}`, quantity: 1 + ((i + n) % 3 === 2 ? 1 : 0), currentPrice: { amount: p.price, currencyCode: 'USD' } };
  });
  const day = 86_400_000;
  return {
    // Most contracts run; a few are paused or failed, as in a real shop.
    status: i % 9 === 4 ? 'PAUSED' : i === 17 ? 'FAILED' : 'ACTIVE',
    lastPaymentStatus: i === 17 ? 'FAILED' : 'SUCCEEDED',
    billingPolicy: { ...POLICIES[i % POLICIES.length], minCycles: null, maxCycles: null },
    customer: { firstName: first, lastName: last, email: `${first}.${last}`.toLowerCase().replace(/[^a-z.]/g, '') + `${i}@example.com` },
    lines,
    createdAt: new Date(now.getTime() - (20 + i * 9) * day),
    nextBillingDate: new Date(now.getTime() + (1 + ((i * 5) % 27)) * day + 9 * 3_600_000),
  };
}

// ---- the stand-in on a fixed port ----

/**
 * The stand-in listens where the operating system puts it; the demo's fixed address forwards there, and the stand-in
 * is told that address, so everything it hands out (confirmation pages, bulk results) points at the fixed port.
 */
async function forward(port: number, target: number): Promise<{ close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect({ host: '127.0.0.1', port: target });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.once('close', () => sockets.delete(s));
      s.on('error', () => s.destroy());
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(new Error(err.code === 'EADDRINUSE' ? `port ${port} is in use (set DEMO_STANDIN_PORT to another)` : err.message)),
    );
    server.listen({ host: '127.0.0.1', port, exclusive: true }, resolve);
  });
  return {
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}

async function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen({ host: '127.0.0.1', port, exclusive: true }, () => s.close(() => resolve(true)));
  });
}

// ---- svc ----

function startSvc(standIn: RunningStandIn): { child: ChildProcess; listening: Promise<void> } {
  const log = createWriteStream(logFile, { flags: 'w' });
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PLATFORM: 'shopify',
    SHOPIFY_API_KEY: appKey,
    SHOPIFY_API_SECRET: appSecret,
    TOKEN_ENCRYPTION_KEY: tokenKey,
    SHOPIFY_SHOP_URL: standIn.shopUrlTemplate,
    SHOPIFY_BILLING_TEST: 'true',
    PUBLIC_URL: svcUrl,
    PORT: String(svcPort),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    DATABASE_URL: '',
    REDIS_URL: '',
    API_ACCESS_FREE_UNTIL: '',
    LOG_LEVEL: 'info',
    // A lost webhook is caught up within a minute rather than fifteen.
    PLATFORM_SYNC_INTERVAL_MS: '60000',
  };
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let resolveListening: () => void;
  let rejectListening: (err: Error) => void;
  const listening = new Promise<void>((resolve, reject) => {
    resolveListening = resolve;
    rejectListening = reject;
  });
  const lastLines: string[] = [];
  const onLine = (line: string) => {
    log.write(line + '\n');
    lastLines.push(line);
    if (lastLines.length > 20) lastLines.shift();
    let entry: { level?: number; msg?: string } | null = null;
    try {
      entry = JSON.parse(line);
    } catch {
      entry = null;
    }
    if (entry?.msg?.startsWith('svc listening')) resolveListening();
    // Warnings and errors are worth seeing here; the rest is in the log file.
    if (entry && (entry.level ?? 0) >= 40) say(`  [svc] ${entry.msg}`);
    if (!entry && line.startsWith('svc:')) say(`  [svc] ${line}`);
  };
  createInterface({ input: child.stdout! }).on('line', onLine);
  createInterface({ input: child.stderr! }).on('line', onLine);
  child.once('exit', (code, signal) => {
    log.end();
    rejectListening(new Error(`the server exited (${signal ?? `code ${code}`}) before listening:\n${lastLines.join('\n')}`));
  });
  return { child, listening };
}

function say(line: string): void {
  process.stdout.write(line + '\n');
}

const time = () => new Date().toISOString().slice(11, 19);

async function main(): Promise<void> {
  if (!(await portFree(svcPort))) fail(`port ${svcPort} is in use (set DEMO_SVC_PORT to another)`);
  rmSync(dataDir, { recursive: true, force: true });

  const standIn = await startStandIn({ appKey, appSecret });
  let front: { close(): Promise<void> };
  try {
    front = await forward(standInPort, Number(new URL(standIn.url).port));
  } catch (err) {
    await standIn.close();
    fail((err as Error).message);
  }
  standIn.url = `http://127.0.0.1:${standInPort}`;
  // The app's configuration: where the platform sends the compliance webhooks.
  standIn.appWebhooks = { uri: `${svcUrl}/webhooks/shopify` };

  standIn.createShop(shopDomain, { name: 'Demo Coffee Co.', currencyCode: 'USD' });
  const now = new Date();
  const ids: number[] = [];
  for (let i = 0; i < contractCount; i++) ids.push(standIn.createContract(shopDomain, contractInit(i, now), { silent: true }).id);

  const svc = startSvc(standIn);
  let stopping = false;
  let changes: NodeJS.Timeout | undefined;
  let watcher: NodeJS.Timeout | undefined;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    clearInterval(changes);
    clearInterval(watcher);
    say('\nStopping: svc, then the platform stand-in…');
    if (svc.child.exitCode === null && svc.child.signalCode === null) {
      const exited = new Promise((resolve) => svc.child.once('exit', resolve));
      svc.child.kill('SIGTERM');
      const timer = setTimeout(() => svc.child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    }
    await front.close();
    await standIn.close();
    say('Stopped.');
    process.exit(code);
  };
  process.on('SIGINT', () => void stop(0));
  process.on('SIGTERM', () => void stop(0));
  try {
    await svc.listening;
  } catch (err) {
    stopping = true;
    process.stderr.write(`demo: ${(err as Error).message}\n`);
    await front.close();
    await standIn.close();
    process.exit(1);
  }
  svc.child.once('exit', (exitCode, signal) => {
    if (stopping) return;
    say(`\nThe server stopped unexpectedly (${signal ?? `exit code ${exitCode}`}); see ${logFile}.`);
    void stop(1);
  });

  const link = `${svcUrl}/admin#token=${standIn.sessionToken(shopDomain, { ttlSeconds: 3600 })}`;
  const rel = (p: string) => {
    const r = path.relative(process.cwd(), p);
    return r && !r.startsWith('..') ? r : p;
  };
  const lines = [
    '',
    'svc platform-mode demo',
    '',
    `  Platform (stand-in of Shopify)  ${standIn.url}   shop ${shopDomain}, ${contractCount} subscription contracts`,
    `  svc                             ${svcUrl}   PLATFORM=shopify, data in ${rel(dataDir)}, log in ${rel(logFile)}`,
    '',
    '1. Open the app as the shop. The first visit installs it: svc exchanges the session token for an access token,',
    '   registers its webhooks, reads the plan and imports every contract:',
    '',
    `   ${link}`,
    '',
    '   (The link carries a session token valid for 60 minutes; anyone with it can manage the shop\'s API keys.)',
    '',
    `2. Contracts: ${svcUrl}/admin/contracts shows the import's progress, then each contract with its events.`,
    '',
    `3. Upgrade: Settings → API (${svcUrl}/admin/settings/api) → "Upgrade to Enterprise" opens the platform's`,
    '   confirmation page; Approve, and you are back on Settings → API with API access on.',
    '',
    '4. Generate a key on Settings → API, then call the API with it:',
    '',
    `   export SVC_API_KEY=svc_live_…   # the key as shown once`,
    `   curl -s -H "Authorization: Bearer $SVC_API_KEY" "${svcUrl}/api/v1/subscription-contracts?limit=5"`,
    `   curl -s -X POST -H "Authorization: Bearer $SVC_API_KEY" -H "Content-Type: application/json" \\`,
    `        -d '{"action":"pause"}' ${svcUrl}/api/v1/subscription-contracts/${ids[0]}/actions`,
    '',
    '   The pause is made on the platform first (subscriptionContractPause), then shown by svc.',
    '',
    changeEverySeconds > 0
      ? `5. Changes made on the platform: every ${changeEverySeconds} s this demo pauses or resumes a random contract on the stand-in,\n` +
        '   as the merchant or another app would. svc learns it from the webhook; the Contracts page shows it with actor "platform".'
      : '5. Changes on the platform are off (DEMO_CHANGE_EVERY_SECONDS=0).',
    '',
    `API reference: ${svcUrl}/docs   ·   Ctrl-C stops svc and the stand-in.`,
    '',
  ];
  for (const l of lines) say(l);

  // What happens on the platform's side, as it happens.
  let installed = false;
  let enterprise = false;
  watcher = setInterval(() => {
    const shop = standIn.shop(shopDomain);
    if (!installed && shop.webhookSubscriptions.length > 0) {
      installed = true;
      say(`[${time()}] [platform] ${shopDomain} installed the app: svc holds an access token and ${shop.webhookSubscriptions.length} webhook subscriptions.`);
    }
    const active = shop.appSubscriptions.some((s) => s.status === 'ACTIVE' && s.name === 'Enterprise');
    if (active && !enterprise) say(`[${time()}] [platform] The Enterprise app subscription was approved: API access follows (app_subscriptions/update).`);
    enterprise = active;
  }, 500);

  if (changeEverySeconds > 0) {
    changes = setInterval(() => {
      if (!installed) return;
      const candidates = ids.map((id) => standIn.contract(shopDomain, id)).filter((c) => c.status === 'ACTIVE' || c.status === 'PAUSED');
      if (!candidates.length) return;
      const c = pick(candidates);
      const who = [c.customer.firstName, c.customer.lastName].filter(Boolean).join(' ');
      const what = c.lines.map((l) => `${l.title}${l.quantity > 1 ? ` ×${l.quantity}` : ''}`).join(', ');
      if (c.status === 'ACTIVE') standIn.platform.pause(shopDomain, c.id);
      else standIn.platform.activate(shopDomain, c.id);
      say(`[${time()}] [platform] ${c.status === 'PAUSED' ? 'paused' : 'resumed'} contract ${c.id} (${who}: ${what}) on the platform.`);
    }, changeEverySeconds * 1000);
  }
}

main().catch((err: unknown) => fail(err instanceof Error ? err.message : String(err)));
