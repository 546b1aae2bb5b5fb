import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONTRACT } from '../src/platform/shopify/documents.js';
import { resumeDueContracts } from '../src/services/resumeDueContracts.js';
import { bearer } from './support/app.js';
import { startPlatform, type InstalledShop, type PlatformHarness } from './support/platform.js';
import { validateAgainstAdminSchema } from './support/shopify/index.js';

/**
 * The convergence property of platform mode (docs/product.md §9): whatever happens to a shop's contracts (actions through
 * the API, changes made on the platform, outages before or after the platform changed, webhooks duplicated, held
 * and released out of order, dropped or late, processing at any moment), once the held webhooks are out, the
 * faults gone, the merchant has opened the app and one reconciliation sweep has run, the mirror equals the platform
 * on status, next billing date and lines, and no change was recorded twice: every event of a contract has its own
 * contract version, the status events form one unbroken chain, and there are no more `platform` status events
 * (`contract.updated` events) than status (data) changes svc did not commit itself: made on the platform, or made by
 * an action or a resume whose answer svc never got. One shop per run, on one svc and one stand-in for all runs.
 */

const RUNS = Number(process.env.PROPERTY_RUNS ?? 200);
const CONTRACTS = 3;
const MINUTE = 60_000;
const DAY = 86_400_000;

// ---- steps ------------------------------------------------------------------------------------------------------

type ApiAction =
  | { action: 'pause'; resumeInMinutes?: number }
  | { action: 'resume' }
  | { action: 'cancel' }
  | { action: 'skip' }
  | { action: 'reschedule'; inDays: number };
type PlatformOp = 'pause' | 'activate' | 'cancel' | 'fail' | 'expire';
type Line = { title: string; quantity: number };
type Outage = 'error-before' | 'error-after' | 'hangup-after';
type Mutation = 'subscriptionContractPause' | 'subscriptionContractActivate' | 'subscriptionContractCancel' | 'subscriptionContractSetNextBillingDate' | 'subscriptionBillingCycleSkip';

type Step =
  | { kind: 'api'; c: number; act: ApiAction }
  /** An action while the inbox is being processed. */
  | { kind: 'api+settle'; c: number; act: ApiAction }
  | { kind: 'platform'; c: number; op: PlatformOp }
  | { kind: 'platform-update'; c: number; nextBillingInDays?: number; lines?: Line[] }
  | { kind: 'outage'; fault: Outage; operation?: Mutation }
  | { kind: 'webhooks'; mode: 'twice' | 'hold' | 'drop' | 'delay'; count: number; ms?: number }
  | { kind: 'release' }
  | { kind: 'settle' }
  | { kind: 'sweep' }
  | { kind: 'advance'; minutes: number };

const contractIndex = fc.integer({ min: 0, max: CONTRACTS - 1 });
const apiAction: fc.Arbitrary<ApiAction> = fc.oneof(
  fc.record({ action: fc.constant('pause' as const), resumeInMinutes: fc.option(fc.integer({ min: 1, max: 90 }), { nil: undefined }) }, { requiredKeys: ['action'] }),
  fc.constant({ action: 'resume' as const }),
  fc.constant({ action: 'cancel' as const }),
  fc.constant({ action: 'skip' as const }),
  fc.record({ action: fc.constant('reschedule' as const), inDays: fc.integer({ min: 1, max: 120 }) }),
);
const line: fc.Arbitrary<Line> = fc.record({ title: fc.constantFrom('Coffee 1kg', 'Tea 500g', 'Cocoa', 'Filters ×100'), quantity: fc.integer({ min: 1, max: 5 }) });

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('api' as const), c: contractIndex, act: apiAction }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('api+settle' as const), c: contractIndex, act: apiAction }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('platform' as const), c: contractIndex, op: fc.constantFrom<PlatformOp>('pause', 'activate', 'activate', 'pause', 'cancel', 'fail', 'expire') }) },
  {
    weight: 2,
    arbitrary: fc
      .record(
        { kind: fc.constant('platform-update' as const), c: contractIndex, nextBillingInDays: fc.integer({ min: 1, max: 90 }), lines: fc.array(line, { minLength: 1, maxLength: 2 }) },
        { requiredKeys: ['kind', 'c'] },
      )
      .filter((s) => s.nextBillingInDays !== undefined || s.lines !== undefined),
  },
  {
    weight: 2,
    arbitrary: fc.record(
      {
        kind: fc.constant('outage' as const),
        fault: fc.constantFrom<Outage>('error-before', 'error-after', 'hangup-after'),
        operation: fc.constantFrom<Mutation>('subscriptionContractPause', 'subscriptionContractActivate', 'subscriptionContractCancel', 'subscriptionContractSetNextBillingDate', 'subscriptionBillingCycleSkip'),
      },
      { requiredKeys: ['kind', 'fault'] },
    ),
  },
  {
    weight: 3,
    arbitrary: fc.oneof(
      fc.record({ kind: fc.constant('webhooks' as const), mode: fc.constantFrom('twice' as const, 'hold' as const, 'drop' as const), count: fc.integer({ min: 1, max: 3 }) }),
      fc.record({ kind: fc.constant('webhooks' as const), mode: fc.constant('delay' as const), count: fc.integer({ min: 1, max: 3 }), ms: fc.integer({ min: 1, max: 40 }) }),
    ),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'release' as const }) },
  { weight: 3, arbitrary: fc.constant({ kind: 'settle' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'sweep' as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('advance' as const), minutes: fc.integer({ min: 1, max: 45 }) }) },
);

