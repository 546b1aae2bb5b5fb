import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { onPostgres } from './support/db.js';
import { call, startServer, stopAllServers, type ServerProcess } from './support/processes.js';

/**
 * The README's "Try it by hand", run as written: its shell blocks, in order, in one shell beside a running server on
 * the embedded database (what a fresh clone gets). Only the placeholders a reader fills in (the session token, the
 * key's secret) and the server's address are substituted; every curl fails the run on an HTTP error. So a command
 * that stops working, or a step the README forgets (a discount code never created), fails here.
 */

const ROOT = path.resolve(import.meta.dirname, '..');
const README = readFileSync(path.join(ROOT, 'README.md'), 'utf8');

/** The ```sh blocks of a section: from its heading to the next heading of its level or above (outside code). */
function shellBlocks(heading: string): string[] {
  const level = heading.indexOf(' ');
  const blocks: string[] = [];
  let inSection = false;
  let block: string[] | null = null;
  let sh = false;
  for (const line of README.split('\n')) {
    if (block) {
      if (line.startsWith('```')) {
        if (inSection && sh) blocks.push(block.join('\n') + '\n');
        block = null;
      } else block.push(line);
    } else if (line.startsWith('```')) {
      block = [];
      sh = line === '```sh';
    } else if (/^#{1,6} /.test(line)) {
      if (line === heading) inSection = true;
      else if (inSection && line.indexOf(' ') <= level) break;
    }
  }
  if (!inSection) throw new Error(`README.md has no "${heading}"`);
  return blocks;
}

const tmp = mkdtempSync(path.join(os.tmpdir(), 'svc-readme-'));
const dataDir = path.join(tmp, 'data');
let server: ServerProcess;

/** Runs `script` in bash with `set -euo pipefail` and every curl failing on an HTTP error; its output. */
function bash(script: string): Promise<string> {
  const prelude = `set -euo pipefail\ncurl() { command curl --fail-with-body "$@"; echo; }\n`;
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, DATABASE_URL: '', SHOPIFY_API_KEY: '', SHOPIFY_API_SECRET: '', npm_config_update_notifier: 'false' };
  delete env.TEST_DATABASE_URL;
  return new Promise((resolve, reject) => {
    execFile('bash', ['-c', prelude + script], { cwd: ROOT, env, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${err.message}\n--- stdout\n${stdout}\n--- stderr\n${stderr}`));
      else resolve(stdout);
    });
  });
}

/** The JSON documents a run printed, one per line that is one. */
const documents = (out: string) =>
  out.split('\n').flatMap((line) => {
    if (!line.startsWith('{')) return [];
    try {
      return [JSON.parse(line) as Record<string, any>];
    } catch {
      return [];
    }
  });

describe.skipIf(onPostgres())('README: try it by hand', { timeout: 300_000 }, () => {
  beforeAll(async () => {
    // A copy of the migrated template (creating one from nothing is start.test.ts's).
    const made = await PGlite.create({ dataDir, loadDataDir: new Blob([readFileSync(inject('pgliteTemplate'))]) });
    await made.close();
    server = await startServer({ databaseUrl: '', env: { DATA_DIR: dataDir, SHOPIFY_API_KEY: '', SHOPIFY_API_SECRET: '', SCHEDULER_INTERVAL_MS: '500' }, entry: 'start' });
  }, 180_000);
  afterAll(async () => {
    await stopAllServers();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('every command works in order: a shop, contracts, a key, reads, pause and resume, an edit, a bulk preview, dunning', async () => {
    // Its subsection "Watch dunning in two minutes" is the last block.
    const [start, setup, makeKey, useIt, dunning, ...rest] = shellBlocks('## Try it by hand');
    expect(start).toMatch(/^npm start/);
    expect(dunning).toContain('bill_now');
    expect(rest).toEqual([]);
    const here = (s: string) => s.replaceAll('http://127.0.0.1:3000', server.url);

    // The CLI steps, while the server runs.
    const out = await bash(setup);
    const token = /#token=([A-Za-z0-9._-]+)/.exec(out)?.[1];
    expect(token, out).toBeTruthy();

    // The key, the reads and changes, the bulk preview, then dunning: one shell, as a reader's terminal.
    const filled = (s: string) =>
      here(s)
        .replace(/^TOKEN=….*$/m, `TOKEN='${token}'`)
        .replace(/^export SVC=(\S+) KEY=svc_live_….*$/m, (_, svc: string) => `export SVC=${svc} KEY="$(printf '%s' "$KEY_MADE" | node -pe 'JSON.parse(require("fs").readFileSync(0)).secret')"`);
    expect(filled(makeKey)).not.toContain('…\n');
    const script = [filled(makeKey).replace(/^curl /m, 'KEY_MADE=$(curl '), filled(useIt), filled(dunning)].join('\n');
    // The key's curl is captured for the next block (a reader copies the secret from its output).
    const keyCurl = /KEY_MADE=\$\(curl [\s\S]*?-d '\{"name":"backend"\}'/.exec(script)?.[0];
    expect(keyCurl).toBeTruthy();
    const run = await bash(script.replace(keyCurl!, `${keyCurl})\necho "$KEY_MADE"`));
    const docs = documents(run);

    const key = docs.find((d) => typeof d.secret === 'string');
    expect(key?.secret).toMatch(/^svc_live_/);
    const contracts = docs.filter((d) => d.contract).map((d) => d.contract);
    expect(contracts.length).toBeGreaterThan(3);
    const id = contracts[0].id as string;
    expect(id).toBe('4000');
    // Paused until a date, then resumed; the edit previewed, then made: three of the first line and the code.
    expect(contracts.some((c) => c.status === 'PAUSED' && c.resumeAt === '2027-01-05T00:00:00.000Z')).toBe(true);
    const bulk = docs.find((d) => d.bulkJob);
    expect(bulk?.bulkJob.status).toMatch(/^preview/);
    expect(docs.some((d) => Array.isArray(d.events) && d.events.length >= 3)).toBe(true);

    const auth = key!.secret as string;
    const after = (await call(server.url, `/api/v1/subscription-contracts/${id}`, { auth })).body as { contract: Record<string, any> };
    expect(after.contract.status).toBe('ACTIVE');
    expect(after.contract.lines[0].quantity).toBe(3);
    expect(after.contract.discounts.map((d: { code?: string }) => d.code)).toContain('WELCOME10');

    // Dunning: the declined renewal failed and a retry is due about ten seconds after it, as the policy says.
    await expect
      .poll(async () => {
        const res = (await call(server.url, `/api/v1/subscription-contracts/${id}/billing-attempts`, { auth })).body as { billingAttempts: { status: string }[] };
        return res.billingAttempts.map((a) => a.status);
      }, { timeout: 60_000, interval: 250 })
      .toContain('failed');
    const billed = (await call(server.url, `/api/v1/subscription-contracts/${id}`, { auth })).body as { contract: { billing: { status: string; nextRetryAt?: string } } };
    expect(billed.contract.billing.status).toBe('retrying');
  });
});
