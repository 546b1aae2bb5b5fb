import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runCli } from '../src/cli/main.js';
import { openDatabase, type Database } from '../src/db/client.js';
import { setShopPlan } from '../src/services/shops.js';
import { bearer, TEST_CREDENTIALS } from './support/app.js';
import { createTestDatabase, onPostgres, type TestDatabase } from './support/db.js';
import { startPlatform, type InstalledShop, type PlatformHarness } from './support/platform.js';

/**
 * The operator's platform commands (docs/product.md §9): `platform status`, `platform sync`, `compliance export`, called as
 * `runCli(argv, io, env)` on the database a platform-mode svc installed shops into, against the same stand-in.
 * On PostgreSQL the server keeps running while the CLI works; the embedded database belongs to one process, so there
 * the server is stopped first (the stand-in stays up: `platform sync` talks to it).
 */

let tmp: string;
let dataDir: string;
let database: TestDatabase;
let h: PlatformHarness;
let shop: InstalledShop;
let gone: InstalledShop;
let serverRunning = true;
/** The database settings the CLI gets: the same database as the server's. */
let base: NodeJS.ProcessEnv;
/** The server's platform settings, as an operator would copy them from its environment. */
let platformEnv: NodeJS.ProcessEnv;

/** A TestDatabase over an embedded data directory (copied from the migrated template), so the CLI can open it too. */
async function embeddedDatabase(dir: string): Promise<TestDatabase> {
  const pg = await PGlite.create({ dataDir: dir, loadDataDir: new Blob([readFileSync(inject('pgliteTemplate'))]) });
  const db = await openDatabase({ kind: 'pglite', pglite: pg });
  return { db, connectAgain: async () => db, observed: async () => db, url: null, schema: null, drop: () => db.close() };
}

beforeAll(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'svc-cli-platform-'));
  dataDir = path.join(tmp, 'data');
  database = onPostgres() ? await createTestDatabase() : await embeddedDatabase(dataDir);
  base = onPostgres() ? { DATABASE_URL: database.url! } : { DATA_DIR: dataDir };
  // A loaded machine answers slower than the default test timeout allows; these tests are not about timeouts.
  h = await startPlatform({ database, timeoutMs: 10_000 });
  shop = await installed(await h.install({ contracts: 3 }));
  // A second shop that installed, then uninstalled on the platform (app/uninstalled processed by svc).
  gone = await installed(await h.install({ contracts: 1 }));
  h.standIn.uninstall(gone.domain);
  await h.settle();
  platformEnv = {
    PLATFORM: 'shopify',
    SHOPIFY_API_KEY: TEST_CREDENTIALS.apiKey,
    SHOPIFY_API_SECRET: TEST_CREDENTIALS.secret,
    TOKEN_ENCRYPTION_KEY: h.t.shopify!.admin.settings.tokenKey.toString('base64'),
    PUBLIC_URL: h.base,
    SHOPIFY_SHOP_URL: h.standIn.shopUrlTemplate,
  };
  if (!onPostgres()) {
    await h.t.close();
    await database.db.close();
    serverRunning = false;
  }
});

/**
 * The install's steps after the token exchange run in the background, and a failed step is left to the next
 * reconciliation round: run them again until they are done, so every test starts from a finished install.
 */
async function installed(s: InstalledShop): Promise<InstalledShop> {
  const shopify = h.t.shopify!;
  for (let attempt = 0; attempt < 5; attempt++) {
    const row = await shopify.installer.installation(s.shopId);
    if (row?.webhooksRegisteredAt && row.importStatus === 'completed') {
      // A repeated install step reads the plan from the platform again: the harness's Enterprise is set again.
      if (attempt > 0) await setShopPlan({ ctx: h.t.ctx, input: { domain: s.domain, plan: 'enterprise' } });
      return s;
    }
    await shopify.installer.continueInBackground({ id: s.shopId, domain: s.domain });
  }
  const warnings = h.t.logs.filter((l) => l.includes('"level":40'));
  throw new Error(`the install of ${s.domain} did not finish:\n${warnings.join('\n')}`);
}

