import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { call, startServer, stopAllServers } from './support/processes.js';

/**
 * `npm start` as a user runs it: compile src/ into dist/ (scripts/build-server.mjs), then plain node on the
 * embedded database. The other process tests run the sources through tsx; this one proves the compiled output
 * finds its migrations and the admin UI the way the sources do.
 */
describe('npm start (compiled)', { timeout: 60_000 }, () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-start-'));
  afterAll(async () => {
    await stopAllServers();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('builds, starts on a fresh embedded database, migrates it and serves the API, its docs and the admin screen', async () => {
    const built = spawnSync(process.execPath, ['scripts/build-server.mjs'], { encoding: 'utf8' });
    expect(built.status, built.stderr).toBe(0);

    const server = await startServer({ databaseUrl: '', env: { DATA_DIR: dataDir }, entry: 'built' });
    expect(server.logs().find((l) => String(l.msg).startsWith('svc listening'))).toMatchObject({ database: 'pglite' });
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
  });
});
