import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';

/** Configuration is validated at start with messages that name the variable (docs/product.md §8). */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

describe('loadConfig', () => {
  it('defaults: port 3000, host 127.0.0.1, the embedded database in ./.data, no free period, 600 requests and 60 failed authentications a minute', () => {
    const config = loadConfig({});
    expect(config.rateLimitPerMinute).toBe(600);
    expect(config.authFailureLimitPerMinute).toBe(60);
    expect(config.port).toBe(3000);
    expect(config.host).toBe('127.0.0.1');
    expect(config.database).toEqual({ kind: 'pglite', dataDir: './.data' });
    expect(config.freeUntil).toBeNull();
    expect(config.publicUrl).toBe('http://127.0.0.1:3000');
  });

  it('reads the values it is given', () => {
    const config = loadConfig({
      PORT: '8080',
      HOST: '0.0.0.0',
      DATABASE_URL: 'postgres://u@db:5432/svc',
      API_ACCESS_FREE_UNTIL: '2027-01-01T00:00:00Z',
      PUBLIC_URL: 'https://svc.example.com/',
      DATA_DIR: '/var/lib/svc',
    });
    expect(config).toMatchObject({ port: 8080, host: '0.0.0.0', database: { kind: 'postgres', url: 'postgres://u@db:5432/svc' }, publicUrl: 'https://svc.example.com' });
    expect(config.freeUntil?.toISOString()).toBe('2027-01-01T00:00:00.000Z');
    expect(loadConfig({ DATABASE_URL: 'postgresql://x/y' }).database.kind).toBe('postgres');
    expect(loadConfig({ DATABASE_URL: '  ' }).database.kind).toBe('pglite');
  });

  it.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['PORT', '3.5'],
    ['DATABASE_URL', 'mysql://root@localhost/svc'],
    ['DATABASE_URL', 'sqlite:./x.db'],
    ['API_ACCESS_FREE_UNTIL', '2027-01-01'],
    ['API_ACCESS_FREE_UNTIL', '2027-01-01T00:00:00+01:00'],
    ['API_ACCESS_FREE_UNTIL', 'soon'],
    ['REDIS_URL', 'http://localhost:6379'],
    ['LOG_LEVEL', 'verbose'],
    ['PUBLIC_URL', 'svc.example.com'],
  ])('rejects %s=%s with a message naming the variable', (name, value) => {
    let error: unknown;
    try {
      loadConfig({ [name]: value });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toContain(name);
    expect((error as Error).message).toContain(JSON.stringify(value));
  });

  it.each([
    ['SHOPIFY_API_SECRET', 'short', 'short'],
    ['METRICS_TOKEN', 'tiny-token', 'tiny-token'],
    ['DATABASE_URL', 'mysql://root:hunter2@localhost/svc', 'hunter2'],
    ['REDIS_URL', 'http://:s3cr3t@localhost:6379', 's3cr3t'],
  ])('names %s but never prints a secret it holds', (name, value, secret) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    try {
      loadConfig({ [name]: value });
    } catch (err) {
      expect((err as Error).message).toContain(name);
      expect((err as Error).message).not.toContain(secret);
    }
  });

  it('shows a refused connection URL with its password masked', () => {
    expect(() => loadConfig({ DATABASE_URL: 'mysql://root:hunter2@localhost/svc' })).toThrow('DATABASE_URL="mysql://root:***@localhost/svc"');
  });

  it('reports every bad variable at once', () => {
    expect(() => loadConfig({ PORT: 'abc', DATABASE_URL: 'mysql://x' })).toThrow(/PORT.*DATABASE_URL|DATABASE_URL.*PORT/);
  });
});

describe('the server with a bad configuration', () => {
  // Waits for the process to exit, however long a cold start takes on a busy machine (the test's own timeout bounds it).
  it('exits with code 1 and one clear line on stderr', { timeout: 120_000 }, async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: ROOT, env: { PATH: process.env.PATH, PORT: 'abc' } });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
    const res = { status, stdout, stderr };
    expect(res.status).toBe(1);
    const lines = res.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^svc: Invalid configuration: PORT="abc"/);
    expect(res.stdout).toBe('');
  });
});

describe('hostile-client limits', () => {
  it('GITHUB_SECRET_SCANNING_KEYS_URL defaults to GitHub’s key list; another URL is taken, anything else refused by name', () => {
    expect(loadConfig({}).secretScanningKeysUrl).toBe('https://api.github.com/meta/public_keys/secret_scanning');
    expect(loadConfig({ GITHUB_SECRET_SCANNING_KEYS_URL: 'http://127.0.0.1:9000/keys' }).secretScanningKeysUrl).toBe('http://127.0.0.1:9000/keys');
    expect(() => loadConfig({ GITHUB_SECRET_SCANNING_KEYS_URL: 'ftp://example.com/keys' })).toThrow(/GITHUB_SECRET_SCANNING_KEYS_URL="ftp:\/\/example.com\/keys" must be an http\(s\) URL/);
  });

  it('REQUEST_BODY_TIMEOUT_MS defaults to 10 s and MAX_CONNECTIONS_PER_IP to 256; nonsense is refused by name', () => {
    expect(loadConfig({})).toMatchObject({ requestBodyTimeoutMs: 10_000, maxConnectionsPerIp: 256 });
    expect(loadConfig({ REQUEST_BODY_TIMEOUT_MS: '2500', MAX_CONNECTIONS_PER_IP: '32' })).toMatchObject({ requestBodyTimeoutMs: 2500, maxConnectionsPerIp: 32 });
    for (const [name, value] of [['REQUEST_BODY_TIMEOUT_MS', '0'], ['REQUEST_BODY_TIMEOUT_MS', 'soon'], ['MAX_CONNECTIONS_PER_IP', '0'], ['MAX_CONNECTIONS_PER_IP', '1.5']]) {
      expect(() => loadConfig({ [name]: value }), `${name}=${value}`).toThrow(new RegExp(name));
    }
  });
});

describe('REDIS_KEY_PREFIX', () => {
  it('defaults to svc:ratelimit: and refuses characters Redis users would not expect', async () => {
    const { loadConfig } = await import('../src/config.js');
    expect(loadConfig({}).redisKeyPrefix).toBe('svc:ratelimit:');
    expect(loadConfig({ REDIS_KEY_PREFIX: 'shop-eu:rl:' }).redisKeyPrefix).toBe('shop-eu:rl:');
    expect(() => loadConfig({ REDIS_KEY_PREFIX: 'has space' })).toThrow(/REDIS_KEY_PREFIX/);
  });
});
