import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServiceContext, systemClock, type ServiceContext } from '../src/services/context.js';
import { loadAppCredentials, verifySessionToken } from '../src/services/sessionTokens.js';
import { uniqueShop } from './support/app.js';
import { cliHarness } from './support/cliHarness.js';
import { onPostgres } from './support/db.js';

/**
 * The operator's CLI (docs/product.md §8), called as `runCli(argv, io, env)` against the test database: the test schema on
 * PostgreSQL, or an embedded data directory made from the migrated template.
 */

const CONFIGURED = { SHOPIFY_API_KEY: 'cli-app-key', SHOPIFY_API_SECRET: 'cli-app-secret-0123456789abcdef', PUBLIC_URL: 'http://127.0.0.1:4321' };
const h = cliHarness();
const { cli } = h;
const withCliDatabase = h.withDatabase;

describe('svc CLI', () => {
  it('shops set-plan creates the shop; shops list shows it with its access', async () => {
    const shop = uniqueShop('cli');
    const basic = uniqueShop('cli-basic');
    const set = await cli(['shops', 'set-plan', shop, 'enterprise']);
    expect(set).toMatchObject({ code: 0 });
    expect(set.stdout).toContain(shop);
    expect(set.stdout).toContain('enterprise');
    expect((await cli(['shops', 'set-plan', basic, 'Basic'])).code).toBe(0);

    const list = await cli(['shops', 'list']);
    expect(list.code).toBe(0);
    expect(list.out).toContain(`${shop}\tplan=enterprise\tapiAccess=enterprise`);
    const line = list.out.find((l) => l.startsWith(`${basic}\t`));
    expect(line).toMatch(/plan=basic/);
    expect(line).toMatch(/plan_required/);
    expect(list.out.filter((l) => l.startsWith(`${shop}\t`))).toHaveLength(1);
  });

  it('shops set-plan refuses a plan svc does not know, naming the plans, and changes nothing', async () => {
    const shop = uniqueShop('cli-typo');
    expect((await cli(['shops', 'set-plan', shop, 'enterprise'])).code).toBe(0);
    const res = await cli(['shops', 'set-plan', shop, 'enterprize']);
    expect(res.code).toBe(1);
    expect(res.stderr).toBe('svc: "enterprize" is not a plan; the plans are "basic" and "enterprise".');
    const list = await cli(['shops', 'list']);
    expect(list.out).toContain(`${shop}\tplan=enterprise\tapiAccess=enterprise`);
  });

  it('contracts seed prints the ids it created, and a curl that reads the first', async () => {
    const shop = uniqueShop('seed-ids');
    const res = await cli(['contracts', 'seed', shop, '--count', '4']);
    expect(res.code).toBe(0);
    const m = /^Created 4 contracts for (\S+): (\d+), (\d+), (\d+), (\d+)$/.exec(res.out[0]);
    expect(m?.[1]).toBe(shop);
    const printed = m!.slice(2);
    const rows = await withCliDatabase((db) =>
      db.withSession((run) =>
        run<{ id: string }>('SELECT c.id::text AS id FROM subscription_contracts c JOIN shops s ON s.id = c.shop_id WHERE s.domain = $1 ORDER BY c.id', [shop]),
      ),
    );
    expect(printed).toEqual(rows.map((r) => r.id));
    expect(res.out[1]).toBe(`Try: curl -s $SVC/api/v1/subscription-contracts/${printed[0]} -H "Authorization: Bearer $KEY"`);
    // Many: the first ten and the last.
    const many = await cli(['contracts', 'seed', uniqueShop('seed-many'), '--count', '25']);
    expect(many.out[0]).toMatch(/^Created 25 contracts for \S+: (\d+, ){10}… \d+$/);
  });

  it('contracts seed --count 3 --json prints a JSON array of 3 contracts and nothing else on stdout', async () => {
    const shop = uniqueShop('seed');
    const res = await cli(['contracts', 'seed', shop, '--count', '3', '--json']);
    expect(res.code).toBe(0);
    expect(res.out).toHaveLength(1);
    const contracts = JSON.parse(res.stdout);
    expect(Array.isArray(contracts)).toBe(true);
    expect(contracts).toHaveLength(3);
    for (const c of contracts) {
      expect(c).toMatchObject({ id: expect.stringMatching(/^\d+$/), status: 'ACTIVE', customer: { email: expect.stringContaining('@') } });
      expect(c.nextBillingDate).toMatch(/Z$/);
    }
    // The shop now exists (provisioned on plan basic) and holds exactly those contracts.
    const rows = await withCliDatabase((db) =>
      db.withSession((run) =>
        run<{ plan: string; id: string }>('SELECT s.plan, c.id::text AS id FROM subscription_contracts c JOIN shops s ON s.id = c.shop_id WHERE s.domain = $1 ORDER BY c.id', [shop]),
      ),
    );
    expect(rows.map((r) => r.id)).toEqual(contracts.map((c: { id: string }) => c.id));
    expect(rows[0].plan).toBe('basic');
    // Every seeded line is a variant of the shop's catalog (made by the seed), so edits can swap and add them.
    const catalog = await cli(['products', 'seed', shop]);
    expect(catalog.code).toBe(0);
    const variantIds = catalog.out.map((l) => l.split('\t')[0]);
    for (const c of contracts) for (const l of c.lines) expect(variantIds).toContain(l.variantId);
  });

  it('contracts seed gives each contract different variants on its lines', async () => {
    const shop = uniqueShop('seed-distinct');
    expect((await cli(['contracts', 'seed', shop, '--count', '300'])).code).toBe(0);
    const rows = await withCliDatabase((db) =>
      db.withSession((run) =>
        run<{ lines: number; variants: number }>(
          `SELECT json_array_length(c.lines)::int AS lines, (SELECT count(DISTINCT l->>'variantId') FROM json_array_elements(c.lines) l)::int AS variants
             FROM subscription_contracts c JOIN shops s ON s.id = c.shop_id WHERE s.domain = $1`,
          [shop],
        ),
      ),
    );
    expect(rows).toHaveLength(300);
    expect(rows.filter((r) => r.variants !== r.lines), 'contracts holding one variant on two lines').toEqual([]);
    // Still one to three lines, and every length made.
    expect(new Set(rows.map((r) => r.lines))).toEqual(new Set([1, 2, 3]));
  });

  it('discounts create makes a code of the shop, once; a bad percentage is refused', async () => {
    const shop = uniqueShop('codes');
    const made = await cli(['discounts', 'create', shop, 'WELCOME10', '10']);
    expect(made).toMatchObject({ code: 0 });
    expect(made.stdout).toContain('WELCOME10');
    expect((await cli(['discounts', 'create', shop, 'welcome10', '15'])).stderr).toMatch(/already has a discount code/);
    expect((await cli(['discounts', 'create', shop, 'HALF', '0'])).code).toBe(1);
    expect((await cli(['discounts', 'create', shop, 'HALF'])).code).toBe(2);
    const rows = await withCliDatabase((db) =>
      db.withSession((run) => run<{ code: string; percentage: string }>('SELECT d.code, d.percentage::text FROM discount_codes d JOIN shops s ON s.id = d.shop_id WHERE s.domain = $1', [shop])),
    );
    expect(rows).toEqual([{ code: 'WELCOME10', percentage: '10.00' }]);
  });

  it('admin-link prints a URL whose fragment carries a session token that verifies', async () => {
    const shop = uniqueShop('link');
    const res = await cli(['admin-link', shop], CONFIGURED);
    expect(res.code).toBe(0);
    expect(res.out).toHaveLength(1);
    const url = new URL(res.stdout);
    expect(url.origin).toBe('http://127.0.0.1:4321');
    expect(url.pathname).toBe('/admin');
    expect(url.search).toBe('');
    const token = new URLSearchParams(url.hash.slice(1)).get('token')!;
    expect(token.split('.')).toHaveLength(3);
    const ctx = { clock: systemClock, freeUntil: null } as unknown as ServiceContext;
    const verified = await verifySessionToken(ctx, { apiKey: CONFIGURED.SHOPIFY_API_KEY, secret: CONFIGURED.SHOPIFY_API_SECRET }, token);
    expect(verified.shopDomain).toBe(shop);
    await expect(verifySessionToken(ctx, { apiKey: CONFIGURED.SHOPIFY_API_KEY, secret: 'another-secret-0123456789abcdef' }, token)).rejects.toMatchObject({ code: 'unauthorized' });
    expect(res.stderr).toMatch(/do not share/);
  });

  it('admin-link without a configured secret signs with the one the service keeps in its database', async () => {
    const shop = uniqueShop('stored');
    const res = await cli(['admin-link', shop, '--ttl', '600']);
    expect(res.code).toBe(0);
    const token = new URLSearchParams(new URL(res.stdout).hash.slice(1)).get('token')!;
    await withCliDatabase(async (db) => {
      const ctx: ServiceContext = createServiceContext({ db, clock: systemClock, freeUntil: null });
      const credentials = await loadAppCredentials(ctx, {});
      expect((await verifySessionToken(ctx, credentials, token)).shopDomain).toBe(shop);
      const [{ exp, iat }] = [JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString())];
      expect(exp - iat).toBe(600);
    });
  });

  it('migrate succeeds on an up-to-date database', async () => {
    const res = await cli(['migrate']);
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/up to date/i);
  });

  it.each([
    [[]],
    [['bogus']],
    [['shops']],
    [['shops', 'set-plan', 'only-shop.myshopify.com']],
    [['contracts', 'seed']],
    [['contracts', 'seed', 'x.myshopify.com', '--count', 'abc']],
    [['contracts', 'seed', 'x.myshopify.com', '--count', '0']],
    [['admin-link']],
    [['admin-link', 'x.myshopify.com', '--ttl', '5']],
    [['shops', 'list', '--nope']],
  ])('bad usage %j → exit 2 with the usage text', async (argv) => {
    const res = await cli(argv);
    expect(res.code).toBe(2);
    expect(res.stdout + res.stderr).toContain('Usage:');
  });

  it('a refused input or a bad configuration → exit 1 with one plain message', async () => {
    const domain = await cli(['shops', 'set-plan', 'not a shop', 'enterprise']);
    expect(domain.code).toBe(1);
    expect(domain.stderr).toMatch(/^svc: .*not a shop domain/);
    const config = await cli(['shops', 'list'], { PORT: 'abc' });
    expect(config.code).toBe(1);
    expect(config.stderr).toMatch(/^svc: .*PORT/);
  });
});

