import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ResumeSweep } from '../src/workers/resumeSweep.js';
import type { ServiceContext } from '../src/services/context.js';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { onPostgres } from './support/db.js';
import { API, contractRow, eventRows, insertContract, sql } from './support/fixtures.js';

/** Scheduled resume (docs/product.md §3): by itself, exactly once, after a restart, and visible to reads before the sweep. */

const NOW = new Date('2026-11-22T10:00:00.000Z');
const RESUME_AT = '2026-11-22T12:00:00.000Z';
let t: TestApp;
let key: string;
let shopId: string;
beforeAll(async () => {
  t = await startTestApp();
  ({ key, shopId } = await t.shopWithKey());
});
beforeEach(() => t.clock.set(NOW));
afterAll(() => t.close());

/** A contract paused through the API until RESUME_AT (or `resumeAt`). */
async function pausedUntilResume(resumeAt = RESUME_AT): Promise<string> {
  const c = await insertContract(t, shopId);
  const res = await t.inject({ method: 'POST', url: `${API}/${c.id}/actions`, headers: bearer(key), payload: { action: 'pause', resumeAt } });
  expect(res.statusCode).toBe(200);
  return c.id;
}

const resumedEvents = async (id: string) => (await eventRows(t, id)).filter((e) => e.type === 'contract.resumed');
const pastResume = () => t.clock.set(new Date(new Date(RESUME_AT).getTime() + 1000));

describe('tick()', () => {
  it('does nothing before resumeAt and resumes at it, with one contract.resumed event by the scheduler', async () => {
    const id = await pausedUntilResume();
    const scheduler = new ResumeSweep(t.ctx, { intervalMs: 1000 });
    t.clock.set(new Date(new Date(RESUME_AT).getTime() - 1));
    await scheduler.tick();
    expect((await contractRow(t, id)).status).toBe('PAUSED');

    t.clock.set(RESUME_AT);
    expect(await scheduler.tick()).toBeGreaterThanOrEqual(1);
    const row = await contractRow(t, id);
    expect(row).toMatchObject({ status: 'ACTIVE', pausedAt: null, resumeAt: null });
    const events = await resumedEvents(id);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ actorType: 'scheduler', actorKeyFingerprint: null, fromStatus: 'PAUSED', toStatus: 'ACTIVE' });
    expect(events[0].at.toISOString()).toBe(RESUME_AT);

    // Ticking again changes nothing.
    t.clock.advance(3_600_000);
    await scheduler.tick();
    expect(await resumedEvents(id)).toHaveLength(1);
  });

  it('leaves paused contracts without resumeAt alone', async () => {
    const c = await insertContract(t, shopId);
    await t.inject({ method: 'POST', url: `${API}/${c.id}/actions`, headers: bearer(key), payload: { action: 'pause' } });
    t.clock.set('2031-01-01T00:00:00Z');
    await new ResumeSweep(t.ctx, { intervalMs: 1000 }).tick();
    expect((await contractRow(t, c.id)).status).toBe('PAUSED');
  });

  it(`two schedulers ticking concurrently${onPostgres() ? ' on separate pools' : ''} resume N contracts with exactly N events`, async () => {
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push(await pausedUntilResume());
    pastResume();
    const otherCtx: ServiceContext = { ...t.ctx, db: await t.database.connectAgain() };
    const a = new ResumeSweep(t.ctx, { intervalMs: 1000, batchSize: 3 });
    const b = new ResumeSweep(otherCtx, { intervalMs: 1000, batchSize: 3 });
    const [ra, rb, ra2, rb2] = await Promise.all([a.tick(), b.tick(), a.tick(), b.tick()]);
    expect(ra + rb + ra2 + rb2).toBeGreaterThanOrEqual(ids.length);
    for (const id of ids) {
      expect((await contractRow(t, id)).status).toBe('ACTIVE');
      expect(await resumedEvents(id)).toHaveLength(1);
    }
    const [{ n }] = await sql<{ n: number }>(
      t,
      `SELECT count(*)::int AS n FROM contract_events WHERE type = 'contract.resumed' AND contract_id = ANY($1::bigint[])`,
      [ids],
    );
    expect(n).toBe(ids.length);
  });

  it.skipIf(!onPostgres())('a sweep goes on past a batch that another writer partly holds, and resumes everything else due', async () => {
    // The oldest due contract is held by another writer (a transaction on another connection) for the whole sweep:
    // each batch of 3 then resumes only 2. The sweep must not take that for "nothing more is due".
    const held = await pausedUntilResume('2026-11-22T11:00:00.000Z');
    const rest: string[] = [];
    for (let i = 0; i < 6; i++) rest.push(await pausedUntilResume());
    pastResume();
    const other = await t.database.connectAgain();
    try {
      const resumed = await other.transaction(async (run) => {
        await run(`SELECT id FROM subscription_contracts WHERE id = $1 FOR UPDATE`, [held]);
        return new ResumeSweep(t.ctx, { intervalMs: 1000, batchSize: 3 }).tick();
      });
      expect(resumed).toBe(rest.length);
      for (const id of rest) expect((await contractRow(t, id)).status).toBe('ACTIVE');
      // Once its holder let go, the next sweep resumes it, once.
      expect((await contractRow(t, held)).status).toBe('PAUSED');
      expect(await new ResumeSweep(t.ctx, { intervalMs: 1000, batchSize: 3 }).tick()).toBe(1);
      expect(await resumedEvents(held)).toHaveLength(1);
    } finally {
      await other.close();
    }
  });

  it('a scheduler created after the moment (a restart) catches up on what was missed', async () => {
    const ids = [await pausedUntilResume(), await pausedUntilResume()];
    t.clock.set('2026-11-25T00:00:00Z'); // days later: no process was running
    const restarted = new ResumeSweep(t.ctx, { intervalMs: 1000 });
    expect(await restarted.tick()).toBeGreaterThanOrEqual(2);
    for (const id of ids) {
      expect((await contractRow(t, id)).status).toBe('ACTIVE');
      expect(await resumedEvents(id)).toHaveLength(1);
    }
    expect(restarted.stats.lastLagMs).toBeGreaterThan(0);
  });
});