// ---- the harness ------------------------------------------------------------------------------------------------

let p: PlatformHarness;
beforeAll(async () => {
  // The stand-in loads the platform's schema on its first request, slower than svc waits: loaded first, then a first
  // install out of the way, before any run.
  validateAgainstAdminSchema(CONTRACT);
  p = await startPlatform({ timeoutMs: 1500 });
  await p.install({ contracts: 1 });
});
afterAll(async () => {
  await p?.close();
});

const act = (s: InstalledShop, id: string, body: object) =>
  p.t.inject({ method: 'POST', url: `/api/v1/subscription-contracts/${id}/actions`, headers: { ...bearer(s.key), 'content-type': 'application/json' }, payload: body });

/** Whole seconds: the platform keeps its dates to the second. */
const at = (offsetMs: number) => new Date(Math.floor((p.clock.now().getTime() + offsetMs) / 1000) * 1000);

function body(a: ApiAction): object {
  switch (a.action) {
    case 'pause':
      return a.resumeInMinutes === undefined ? { action: 'pause' } : { action: 'pause', resumeAt: at(a.resumeInMinutes * MINUTE).toISOString() };
    case 'reschedule':
      return { action: 'reschedule', nextBillingDate: at(a.inDays * DAY).toISOString() };
    case 'cancel':
      return { action: 'cancel', reason: 'property' };
    case 'resume':
    case 'skip':
      return { action: a.action };
  }
}

/**
 * What svc mirrors of a contract on the platform: its status, and the data a `contract.updated` is about (next
 * billing date, lines with their variants and prices, billing policy, customer). Lines set again with the same
 * titles are new lines (new variants): a change too.
 */
type Facts = { status: string; data: string };
const facts = (domain: string, id: string): Facts => {
  const c = p.standIn.contract(domain, id);
  return {
    status: c.status,
    data: JSON.stringify([
      c.nextBillingDate,
      c.lines.map((l) => [l.title, l.quantity, l.variantId, l.currentPrice]),
      c.billingPolicy.interval,
      c.billingPolicy.intervalCount,
      c.customer.id,
      c.customer.email,
    ]),
  };
};
const mirrorStatuses = async (shopId: string) =>
  new Map(
    (await p.t.ctx.db.withSession((q) => q<{ id: string; status: string }>(`SELECT id::text AS id, status FROM subscription_contracts WHERE shop_id = $1`, [shopId]))).map((r) => [
      r.id,
      r.status,
    ]),
  );

type EventRow = { contract_id: string; contract_version: number | null; type: string; actor_type: string; from_status: string; to_status: string };
const STATUS_EVENTS = new Set(['contract.paused', 'contract.resumed', 'contract.cancelled', 'contract.expired', 'contract.failed']);

