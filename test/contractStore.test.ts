import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commitIfUnchanged, planTransitions, readContract } from '../src/services/contractStore.js';
import { onPostgres } from './support/db.js';
import { startTestApp, type TestApp } from './support/app.js';
import { contractRow, eventRows, sql } from './support/fixtures.js';
import { holdRowLock } from './support/processes.js';

// The optimistic write behind every action: one statement, applied only if the contract is unchanged and not
// locked by another writer; otherwise nothing is written and the caller retries under a row lock.
describe('optimistic contract writes', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  const skip = [{ action: { action: 'skip' as const }, actor: { type: 'api_key' as const, keyFingerprint: 'abcdefabcdef' } }];

  it('writes the state and its event together and bumps the version', async () => {
    const { shopId } = await t.shopWithKey();
    const [c] = await t.seed(shopId, 1);
    const row = await readContract(t.ctx, shopId, c.id);
    const written = await commitIfUnchanged(t.ctx.db, row, planTransitions(row, skip, t.clock.now())!, t.clock.now());
    expect(written?.version).toBe(row.version + 1);
    const stored = await contractRow(t, c.id);
    expect(stored.version).toBe(row.version + 1);
    expect(stored.nextBillingDate.getTime()).toBeGreaterThan(row.nextBillingDate.getTime());
    expect((await eventRows(t, c.id)).map((e) => e.type)).toEqual(['contract.skipped']);
  });

  it('writes nothing when the contract changed since it was read', async () => {
    const { shopId } = await t.shopWithKey();
    const [c] = await t.seed(shopId, 1);
    const row = await readContract(t.ctx, shopId, c.id);
    await sql(t, 'UPDATE subscription_contracts SET version = version + 1 WHERE id = $1', [c.id]);
    const written = await commitIfUnchanged(t.ctx.db, row, planTransitions(row, skip, t.clock.now())!, t.clock.now());
    expect(written).toBeNull();
    expect((await contractRow(t, c.id)).nextBillingDate).toEqual(row.nextBillingDate);
    expect(await eventRows(t, c.id)).toEqual([]);
  });

  it('two writes computed from one version in one batch: the first is written, the second gives way', async () => {
    const { shopId } = await t.shopWithKey();
    const [c, d] = await t.seed(shopId, 2);
    const [row, rowD] = await Promise.all([readContract(t.ctx, shopId, c.id), readContract(t.ctx, shopId, d.id)]);
    const now = t.clock.now();
    const results = await Promise.all([
      commitIfUnchanged(t.ctx.db, row, planTransitions(row, skip, now)!, now),
      commitIfUnchanged(t.ctx.db, row, planTransitions(row, skip, now)!, now),
      commitIfUnchanged(t.ctx.db, rowD, planTransitions(rowD, skip, now)!, now),
    ]);
    expect(results.map((r) => r?.version ?? null)).toEqual([row.version + 1, null, rowD.version + 1]);
    expect((await contractRow(t, c.id)).version).toBe(row.version + 1);
    expect(await eventRows(t, c.id)).toHaveLength(1);
    expect(await eventRows(t, d.id)).toHaveLength(1);
  });

  it.skipIf(!onPostgres())('does not wait for another writer\'s row lock: gives way at once (PostgreSQL)', async () => {
    const { shopId } = await t.shopWithKey();
    const [c] = await t.seed(shopId, 1);
    const row = await readContract(t.ctx, shopId, c.id);
    const other = await t.database.connectAgain();
    const release = await holdRowLock(other, c.id);
    try {
      const written = await commitIfUnchanged(t.ctx.db, row, planTransitions(row, skip, t.clock.now())!, t.clock.now());
      expect(written).toBeNull();
    } finally {
      await release();
    }
    expect(await eventRows(t, c.id)).toEqual([]);
  });
});