describe('the embedded database belongs to one process', () => {
  let holder: ChildProcess;
  beforeAll(async () => {
    holder = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    await new Promise((resolve) => holder.once('spawn', resolve));
  });
  afterAll(() => {
    holder.kill();
  });

  it('a command while another live process holds the lock exits non-zero and names the holder', async () => {
    const dir = path.join(h.tmp, 'held');
    mkdirSync(dir, { recursive: true });
    const lock = { pid: holder.pid, role: 'svc server', since: '2026-11-22T10:00:00.000Z' };
    writeFileSync(path.join(dir, 'svc.lock'), JSON.stringify(lock));
    for (const argv of [['shops', 'list'], ['migrate'], ['contracts', 'seed', 'x.myshopify.com']]) {
      const res = await cli(argv, { DATA_DIR: dir, DATABASE_URL: '' });
      expect(res.code).not.toBe(0);
      expect(res.stderr).toContain('svc server');
      expect(res.stderr).toContain(`pid ${holder.pid}`);
      expect(res.stderr).toMatch(/stop that process|DATABASE_URL/);
    }
    // The holder's lock is left as it was.
    expect(JSON.parse(readFileSync(path.join(dir, 'svc.lock'), 'utf8'))).toEqual(lock);
  });

  it.skipIf(onPostgres())('a lock left by a dead process is taken over', async () => {
    const dead = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
    await new Promise((resolve) => dead.once('exit', resolve));
    writeFileSync(path.join(h.dataDir, 'svc.lock'), JSON.stringify({ pid: dead.pid, role: 'svc server', since: 'earlier' }));
    const res = await cli(['shops', 'list']);
    expect(res.code).toBe(0);
    expect(() => readFileSync(path.join(h.dataDir, 'svc.lock'))).toThrow();
  });
});
