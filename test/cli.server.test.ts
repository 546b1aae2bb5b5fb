import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runCli } from '../src/cli/main.js';
import { controlSocketPath } from '../src/cli/control.js';
import { uniqueShop } from './support/app.js';
import { createTestDatabase, onPostgres, type TestDatabase } from './support/db.js';
import { call, PROCESS_CREDENTIALS, startServer, stopAllServers, type ServerProcess } from './support/processes.js';

/**
 * The CLI while a server runs (docs/cli.md). On the embedded database, which serves one process, a command runs
 * through the server that holds it (its control socket in the data directory), so nobody stops the server between
 * steps; with no server, the command opens the database itself, as always. On PostgreSQL the CLI opens the database
 * beside the server.
 */

const tmp = mkdtempSync(path.join(os.tmpdir(), 'svc-cli-srv-'));
const dataDir = path.join(tmp, 'data');
let pg: TestDatabase | null = null;
/** What the CLI and the server are pointed at. */
let where: { databaseUrl: string; env: Record<string, string> };

beforeAll(async () => {
  if (onPostgres()) {
    pg = await createTestDatabase();
    where = { databaseUrl: pg.url!, env: {} };
  } else {
    // A copy of the migrated template: creating an embedded database from nothing costs a minute on a busy machine.
    const made = await PGlite.create({ dataDir, loadDataDir: new Blob([readFileSync(inject('pgliteTemplate'))]) });
    await made.close();
    where = { databaseUrl: '', env: { DATA_DIR: dataDir } };
  }
}, 120_000);
afterAll(async () => {
  await stopAllServers();
  await pg?.drop();
  rmSync(tmp, { recursive: true, force: true });
});

async function cli(argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const env = { DATABASE_URL: where.databaseUrl, ...where.env, SHOPIFY_API_KEY: PROCESS_CREDENTIALS.apiKey, SHOPIFY_API_SECRET: PROCESS_CREDENTIALS.secret };
  const code = await runCli(argv, { out: (s) => out.push(s), err: (s) => err.push(s) }, env);
  return { code, out, stdout: out.join('\n'), stderr: err.join('\n') };
}

/** The newcomer's steps, with the server running: a shop on Enterprise, contracts, a link to the admin. */
async function newcomerSteps(server: ServerProcess) {
  const shop = uniqueShop('cli-srv');
  const plan = await cli(['shops', 'set-plan', shop, 'enterprise']);
  expect(plan.code, plan.stderr).toBe(0);
  expect(plan.stdout).toContain('(API access)');
  const seeded = await cli(['contracts', 'seed', shop, '--count', '3', '--json']);
  expect(seeded.code, seeded.stderr).toBe(0);
  const contracts = JSON.parse(seeded.stdout) as { id: string }[];
  expect(contracts).toHaveLength(3);
  const link = await cli(['admin-link', shop]);
  expect(link.code, link.stderr).toBe(0);
  const token = /#token=(\S+)$/.exec(link.stdout)![1];
  // The server sees all of it: the link's session token is the server's own, and the shop and its contracts are
  // there for a key made with it.
  const created = await call(server.url, '/admin/api/keys', { auth: token, body: { name: 'from the CLI' } });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const key = (created.body as { secret: string }).secret;
  const read = await call(server.url, `/api/v1/subscription-contracts/${contracts[1].id}`, { auth: key });
  expect(read.status).toBe(200);
  expect((read.body as { contract: { id: string } }).contract.id).toBe(contracts[1].id);
  const listed = await cli(['shops', 'list']);
  expect(listed.code).toBe(0);
  expect(listed.stdout).toContain(`${shop}\tplan=enterprise`);
  return { shop, contracts };
}

describe.skipIf(onPostgres())('the CLI on the embedded database while a server holds it', { timeout: 600_000 }, () => {
  let server: ServerProcess;
  let shop: string;

  it('runs every step through the server: nothing to stop and start between them', async () => {
    server = await startServer({ databaseUrl: '', env: where.env });
    expect(server.logs().map((l) => l.msg)).toContain('CLI commands on this data directory run through this server');
    ({ shop } = await newcomerSteps(server));
    const products = await cli(['products', 'seed', shop]);
    expect(products.code, products.stderr).toBe(0);
    expect(products.out.length).toBeGreaterThan(0);
    const migrate = await cli(['migrate']);
    expect(migrate).toMatchObject({ code: 0, stdout: 'Migrations are up to date.' });
    expect(server.alive()).toBe(true);
  });

  it('a refusal and a usage error come back as they would from the CLI alone', async () => {
    const refused = await cli(['contracts', 'set-payment', uniqueShop('nobody'), '4000', 'succeeds']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^svc: unknown shop ".*": this database has no such shop/);
    const usage = await cli(['discounts', 'create', shop]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('svc: discounts create <shop> <code> <percent>');
    expect(usage.stderr).toContain('Usage:');
  });

  it('listens only to its owner: the control directory is private and the socket its user’s', () => {
    const socket = controlSocketPath(dataDir);
    expect(statSync(path.dirname(socket)).mode & 0o777).toBe(0o700);
    expect(statSync(socket).mode & 0o777).toBe(0o600);
    expect(statSync(socket).isSocket()).toBe(true);
  });

  it('once the server stops, the CLI opens the database itself, and finds what it did through the server', async () => {
    server.kill('SIGTERM');
    expect((await server.exited).code).toBe(0);
    expect(existsSync(controlSocketPath(dataDir))).toBe(false);
    const listed = await cli(['shops', 'list']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain(`${shop}\tplan=enterprise`);
  });

  it('a server killed outright leaves its socket behind; the CLI sees no live holder and works directly', async () => {
    const killed = await startServer({ databaseUrl: '', env: where.env });
    killed.kill('SIGKILL');
    await killed.exited;
    expect(existsSync(controlSocketPath(dataDir))).toBe(true);
    const listed = await cli(['shops', 'list']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain(shop);
    // And the next server starts on it, serving the CLI again.
    const next = await startServer({ databaseUrl: '', env: where.env });
    const plan = await cli(['shops', 'set-plan', shop, 'basic']);
    expect(plan.code, plan.stderr).toBe(0);
    next.kill('SIGTERM');
    await next.exited;
  });
});

describe.skipIf(!onPostgres())('the CLI on PostgreSQL while a server runs', { timeout: 600_000 }, () => {
  it('opens the database beside the server: every step works, and the server sees the result', async () => {
    const server = await startServer({ databaseUrl: where.databaseUrl });
    // No control socket: nothing in the server serves the CLI on PostgreSQL.
    expect(server.logs().map((l) => l.msg)).not.toContain('CLI commands on this data directory run through this server');
    await newcomerSteps(server);
    server.kill('SIGTERM');
    await server.exited;
  });
});