afterAll(async () => {
  if (serverRunning) await h?.t.close();
  await h?.standIn.close();
  await database?.drop();
  rmSync(tmp, { recursive: true, force: true });
});

async function cli(argv: string[], env: NodeJS.ProcessEnv = platformEnv) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { out: (s) => out.push(s), err: (s) => err.push(s) }, { ...base, ...env });
  return { code, out, err, stdout: out.join('\n'), stderr: err.join('\n') };
}

/** Reads the database the CLI wrote: the server's pool on PostgreSQL, the data directory reopened when embedded. */
async function query<T>(sql: string, params: unknown[]): Promise<T[]> {
  if (serverRunning) return database.db.withSession((run) => run<T>(sql, params));
  const db: Database = await openDatabase({ kind: 'pglite', dataDir });
  try {
    return await db.withSession((run) => run<T>(sql, params));
  } finally {
    await db.close();
  }
}
const mirrorStatus = async (id: string) =>
  (await query<{ status: string }>(`SELECT status FROM subscription_contracts WHERE id = $1`, [id]))[0]?.status;

describe('svc platform status', () => {
  it('shows an installed shop: plan, token expiry (never the token), webhooks, the completed import, no reconciliation yet', async () => {
    const res = await cli(['platform', 'status', shop.domain]);
    expect(res.code).toBe(0);
    expect(res.stderr).toBe('');
    const line = (label: string) => res.out.find((l) => l.startsWith(`${label}:`)) ?? '';
    expect(line('Shop')).toContain(shop.domain);
    expect(line('State')).toMatch(/^State:\s+installed \d{4}-\d\d-\d\dT/);
    expect(line('Plan')).toMatch(/enterprise \(API access\)/);
    expect(line('Access token')).toMatch(/expires \d{4}-.*\(in \d+ min\); opens with this TOKEN_ENCRYPTION_KEY/);
    expect(line('Refresh token')).toMatch(/expires \d{4}-/);
    expect(line('Webhooks')).toMatch(/registered \d{4}-/);
    expect(line('Import')).toMatch(/completed \(paged\), 3\/3 contracts, started \d{4}-.*, finished \d{4}-/);
    expect(line('Last reconciliation')).toMatch(/never$/);

    // The tokens appear nowhere: neither the platform's live ones nor what the database stores.
    const live = h.standIn.tokens.liveAccessTokens(shop.domain);
    expect(live.length).toBeGreaterThan(0);
    const [stored] = await query<{ access_token: string; refresh_token: string }>(
      `SELECT access_token, refresh_token FROM platform_installations WHERE shop_id = $1`,
      [shop.shopId],
    );
    for (const secret of [...live, stored.access_token, stored.refresh_token]) {
      expect(res.stdout).not.toContain(secret);
      expect(res.stdout).not.toContain(secret.slice(0, 12));
    }
  });

  it('--json gives the same facts as one object', async () => {
    const res = await cli(['platform', 'status', shop.domain, '--json']);
    expect(res.code).toBe(0);
    const status = JSON.parse(res.stdout);
    expect(status).toMatchObject({
      shop: shop.domain,
      installed: true,
      uninstalledAt: null,
      plan: 'enterprise',
      accessToken: { stored: true, expiresAt: expect.stringMatching(/Z$/), decrypts: true },
      webhooksRegisteredAt: expect.stringMatching(/Z$/),
      import: { status: 'completed', mode: 'paged', imported: 3, total: 3, error: null },
      lastSyncAt: null,
    });
    expect(Object.keys(status.accessToken).sort()).toEqual(['decrypts', 'expiresAt', 'stored']);
  });

  it('an uninstalled shop is shown as such, and sync refuses it with the platform message', async () => {
    const status = await cli(['platform', 'status', gone.domain]);
    expect(status.code).toBe(0);
    expect(status.out.find((l) => l.startsWith('State:'))).toMatch(/uninstalled \d{4}-.*app_not_installed/);
    expect(status.out.find((l) => l.startsWith('Access token:'))).toMatch(/none$/);
    const sync = await cli(['platform', 'sync', gone.domain]);
    expect(sync.code).toBe(1);
    expect(sync.err).toHaveLength(1);
    expect(sync.stderr).toMatch(/^svc: The shop has not installed the app, or has uninstalled it/);
  });

  it('a key that is not the server’s is called out', async () => {
    const res = await cli(['platform', 'status', shop.domain], { ...platformEnv, TOKEN_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64') });
    expect(res.code).toBe(0);
    expect(res.out.find((l) => l.startsWith('Access token:'))).toMatch(/does NOT open with this TOKEN_ENCRYPTION_KEY/);
  });
});

describe('svc platform sync', () => {
  it('after a pause on the platform whose webhook was lost: changed 1, and the mirror shows PAUSED', async () => {
    const id = shop.contractIds[0];
    h.standIn.webhooks.fault({ mode: 'drop' }, { shop: shop.domain, count: Infinity });
    h.standIn.platform.pause(shop.domain, id);
    await h.standIn.webhooks.flush();
    h.standIn.webhooks.clearFaults();
    expect(await mirrorStatus(id)).toBe('ACTIVE');

    const res = await cli(['platform', 'sync', shop.domain]);
    expect(res.code).toBe(0);
    expect(res.stderr).toBe('');
    expect(res.stdout).toMatch(new RegExp(`^Reconciled ${shop.domain.replace(/\./g, '\\.')}: checked 3 contracts .*created: 0, changed: 1\\.$`));
    expect(await mirrorStatus(id)).toBe('PAUSED');
    const [event] = await query<{ type: string; actor_type: string }>(
      `SELECT type, actor_type FROM contract_events WHERE contract_id = $1 ORDER BY id DESC LIMIT 1`,
      [id],
    );
    expect(event).toEqual({ type: 'contract.paused', actor_type: 'platform' });
    if (serverRunning) {
      // PostgreSQL: the running server serves what the CLI reconciled.
      const api = await h.t.inject({ method: 'GET', url: `/api/v1/subscription-contracts/${id}`, headers: bearer(shop.key) });
      expect(api.json().contract.status).toBe('PAUSED');
    }

    // Nothing more to apply; the status now shows the reconciliation.
    const again = await cli(['platform', 'sync', shop.domain, '--json']);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toEqual({ shop: shop.domain, checked: expect.any(Number), created: 0, changed: 0 });
    const status = await cli(['platform', 'status', shop.domain]);
    expect(status.out.find((l) => l.startsWith('Last reconciliation:'))).toMatch(/\d{4}-\d\d-\d\dT.*Z \(\d+ s ago\)$/);
  });

  it('a contract made on the platform while svc heard nothing is created by sync', async () => {
    h.standIn.webhooks.fault({ mode: 'drop' }, { shop: shop.domain, count: Infinity });
    const c = h.standIn.createContract(shop.domain, { lines: [{ title: 'Tea sampler', quantity: 2 }] });
    await h.standIn.webhooks.flush();
    h.standIn.webhooks.clearFaults();
    const res = await cli(['platform', 'sync', shop.domain, '--json']);
    expect(res.code).toBe(0);
    expect(JSON.parse(res.stdout)).toMatchObject({ created: 1, changed: 0 });
    expect(await mirrorStatus(String(c.id))).toBe('ACTIVE');
  });

  it('an unavailable platform: exit 1 with one plain line, and nothing recorded as reconciled', async () => {
    const before = await query<{ last_sync_at: Date }>(`SELECT last_sync_at FROM platform_installations WHERE shop_id = $1`, [shop.shopId]);
    h.standIn.faults.add({ kind: 'error', status: 503 }, { shop: shop.domain, count: Infinity });
    try {
      const res = await cli(['platform', 'sync', shop.domain]);
      expect(res.code).toBe(1);
      expect(res.out).toEqual([]);
      expect(res.err).toHaveLength(1);
      expect(res.stderr).toMatch(/^svc: The platform could not be reached or did not answer \(.*\)\. Nothing was changed; try again shortly\.$/);
    } finally {
      h.standIn.faults.clear();
    }
    const after = await query<{ last_sync_at: Date }>(`SELECT last_sync_at FROM platform_installations WHERE shop_id = $1`, [shop.shopId]);
    expect(after).toEqual(before);
  });
});

describe('svc compliance export', () => {
  it('prints the customer’s contracts with their events, in platform mode and standalone alike', async () => {
    const id = shop.contractIds[0];
    const customer = h.standIn.contract(shop.domain, id).customer;
    const res = await cli(['compliance', 'export', shop.domain, String(customer.id)]);
    expect(res.code).toBe(0);
    expect(res.stdout).toContain('\n  "shop"');
    const exported = JSON.parse(res.stdout);
    expect(exported).toMatchObject({ shop: shop.domain, customerId: String(customer.id), webhookDeliveriesCarryingTheCustomer: 0, complianceRequests: [] });
    expect(exported.contracts).toHaveLength(1);
    expect(exported.contracts[0]).toMatchObject({ id, status: 'PAUSED', customer: { id: String(customer.id), email: customer.email } });
    expect(exported.contracts[0].events).toEqual([
      expect.objectContaining({ type: 'contract.paused', actor: { type: 'platform' }, from: 'ACTIVE', to: 'PAUSED' }),
    ]);

    // The same from a standalone environment (no platform settings), and with the platform's customer gid.
    const standalone = await cli(['compliance', 'export', shop.domain, `gid://shopify/Customer/${customer.id}`], {});
    expect(standalone.code).toBe(0);
    expect(JSON.parse(standalone.stdout)).toEqual(exported);
  });

  it('a customer svc knows nothing about exports empty; an unknown shop is refused', async () => {
    const none = await cli(['compliance', 'export', shop.domain, '999999999']);
    expect(none.code).toBe(0);
    expect(JSON.parse(none.stdout)).toMatchObject({ contracts: [], webhookDeliveriesCarryingTheCustomer: 0, complianceRequests: [] });
    const unknown = await cli(['compliance', 'export', 'nobody-here.myshopify.com', '1']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^svc: unknown shop "nobody-here\.myshopify\.com"/);
  });
});

describe('refusals', () => {
  it('an unknown shop: exit 1 naming it', async () => {
    for (const sub of ['status', 'sync']) {
      const res = await cli(['platform', sub, 'nobody-here.myshopify.com']);
      expect(res.code).toBe(1);
      expect(res.err).toHaveLength(1);
      expect(res.stderr).toMatch(/^svc: unknown shop "nobody-here\.myshopify\.com"/);
    }
  });

  it('not in platform mode: exit 1 saying what to set', async () => {
    for (const sub of ['status', 'sync']) {
      const res = await cli(['platform', sub, shop.domain], {});
      expect(res.code).toBe(1);
      expect(res.stderr).toMatch(/^svc: platform .* works in platform mode only: set PLATFORM=shopify/);
      expect(res.stderr).toContain('TOKEN_ENCRYPTION_KEY');
    }
    const partial = await cli(['platform', 'status', shop.domain], { ...platformEnv, TOKEN_ENCRYPTION_KEY: '' });
    expect(partial.code).toBe(1);
    expect(partial.stderr).toMatch(/^svc: .*PLATFORM=shopify needs TOKEN_ENCRYPTION_KEY/);
  });

  it.each([[['platform']], [['platform', 'status']], [['platform', 'sync']], [['platform', 'bogus', 'x.myshopify.com']], [['compliance', 'export', 'x.myshopify.com']], [['compliance']]])(
    'bad usage %j → exit 2 with the usage text',
    async (argv) => {
      const res = await cli(argv);
      expect(res.code).toBe(2);
      expect(res.stdout + res.stderr).toContain('Usage:');
    },
  );

  it('the usage text lists the platform and compliance commands', async () => {
    const res = await cli(['--help']);
    expect(res.code).toBe(0);
    for (const c of ['platform status <shop>', 'platform sync <shop>', 'compliance export <shop> <customer-id>']) expect(res.stdout).toContain(c);
  });
});
