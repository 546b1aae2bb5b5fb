import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigSchema } from '../src/config.js';
import { openapiDocument } from '../src/http/openapi.js';
import { createServiceContext, systemClock } from '../src/services/context.js';
import { seedContracts } from '../src/services/seedContracts.js';
import { provisionShop } from '../src/services/shops.js';
import { uniqueShop } from './support/app.js';
import { createTestDatabase, type TestDatabase } from './support/db.js';

/**
 * What a newcomer reads first: the license, every setting with its default, the changelog, the versioning policy,
 * and the README's examples, which must work on the contracts `svc contracts seed` makes.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const read = (f: string) => readFileSync(path.join(ROOT, f), 'utf8');

describe('LICENSE', () => {
  it('is MIT, as the OpenAPI document and package.json say, copyright svc contributors', () => {
    const license = read('LICENSE');
    expect(license.split('\n')[0]).toBe('MIT License');
    expect(license).toMatch(/^Copyright \(c\) \d{4} svc contributors$/m);
    expect(license).toContain('THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND');
    expect(openapiDocument(undefined).info?.license).toMatchObject({ identifier: 'MIT' });
    expect(JSON.parse(read('package.json')).license).toBe('MIT');
  });
});

describe('.env.example', () => {
  const lines = read('.env.example').split('\n');
  const settings = lines.map((l, i) => ({ m: /^# ([A-Z][A-Z0-9_]*)=(.*)$/.exec(l), i })).filter((x) => x.m);

  it('lists every variable svc reads, each once, with its default, under one line saying what it means', () => {
    const names = Object.keys(ConfigSchema.shape);
    expect(settings.map((s) => s.m![1]).sort()).toEqual([...names].sort());
    for (const { m, i } of settings) {
      const [, name, value] = m!;
      const parsed = (ConfigSchema.shape as Record<string, { safeParse(v: unknown): { success: boolean; data?: unknown } }>)[name].safeParse(undefined);
      expect(parsed.success, name).toBe(true);
      // Its default as written, or empty for a variable that has none.
      expect(value, name).toBe(parsed.data === undefined ? '' : String(parsed.data));
      const meaning = lines[i - 1];
      expect(meaning, name).toMatch(/^# \S/);
      expect(meaning, name).not.toMatch(/^# [A-Z][A-Z0-9_]*=/);
    }
  });

  it('sets nothing when loaded as it is (every setting is commented out)', () => {
    expect(lines.filter((l) => l.trim() && !l.startsWith('#'))).toEqual([]);
  });
});

describe('CHANGELOG.md', () => {
  const changelog = read('CHANGELOG.md');
  it('follows Keep a Changelog: an Unreleased section with what this round adds, then dated versions', () => {
    const headings = changelog.split('\n').filter((l) => l.startsWith('## '));
    expect(changelog.split('\n')[0]).toBe('# Changelog');
    expect(changelog).toContain('https://keepachangelog.com/');
    expect(headings[0]).toBe('## [Unreleased]');
    for (const h of headings.slice(1)) expect(h).toMatch(/^## \[\d+\.\d+\.\d+\] - \d{4}-\d{2}-\d{2}$/);
    expect(headings.length).toBeGreaterThan(1);
    const unreleased = changelog.slice(changelog.indexOf('## [Unreleased]'), changelog.indexOf(headings[1]));
    for (const section of ['### Added', '### Changed', '### Fixed']) expect(unreleased).toContain(section);
    for (const item of [/edits with a preview/i, /admin contract pages/i, /renewals/i, /request log/i, /leaked keys/i, /hardening/i]) {
      expect(unreleased).toMatch(item);
    }
  });
});

describe('README', () => {
  const readme = read('README.md');

  it('links the versioning policy, which says what may change inside v1 and how a breaking change is announced', () => {
    expect(readme).toContain('(docs/api.md)');
    const api = read('docs/api.md');
    const section = api.slice(api.indexOf('## Versioning'), api.indexOf('\n## ', api.indexOf('## Versioning') + 1));
    expect(section.length).toBeGreaterThan(200);
    for (const part of [/new fields/, /new endpoints/, /new webhook event types/, /new error codes/, /\/api\/v2/, /`Deprecation` header/, /CHANGELOG\.md/]) {
      expect(section).toMatch(part);
    }
  });

  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(() => database.drop());

  it("its curls name a contract by the id it exports, the first that `contracts seed` makes on a new database", async () => {
    const curls = readme.split('\n').filter((l) => /^\$? ?curl .*\/subscription-contracts\/[^?\s"]/.test(l));
    expect(curls.length).toBeGreaterThan(5);
    for (const l of curls) expect(l).toMatch(/\/subscription-contracts\/\$CONTRACT(\/|\s|$)/);
    const exported = /^export CONTRACT=(\d+)\b/m.exec(readme);
    expect(exported).not.toBeNull();
    // The quick start on a new database: the seed's first contract has that id.
    const ctx = createServiceContext({ db: database.db, clock: systemClock, freeUntil: null });
    const shop = await provisionShop({ ctx, input: { domain: uniqueShop('readme') } });
    const seeded = await seedContracts({ ctx, input: { shopId: shop.id, count: 5 } });
    expect(seeded[0].id).toBe(exported![1]);
  });
});
