import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * `npm run demo:platform` (scripts/demo-platform.ts) as a user runs it: a child process on free ports that prints an
 * admin link; opening the link installs the shop, the import completes, the Enterprise upgrade is approved on the
 * platform's confirmation page, a key is generated and the API lists the shop's contracts; a change the demo makes
 * on the platform reaches svc; Ctrl-C stops everything.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SHOP = 'demo-shop.myshopify.com';

let tmp: string;
let child: ChildProcess;
const lines: string[] = [];
const waiters = new Set<() => void>();
let exited: Promise<number | null>;
let standInPort: number;
let svc: string;

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen({ host: '127.0.0.1', port: 0 }, () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/**
 * The first output line `re` matches, printed already or yet to come: the wait ends on the demo's own output (or its
 * exit), however long a cold start takes on a busy machine; a demo that hangs is ended by the test's timeout.
 */
async function waitForLine(re: RegExp): Promise<RegExpExecArray> {
  for (;;) {
    for (const l of lines) {
      const m = re.exec(l);
      if (m) return m;
    }
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the demo exited before a line matching ${re}; its output:\n${lines.join('\n')}`);
    await new Promise<void>((resolve) => waiters.add(resolve));
  }
}

async function until<T>(what: string, fn: () => Promise<T | undefined | null | false>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

beforeAll(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'svc-demo-test-'));
  standInPort = await freePort();
  const svcPort = await freePort();
  svc = `http://127.0.0.1:${svcPort}`;
  child = spawn(process.execPath, ['--import', 'tsx', 'scripts/demo-platform.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      DEMO_STANDIN_PORT: String(standInPort),
      DEMO_SVC_PORT: String(svcPort),
      DEMO_DATA_DIR: path.join(tmp, 'data'),
      DEMO_LOG_FILE: path.join(tmp, 'svc.log'),
      DEMO_CHANGE_EVERY_SECONDS: '1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  exited = new Promise((resolve) =>
    child.once('exit', (code) => {
      resolve(code);
      for (const w of waiters) w();
      waiters.clear();
    }),
  );
  const onLine = (l: string) => {
    lines.push(l);
    for (const w of waiters) w();
    waiters.clear();
  };
  createInterface({ input: child.stdout! }).on('line', onLine);
  createInterface({ input: child.stderr! }).on('line', onLine);
});

afterAll(async () => {
  if (child && child.exitCode === null && child.signalCode === null) {
    child.kill('SIGKILL');
    await exited;
  }
  rmSync(tmp, { recursive: true, force: true });
});

describe('npm run demo:platform', () => {
  it('prints a link that installs the shop; the import, the upgrade, a key and the API work; Ctrl-C stops it', { timeout: 600_000 }, async () => {
    const [, link] = await waitForLine(/^\s+(http:\/\/127\.0\.0\.1:\d+\/admin#token=[\w.-]+)$/);
    const url = new URL(link);
    expect(url.origin).toBe(svc);
    const token = new URLSearchParams(url.hash.slice(1)).get('token')!;
    expect(lines.join('\n')).toContain(`http://127.0.0.1:${standInPort}`);
    // The instructions follow the link; the stream may deliver them a moment later.
    await waitForLine(/curl -s -H "Authorization: Bearer \$SVC_API_KEY"/);

    const admin = (p: string, init: RequestInit = {}) =>
      fetch(`${svc}/admin/api${p}`, { ...init, headers: { authorization: `Bearer ${token}`, ...(init.body ? { 'content-type': 'application/json' } : {}) } });

    // Opening the link: the first session token installs the shop; the import of its 25 contracts follows.
    const first = await admin('/shop');
    expect(first.status).toBe(200);
    expect(await first.json()).toMatchObject({ shop: { domain: SHOP, plan: 'basic' }, platform: { mode: 'shopify', canUpgrade: true } });
    const imported = await until('the import', async () => {
      const body = await (await admin('/shop')).json();
      return body.platform.import?.status === 'completed' && body.platform.import;
    });
    expect(imported).toMatchObject({ status: 'completed', mode: 'paged', imported: 25, total: 25, error: null });
    await waitForLine(/\[platform\] demo-shop\.myshopify\.com installed the app/);

    // Upgrade to Enterprise on the platform's confirmation page.
    const upgrade = await admin('/billing/upgrade', { method: 'POST', body: '{}' });
    expect(upgrade.status).toBe(200);
    const { confirmationUrl } = await upgrade.json();
    expect(confirmationUrl).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${standInPort}/${SHOP.replace(/\./g, '\\.')}/admin/charges/`));
    expect(await (await fetch(confirmationUrl)).text()).toContain('Approve');
    const approved = await fetch(confirmationUrl, {
      method: 'POST',
      body: 'decision=approve',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      redirect: 'manual',
    });
    expect(approved.status).toBe(302);
    expect(approved.headers.get('location')).toMatch(new RegExp(`^${svc}/admin/settings/api\\?`));
    await until('API access', async () => (await (await admin('/shop')).json()).shop.apiAccess.allowed);

    // A key, and the API lists the shop's contracts with it.
    const created = await admin('/keys', { method: 'POST', body: JSON.stringify({ name: 'demo test' }) });
    expect(created.status).toBe(201);
    const { secret } = await created.json();
    const api = (p: string) => fetch(`${svc}/api/v1${p}`, { headers: { authorization: `Bearer ${secret}` } });
    const list = await api('/subscription-contracts?limit=100');
    expect(list.status).toBe(200);
    const { contracts, nextCursor } = await list.json();
    expect(nextCursor).toBeNull();
    expect(contracts).toHaveLength(25);
    expect(new Set(contracts.map((c: { status: string }) => c.status))).toEqual(new Set(['ACTIVE', 'PAUSED', 'FAILED']));
    for (const c of contracts) {
      expect(c.customer.email).toMatch(/^[a-z.-]+\d+@example\.com$/);
      expect(c.lines.length).toBeGreaterThan(0);
      expect(c.lines[0].price.currencyCode).toBe('USD');
    }

    // A change the demo makes on the platform reaches svc by webhook, with actor platform.
    const [, verb, id] = await waitForLine(/\[platform\] (paused|resumed) contract (\d+) /);
    await until(`the ${verb} of contract ${id} in svc`, async () => {
      const { events } = await (await api(`/subscription-contracts/${id}/events`)).json();
      return events.some((e: { type: string; actor: { type: string } }) => e.actor.type === 'platform' && e.type === `contract.${verb}`);
    });

    // Ctrl-C: both stop, cleanly.
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(lines).toContain('Stopped.');
    await expect(fetch(`${svc}/healthz`)).rejects.toThrow();
    await expect(fetch(`http://127.0.0.1:${standInPort}/`)).rejects.toThrow();
  });
});
