import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadMigrations } from '../src/db/migrate.js';
import { call, startServer, stopAllServers, type ServerProcess } from './support/processes.js';

/**
 * `npm start` as a user runs it (scripts/start.mjs with the node options of package.json): compile src/ into dist/
 * when it changed, then plain node on the embedded database. The other process tests run the sources through tsx;
 * this one proves the compiled output finds its migrations and the admin UI the way the sources do, and that a start
 * says what it is doing while it prepares the database. The waits end on the process's own lines (it listens, or it
 * exits): a cold start on a busy machine takes as long as it takes, bounded only by the test's timeout.
 */
describe('npm start (compiled)', { timeout: 600_000 }, () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-start-'));
  afterAll(async () => {
    await stopAllServers();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const messages = (server: ServerProcess) => server.logs().map((l) => String(l.msg));
  const stop = async (server: ServerProcess) => {
    server.kill('SIGTERM');
    expect((await server.exited).code).toBe(0);
  };

  it('starts on a fresh embedded database, saying what it does, migrates it and serves the API, its docs and the admin screen', async () => {
    const server = await startServer({ databaseUrl: '', env: { DATA_DIR: dataDir }, entry: 'start' });
    const said = messages(server);
    // Before it listens, it said it was creating the database (the slow step of a first start), then each migration.
    const creating = said.findIndex((m) => m.startsWith(`creating the embedded database in ${dataDir}`));
    const listening = said.findIndex((m) => m.startsWith('svc listening'));
    expect(creating).toBeGreaterThanOrEqual(0);
    expect(said[creating]).toContain('first start only');
    const migrations = loadMigrations();
    expect(said.filter((m) => m.startsWith('applying migration '))).toEqual(
      migrations.map((m, i) => `applying migration ${m.name} (${i + 1} of ${migrations.length})`),
    );
    expect(said.findIndex((m) => m.startsWith('applying migration '))).toBeGreaterThan(creating);
    expect(listening).toBeGreaterThan(creating);
    expect(server.logs()[listening]).toMatchObject({ database: 'pglite' });

    expect((await call(server.url, '/healthz')).status).toBe(200);
    expect((await call(server.url, '/readyz')).status).toBe(200);
    expect((await call(server.url, '/api/v1/openapi.json')).body).toMatchObject({ openapi: '3.1.0' });
    const refused = await call(server.url, '/api/v1/subscription-contracts');
    expect(refused.status).toBe(401);
    expect(refused.body.error).toMatchObject({ code: 'unauthorized' });
    const admin = await fetch(`${server.url}/admin`, { headers: { accept: 'text/html' } });
    // 200 with the page when the UI is built (npm install builds it), 503 with the envelope when it is not.
    expect([200, 503]).toContain(admin.status);
    if (admin.status === 200) expect(await admin.text()).toContain('<div id="root">');
    await stop(server);
  });

  it('a second start opens the database it made, applies nothing and does not compile again', async () => {
    const server = await startServer({ databaseUrl: '', env: { DATA_DIR: dataDir }, entry: 'start' });
    const said = messages(server);
    expect(said).toContain(`opening the embedded database in ${dataDir}`);
    expect(said.some((m) => m.startsWith('creating the embedded database') || m.startsWith('applying migration'))).toBe(false);
    // dist/ was built from these very sources by the first start: nothing to compile.
    expect(server.lines).not.toContain('svc: compiling src/ into dist/');
    expect((await call(server.url, '/healthz')).status).toBe(200);
    await stop(server);
  });
});