/** Runs one sequence on a fresh shop, then checks convergence; throws what is wrong. */
async function run(steps: Step[]): Promise<void> {
  const s = await p.install({ contracts: CONTRACTS });
  const installation = await p.t.shopify!.installer.installation(s.shopId);
  if (installation?.importStatus !== 'completed') throw new Error(`the install did not finish: ${JSON.stringify(installation?.importError)}`);
  const { domain } = s;
  const ids = s.contractIds;
  const snapshot = () => ids.map((id) => facts(domain, id));
  /**
   * Per contract, changes on the platform that svc did not commit as its own: made on the platform, or made by an
   * action or a resume whose answer svc never got. Only these may come back as `platform` events.
   */
  const foreign = ids.map(() => ({ status: 0, data: 0 }));
  const answers: string[] = [];
  /** Counts the platform's changes between two snapshots; `ownChange(c)` says svc committed contract c's. */
  const account = (before: Facts[], after: Facts[], ownChange: (c: number) => boolean) => {
    for (let c = 0; c < ids.length; c++) {
      const status = before[c].status !== after[c].status;
      const data = before[c].data !== after[c].data;
      if ((status || data) && !ownChange(c)) {
        if (status) foreign[c].status++;
        if (data) foreign[c].data++;
      }
    }
  };
  /** The resume sweep (actor scheduler): a resume it committed is svc's own change. */
  const sweep = async () => {
    const before = snapshot();
    await resumeDueContracts({ ctx: p.t.ctx, input: { shopId: s.shopId } }).catch(() => undefined);
    const mirror = await mirrorStatuses(s.shopId);
    const after = snapshot();
    account(before, after, (c) => mirror.get(ids[c]) === after[c].status);
  };

  try {
    for (const st of steps) {
      const before = snapshot();
      switch (st.kind) {
        case 'api':
        case 'api+settle': {
          const [res] = await Promise.all([act(s, ids[st.c], body(st.act)), st.kind === 'api+settle' ? p.settle() : Promise.resolve()]);
          answers.push(`${st.c}:${st.act.action}:${res.statusCode}`);
          if (res.statusCode >= 500 && res.statusCode !== 503) throw new Error(`${st.act.action} on contract ${st.c} answered ${res.statusCode}: ${res.body}`);
          const ok = res.statusCode >= 200 && res.statusCode < 300;
          account(before, snapshot(), (c) => ok && c === st.c);
          break;
        }
        case 'platform':
          try {
            p.standIn.platform[st.op](domain, ids[st.c]);
          } catch {
            // A terminated contract: the platform refuses, nothing changes.
          }
          account(before, snapshot(), () => false);
          break;
        case 'platform-update':
          p.standIn.platform.update(domain, ids[st.c], {
            ...(st.nextBillingInDays !== undefined ? { nextBillingDate: at(st.nextBillingInDays * DAY) } : {}),
            ...(st.lines ? { lines: st.lines } : {}),
          });
          account(before, snapshot(), () => false);
          break;
        case 'outage': {
          const scope = { shop: domain, count: 1, ...(st.operation ? { operation: st.operation } : {}) };
          if (st.fault === 'error-before') p.standIn.faults.add({ kind: 'error', status: 503 }, scope);
          else if (st.fault === 'error-after') p.standIn.faults.add({ kind: 'error', status: 503 }, { ...scope, when: 'after' });
          else p.standIn.faults.add({ kind: 'hangup' }, { ...scope, when: 'after' });
          break;
        }
        case 'webhooks':
          p.standIn.webhooks.fault(st.mode === 'delay' ? { mode: 'delay', ms: st.ms ?? 10 } : { mode: st.mode }, { shop: domain, count: st.count });
          break;
        case 'release':
          p.standIn.webhooks.release();
          break;
        case 'settle':
          await p.settle();
          break;
        case 'sweep':
          await sweep();
          break;
        case 'advance':
          p.clock.advance(st.minutes * MINUTE);
          break;
      }
    }

    // The storm ends: held webhooks go out, the faults are gone, the merchant opens the app (which reconnects a
    // shop whose access was lost, as svc's app_not_installed error says), due resumes run, one reconciliation sweep.
    p.standIn.faults.clear();
    p.standIn.webhooks.clearFaults();
    p.standIn.webhooks.release();
    await p.openAdmin(domain);
    await p.settle();
    await sweep();
    await p.t.shopify!.reconciler.syncShop({ id: s.shopId, domain });
    await p.settle();

    // The mirror is the platform.
    for (const [c, id] of ids.entries()) {
      const res = await p.t.inject({ method: 'GET', url: `/api/v1/subscription-contracts/${id}`, headers: bearer(s.key) });
      expect(res.statusCode, `GET contract ${c}: ${res.body}`).toBe(200);
      const mirror = res.json().contract as { status: string; nextBillingDate: string; lines: { title: string; quantity: number }[] };
      const truth = p.standIn.contract(domain, id);
      expect(
        { status: mirror.status, nextBillingDate: new Date(mirror.nextBillingDate).toISOString(), lines: mirror.lines.map((l) => ({ title: l.title, quantity: l.quantity })) },
        `contract ${c} (answers: ${answers.join(' ')})`,
      ).toEqual({
        status: truth.status,
        // The platform's contract without a next billing date: svc keeps its creation date there.
        nextBillingDate: (truth.nextBillingDate ?? truth.createdAt).toISOString(),
        lines: truth.lines.map((l) => ({ title: l.title, quantity: l.quantity })),
      });
    }

    // No change recorded twice.
    const events = await p.t.ctx.db.withSession((q) =>
      q<EventRow>(
        `SELECT contract_id::text AS contract_id, contract_version, type, actor_type, from_status, to_status
           FROM contract_events WHERE shop_id = $1 ORDER BY contract_id, contract_version, id`,
        [s.shopId],
      ),
    );
    for (const [c, id] of ids.entries()) {
      const mine = events.filter((e) => e.contract_id === id);
      const history = `${JSON.stringify(mine.map((e) => `v${e.contract_version} ${e.type}:${e.actor_type} ${e.from_status}->${e.to_status}`))} (answers: ${answers.join(' ')})`;
      const versions = mine.map((e) => e.contract_version);
      expect(versions.every((v) => v !== null), `contract ${c}: every event has a contract version ${history}`).toBe(true);
      expect(new Set(versions).size, `contract ${c}: one event per contract version ${history}`).toBe(versions.length);
      // The status chain is unbroken: each event starts where the one before ended (a repeated change would not).
      if (mine.length) expect(mine[0].from_status, `contract ${c}: the first event starts from the imported status ${history}`).toBe('ACTIVE');
      for (let i = 1; i < mine.length; i++) {
        expect(mine[i].from_status, `contract ${c}: event ${i} starts where event ${i - 1} ended ${history}`).toBe(mine[i - 1].to_status);
      }
      if (mine.length) expect(mine.at(-1)!.to_status, `contract ${c}: the last event ends in the platform's status ${history}`).toBe(p.standIn.contract(domain, id).status);
      const platformStatus = mine.filter((e) => e.actor_type === 'platform' && STATUS_EVENTS.has(e.type)).length;
      const platformUpdates = mine.filter((e) => e.actor_type === 'platform' && e.type === 'contract.updated').length;
      expect(platformStatus, `contract ${c}: platform status events ≤ status changes svc did not commit (${foreign[c].status}) ${history}`).toBeLessThanOrEqual(foreign[c].status);
      expect(platformUpdates, `contract ${c}: platform contract.updated events ≤ data changes svc did not commit (${foreign[c].data}) ${history}`).toBeLessThanOrEqual(foreign[c].data);
    }
  } finally {
    p.standIn.faults.clear();
    p.standIn.webhooks.clearFaults();
    p.standIn.webhooks.release();
    await p.standIn.webhooks.flush();
  }
}

describe('platform mode converges', () => {
  it(
    'after any sequence of actions, platform changes, outages and webhook faults, one sweep makes the mirror the platform, with no change recorded twice',
    async () => {
      const started = Date.now();
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 5, maxLength: 15 }), async (steps) => {
          await run(steps);
        }),
        { numRuns: RUNS },
      );
      console.log(`[platform properties] ${RUNS} runs in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    },
    600_000,
  );
});
