import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ContractRow } from '../src/db/schema.js';
import { mirrorOf } from './support/mirror.js';
import { changeContract, type ContractChange } from '../src/services/changeContract.js';
import { lockContract, writeContractsIn } from '../src/db/contractWrites.js';
import { syncContracts } from '../src/services/platformSync.js';
import { addInterval } from '../src/domain/time.js';
import { onPostgres } from './support/db.js';
import { startTestApp, type TestApp } from './support/app.js';
import { contractRow, eventRows, setContract, sql } from './support/fixtures.js';
import { holdRowLock } from './support/processes.js';

// The one change path: a command's decision commits as one unit (row, events, their consumers, the idempotency
// record), from the caller's read when nobody wrote in between, else under the row lock, decided again from the
// contract as it then is. Whatever the strategy, no update is lost and nothing is half written.
describe('the contract change path', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  const actor = { type: 'api_key' as const, keyFingerprint: 'abcdefabcdef' };
  const skip = (shopId: string, contractId: string, read?: ContractRow, extra: Partial<ContractChange> = {}): ContractChange => ({
    shopId,
    contractId,
    read,
    request: { command: { name: 'skip', input: {} }, actor },
    ...extra,
  });
  const seeded = async () => {
    const { shopId } = await t.shopWithKey();
    const [c] = await t.seed(shopId, 1);
    return { shopId, row: await contractRow(t, c.id) };
  };

  it('writes the state and its event together and bumps the version', async () => {
    const { shopId, row } = await seeded();
    const done = await changeContract(t.ctx, skip(shopId, row.id, row));
    expect(done!.changed).toBe(true);
    const stored = await contractRow(t, row.id);
    expect(stored.version).toBe(row.version + 1);
    expect(done!.row).toEqual(stored);
    expect(stored.nextBillingDate).toEqual(addInterval(row.nextBillingDate, row.billingInterval, row.billingIntervalCount));
    expect((await eventRows(t, row.id)).map((e) => [e.type, e.actorType, e.actorKeyFingerprint])).toEqual([['contract.skipped', 'api_key', 'abcdefabcdef']]);
  });

  it('a contract changed since it was read is decided again from what it is now: no update lost', async () => {
    const { shopId, row } = await seeded();
    const moved = new Date(row.nextBillingDate.getTime() + 3 * 86_400_000);
    await setContract(t, row.id, { nextBillingDate: moved });
    await sql(t, 'UPDATE subscription_contracts SET version = version + 1 WHERE id = $1', [row.id]);
    const done = await changeContract(t.ctx, skip(shopId, row.id, row));
    expect(done!.row.nextBillingDate).toEqual(addInterval(moved, row.billingInterval, row.billingIntervalCount));
    expect((await contractRow(t, row.id)).version).toBe(row.version + 2);
    expect(await eventRows(t, row.id)).toHaveLength(1);
  });

  it('two changes decided from one read, at once: both are applied, one after the other', async () => {
    const { shopId, row } = await seeded();
    const results = await Promise.all([changeContract(t.ctx, skip(shopId, row.id, row)), changeContract(t.ctx, skip(shopId, row.id, row))]);
    const dates = results.map((r) => r!.row.nextBillingDate.getTime()).sort();
    const once = addInterval(row.nextBillingDate, row.billingInterval, row.billingIntervalCount);
    expect(dates).toEqual([once.getTime(), addInterval(once, row.billingInterval, row.billingIntervalCount).getTime()]);
    expect((await contractRow(t, row.id)).version).toBe(row.version + 2);
    expect(await eventRows(t, row.id)).toHaveLength(2);
  });

  it('concurrent changes of many contracts share one statement', async () => {
    const { shopId } = await t.shopWithKey();
    const seededRows = await Promise.all((await t.seed(shopId, 10)).map((c) => contractRow(t, c.id)));
    const statements: string[] = [];
    const observed = await t.database.observed((q) => statements.push(q));
    try {
      const ctx = { ...t.ctx, db: observed };
      const results = await Promise.all(seededRows.map((r) => changeContract(ctx, skip(shopId, r.id, r))));
      expect(results.every((r) => r!.changed)).toBe(true);
      expect(statements.filter((q) => q.includes('INSERT INTO contract_events'))).toHaveLength(1);
    } finally {
      await observed.close();
    }
  });

  it('a command that refuses (invalid_state) writes nothing; nothing due writes nothing', async () => {
    const { shopId, row } = await seeded();
    await setContract(t, row.id, { status: 'CANCELLED' });
    await expect(changeContract(t.ctx, skip(shopId, row.id))).rejects.toMatchObject({ code: 'invalid_state' });
    const idle = await changeContract(t.ctx, { shopId, contractId: row.id, request: null });
    expect(idle!.changed).toBe(false);
    expect((await contractRow(t, row.id)).version).toBe(row.version);
    expect(await eventRows(t, row.id)).toEqual([]);
  });

  it('a contract of another shop is not found, and nothing is written', async () => {
    const { row } = await seeded();
    const other = await t.shopWithKey();
    await expect(changeContract(t.ctx, skip(other.shopId, row.id))).rejects.toMatchObject({ code: 'not_found' });
    expect(await eventRows(t, row.id)).toEqual([]);
  });

  it('platform sync of several contracts in one transaction: each decided from its row; one that cannot change answers why, the others commit', async () => {
    const { shopId } = await t.shopWithKey();
    const [a, b, stale, leased] = await Promise.all((await t.seed(shopId, 4)).map((c) => contractRow(t, c.id)));
    const other = await t.shopWithKey();
    const [foreign] = await t.seed(other.shopId, 1);
    await sql(t, `UPDATE subscription_contracts SET platform_revision = 5 WHERE id = ANY($1::bigint[])`, [[a.id, b.id, stale.id, leased.id]]);
    await sql(t, `UPDATE subscription_contracts SET call_lease = gen_random_uuid(), call_lease_until = $2 WHERE id = $1`, [leased.id, new Date(t.clock.now().getTime() + 60_000)]);
    const newer = (row: ContractRow, revision: string, over: Partial<ContractRow> = {}) => mirrorOf({ ...row, ...over }, revision, t.clock.now());
    const results = await syncContracts(
      t.ctx,
      shopId,
      [
        newer(a, '6', { status: 'PAUSED' }),
        newer(stale, '4', { status: 'CANCELLED' }),
        newer(await contractRow(t, foreign.id), '9'), // another shop's
        newer(leased, '6', { status: 'PAUSED' }),
        newer(b, '7', { customerEmail: 'new@example.com' }),
      ],
      { announce: true },
    );
    const outcome = (id: string) => {
      const r = results.get(id)!;
      return r instanceof Error ? (r as { code?: string }).code : r;
    };
    expect([a, stale, foreign, leased, b].map((r) => outcome(r.id))).toEqual(['changed', 'unchanged', 'not_found', 'platform_unavailable', 'changed']);
    for (const [row, events] of [[a, 1], [b, 1], [stale, 0], [leased, 0]] as const) {
      expect((await contractRow(t, row.id)).version).toBe(row.version + events);
      expect(await eventRows(t, row.id)).toHaveLength(events);
    }
    expect((await eventRows(t, a.id)).map((e) => [e.type, e.actorType])).toEqual([['contract.paused', 'platform']]);
    expect((await contractRow(t, b.id)).customerEmail).toBe('new@example.com');
  });

  it.skipIf(!onPostgres())('a writer holding the row: the optimistic write gives way at once and the change waits its turn (PostgreSQL)', async () => {
    const { shopId, row } = await seeded();
    const other = await t.database.connectAgain();
    const release = await holdRowLock(other, row.id);
    let settled = false;
    const change = changeContract(t.ctx, skip(shopId, row.id, row)).finally(() => (settled = true));
    // With skipLocked (the resume sweep) it does not wait: another writer has it.
    expect(await changeContract(t.ctx, skip(shopId, row.id, row, { skipLocked: true }))).toBeNull();
    await new Promise((r) => setTimeout(r, 100));
    expect(settled).toBe(false);
    await release();
    expect((await change)!.changed).toBe(true);
    expect(await eventRows(t, row.id)).toHaveLength(1);
    await other.close();
  });

  it('writes the JSON parts a change made anew, JSON null included, and leaves the others as stored', async () => {
    const { row } = await seeded();
    const textOf = async (column: string) => ((await sql(t, `SELECT ${column}::text AS v FROM subscription_contracts WHERE id = $1`, [row.id])) as { v: string | null }[])[0].v;
    const linesBefore = await textOf('lines');
    const write = async (before: ContractRow, after: Partial<ContractRow>) =>
      t.ctx.db.transaction(async (run) => {
        const locked = (await lockContract(run, before.shopId, before.id))!;
        const written = await writeContractsIn(run, [{ before: locked, after: { ...locked, ...after }, events: [], rendered: [], now: new Date() }]);
        expect(written).toEqual([true]);
      });
    expect(row.shippingAddress).not.toBeNull();
    await write(row, { shippingAddress: null, deliveryPrice: { amount: '4.90', currencyCode: 'EUR' } });
    let stored = await contractRow(t, row.id);
    expect([stored.shippingAddress, stored.deliveryPrice, stored.lines]).toEqual([null, { amount: '4.90', currencyCode: 'EUR' }, row.lines]);
    await write(stored, { deliveryPrice: null, discounts: [{ id: 'd1', title: 'Ten "off"', code: 'TEN\\', value: { type: 'percentage', percentage: 10 } }] });
    stored = await contractRow(t, row.id);
    expect(stored.deliveryPrice).toBeNull();
    expect(stored.discounts).toEqual([{ id: 'd1', title: 'Ten "off"', code: 'TEN\\', value: { type: 'percentage', percentage: 10 } }]);
    // Untouched parts keep the very text they were stored as.
    expect(await textOf('lines')).toBe(linesBefore);
    expect(await textOf('discounts')).toBe(JSON.stringify(stored.discounts));
  });
});
