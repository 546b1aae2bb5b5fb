import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commitContractChange, commitContractChanges, type ContractChange } from '../src/db/commitContractChange.js';
import type { ContractRow } from '../src/db/schema.js';
import { planChange } from '../src/domain/changes.js';
import type { ContractState } from '../src/domain/contract.js';
import { addInterval } from '../src/domain/time.js';
import { onPostgres } from './support/db.js';
import { startTestApp, type TestApp } from './support/app.js';
import { contractRow, eventRows, setContract, sql } from './support/fixtures.js';
import { holdRowLock } from './support/processes.js';

// The one change path: a planned contract change commits as one unit (row, events, their consumers, the idempotency
// record), optimistically from the caller's read when nobody wrote in between, else under the row lock, planned
// again from the contract as it then is. Whatever the strategy, no update is lost and nothing is half written.
describe('the contract change path', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  const actor = { type: 'api_key' as const, keyFingerprint: 'abcdefabcdef' };
  const skip = (shopId: string, read: ContractRow | undefined, extra: Partial<ContractChange> = {}): ContractChange => ({
    shopId,
    contractId: read?.id ?? '',
    now: t.clock.now(),
    read,
    plan: (row) => planChange(row as unknown as ContractState, { action: { action: 'skip' }, actor }, t.clock.now()),
    ...extra,
  });
  const seeded = async () => {
    const { shopId } = await t.shopWithKey();
    const [c] = await t.seed(shopId, 1);
    return { shopId, row: await contractRow(t, c.id) };
  };

  it('writes the state and its event together and bumps the version', async () => {
    const { shopId, row } = await seeded();
    const done = await commitContractChange(t.ctx.db, skip(shopId, row));
    expect(done!.changed).toBe(true);
    const stored = await contractRow(t, row.id);
    expect(stored.version).toBe(row.version + 1);
    expect(done!.row).toEqual(stored);
    expect(stored.nextBillingDate).toEqual(addInterval(row.nextBillingDate, row.billingInterval as never, row.billingIntervalCount));
    expect((await eventRows(t, row.id)).map((e) => [e.type, e.actorType, e.actorKeyFingerprint])).toEqual([['contract.skipped', 'api_key', 'abcdefabcdef']]);
  });

  it('a contract changed since it was read is planned again from what it is now: no update lost', async () => {
    const { shopId, row } = await seeded();
    const moved = new Date(row.nextBillingDate.getTime() + 3 * 86_400_000);
    await setContract(t, row.id, { nextBillingDate: moved });
    await sql(t, 'UPDATE subscription_contracts SET version = version + 1 WHERE id = $1', [row.id]);
    const done = await commitContractChange(t.ctx.db, skip(shopId, row));
    expect(done!.row.nextBillingDate).toEqual(addInterval(moved, row.billingInterval as never, row.billingIntervalCount));
    expect((await contractRow(t, row.id)).version).toBe(row.version + 2);
    expect(await eventRows(t, row.id)).toHaveLength(1);
  });

  it('two changes planned from one read, at once: both are applied, one after the other', async () => {
    const { shopId, row } = await seeded();
    const results = await Promise.all([commitContractChange(t.ctx.db, skip(shopId, row)), commitContractChange(t.ctx.db, skip(shopId, row))]);
    const dates = results.map((r) => r!.row.nextBillingDate.getTime()).sort();
    const once = addInterval(row.nextBillingDate, row.billingInterval as never, row.billingIntervalCount);
    expect(dates).toEqual([once.getTime(), addInterval(once, row.billingInterval as never, row.billingIntervalCount).getTime()]);
    expect((await contractRow(t, row.id)).version).toBe(row.version + 2);
    expect(await eventRows(t, row.id)).toHaveLength(2);
  });

  it('concurrent changes of many contracts share one statement', async () => {
    const { shopId } = await t.shopWithKey();
    const seededRows = await Promise.all((await t.seed(shopId, 10)).map((c) => contractRow(t, c.id)));
    const statements: string[] = [];
    const observed = await t.database.observed((q) => statements.push(q));
    try {
      const results = await Promise.all(seededRows.map((r) => commitContractChange(observed, skip(shopId, r))));
      expect(results.every((r) => r!.changed)).toBe(true);
      expect(statements.filter((q) => q.includes('INSERT INTO contract_events'))).toHaveLength(1);
    } finally {
      await observed.close();
    }
  });

  it('a plan that refuses (invalid_state) writes nothing; a plan of nothing writes nothing', async () => {
    const { shopId, row } = await seeded();
    await setContract(t, row.id, { status: 'CANCELLED' });
    await expect(commitContractChange(t.ctx.db, skip(shopId, undefined, { contractId: row.id }))).rejects.toMatchObject({ code: 'invalid_state' });
    const idle = await commitContractChange(t.ctx.db, { ...skip(shopId, undefined, { contractId: row.id }), plan: () => null });
    expect(idle!.changed).toBe(false);
    expect((await contractRow(t, row.id)).version).toBe(row.version);
    expect(await eventRows(t, row.id)).toEqual([]);
  });

  it('a contract of another shop is not found, and nothing is written', async () => {
    const { row } = await seeded();
    const other = await t.shopWithKey();
    await expect(commitContractChange(t.ctx.db, skip(other.shopId, undefined, { contractId: row.id }))).rejects.toMatchObject({ code: 'not_found' });
    expect(await eventRows(t, row.id)).toEqual([]);
  });

  it('several contracts in one transaction: each is planned from its row; one that cannot change answers why, the others commit', async () => {
    const { shopId } = await t.shopWithKey();
    const [a, b, cancelled, leased, idle] = await Promise.all((await t.seed(shopId, 5)).map((c) => contractRow(t, c.id)));
    const other = await t.shopWithKey();
    const [foreign] = await t.seed(other.shopId, 1);
    await setContract(t, cancelled.id, { status: 'CANCELLED' });
    await sql(t, `UPDATE subscription_contracts SET call_lease = gen_random_uuid(), call_lease_until = $2 WHERE id = $1`, [leased.id, new Date(t.clock.now().getTime() + 60_000)]);
    const results = await commitContractChanges(t.ctx.db, [
      skip(shopId, undefined, { contractId: a.id }),
      skip(shopId, undefined, { contractId: cancelled.id }),
      skip(shopId, undefined, { contractId: foreign.id }), // another shop's
      skip(shopId, undefined, { contractId: leased.id }),
      { ...skip(shopId, undefined, { contractId: idle.id }), plan: () => null },
      skip(shopId, undefined, { contractId: b.id }),
    ]);
    expect(results.map((r) => ('code' in r ? r.code : r.changed))).toEqual([true, 'invalid_state', 'not_found', 'platform_unavailable', false, true]);
    for (const [row, events] of [[a, 1], [b, 1], [cancelled, 0], [leased, 0], [idle, 0]] as const) {
      expect((await contractRow(t, row.id)).version).toBe(row.version + events);
      expect(await eventRows(t, row.id)).toHaveLength(events);
    }
    expect((results[0] as { row: ContractRow }).row).toEqual(await contractRow(t, a.id));
  });

  it.skipIf(!onPostgres())('a writer holding the row: the optimistic write gives way at once and the change waits its turn (PostgreSQL)', async () => {
    const { shopId, row } = await seeded();
    const other = await t.database.connectAgain();
    const release = await holdRowLock(other, row.id);
    let settled = false;
    const change = commitContractChange(t.ctx.db, skip(shopId, row)).finally(() => (settled = true));
    // With skipLocked (the resume sweep) it does not wait: another writer has it.
    expect(await commitContractChange(t.ctx.db, skip(shopId, row, { skipLocked: true }))).toBeNull();
    await new Promise((r) => setTimeout(r, 100));
    expect(settled).toBe(false);
    await release();
    expect((await change)!.changed).toBe(true);
    expect(await eventRows(t, row.id)).toHaveLength(1);
    await other.close();
  });
});