describe('reads and actions after resumeAt, before any sweep', () => {
  it('GET sees it ACTIVE; the sweep afterwards writes no second event', async () => {
    const id = await pausedUntilResume();
    pastResume();
    const res = await t.inject({ url: `${API}/${id}`, headers: bearer(key) });
    expect(res.json().contract).toMatchObject({ status: 'ACTIVE', pausedAt: null, resumeAt: null });
    expect((await t.inject({ url: `${API}/${id}`, headers: bearer(key) })).json().contract.status).toBe('ACTIVE');
    await new ResumeSweep(t.ctx, { intervalMs: 1000 }).tick();
    const events = await resumedEvents(id);
    expect(events).toHaveLength(1);
    expect(events[0].actorType).toBe('scheduler');
  });

  it('the list sees it ACTIVE (and not under status=PAUSED)', async () => {
    const id = await pausedUntilResume();
    pastResume();
    const paused = (await t.inject({ url: `${API}?status=PAUSED&limit=100`, headers: bearer(key) })).json().contracts;
    expect(paused.map((c: { id: string }) => c.id)).not.toContain(id);
    const all = (await t.inject({ url: `${API}?limit=100`, headers: bearer(key) })).json().contracts;
    expect(all.find((c: { id: string }) => c.id === id).status).toBe('ACTIVE');
    await new ResumeSweep(t.ctx, { intervalMs: 1000 }).tick();
    expect(await resumedEvents(id)).toHaveLength(1);
  });

  it('the events list already shows the resume', async () => {
    const id = await pausedUntilResume();
    pastResume();
    const { events } = (await t.inject({ url: `${API}/${id}/events`, headers: bearer(key) })).json();
    expect(events[0]).toMatchObject({ type: 'contract.resumed', actor: { type: 'scheduler' } });
    await new ResumeSweep(t.ctx, { intervalMs: 1000 }).tick();
    expect(await resumedEvents(id)).toHaveLength(1);
  });

  it('an action applies to the resumed contract: skip succeeds, resume is refused as already ACTIVE', async () => {
    const id = await pausedUntilResume();
    pastResume();
    const skip = await t.inject({ method: 'POST', url: `${API}/${id}/actions`, headers: bearer(key), payload: { action: 'skip' } });
    expect(skip.statusCode).toBe(200);
    expect(skip.json().contract.status).toBe('ACTIVE');
    const resume = await t.inject({ method: 'POST', url: `${API}/${id}/actions`, headers: bearer(key), payload: { action: 'resume' } });
    expect(resume.statusCode).toBe(409);
    expect(resume.json().error.message).toContain('ACTIVE');
    await new ResumeSweep(t.ctx, { intervalMs: 1000 }).tick();
    expect((await eventRows(t, id)).map((e) => `${e.type}/${e.actorType}`)).toEqual([
      'contract.paused/api_key',
      'contract.resumed/scheduler',
      'contract.skipped/api_key',
    ]);
  });

  it('many parallel reads right after the moment write one event', async () => {
    const id = await pausedUntilResume();
    pastResume();
    const scheduler = new ResumeSweep(t.ctx, { intervalMs: 1000 });
    const results = await Promise.all([
      ...Array.from({ length: 6 }, () => t.inject({ url: `${API}/${id}`, headers: bearer(key) })),
      t.inject({ url: `${API}/${id}/events`, headers: bearer(key) }),
      t.inject({ url: API, headers: bearer(key) }),
      scheduler.tick(),
    ]);
    for (const r of results.slice(0, 6)) expect((r as { json(): any }).json().contract.status).toBe('ACTIVE');
    expect(await resumedEvents(id)).toHaveLength(1);
  });
});

describe('start() and stop()', () => {
  it('a started scheduler resumes a due contract by itself within 2 seconds', async () => {
    const id = await pausedUntilResume();
    pastResume();
    const scheduler = new ResumeSweep(t.ctx, { intervalMs: 50 });
    scheduler.start();
    try {
      const deadline = Date.now() + 2000;
      while ((await contractRow(t, id)).status !== 'ACTIVE' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    } finally {
      await scheduler.stop();
    }
    expect((await contractRow(t, id)).status).toBe('ACTIVE');
    expect(await resumedEvents(id)).toHaveLength(1);
    expect(scheduler.stats.ticks).toBeGreaterThanOrEqual(1);
    // Stopped: a contract that falls due afterwards stays paused until something reads it or a sweep runs.
    t.clock.set(NOW);
    const later = await pausedUntilResume();
    pastResume();
    const ticks = scheduler.stats.ticks;
    await new Promise((r) => setTimeout(r, 150));
    expect(scheduler.stats.ticks).toBe(ticks);
    expect((await contractRow(t, later)).status).toBe('PAUSED');
  });
});
