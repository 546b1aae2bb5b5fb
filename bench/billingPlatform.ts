/**
 * A billing storm in platform mode: N contracts of one shop fall due at once, and svc bills them all against the
 * stand-in of the platform with a real cost bucket (by default 2,000 points, 1,000 restored per second, the figures
 * of a large shop). svc and the stand-in run in this process, on the bench's database (PostgreSQL at DATABASE_URL in
 * a fresh schema, else embedded PGlite),
 * with svc's billing worker, its webhook inbox and the platform's webhooks as in production; the stand-in settles
 * every attempt as a success at once.
 *
 * Figures (billingPlatformScenario answers them; the CLI prints them as one JSON line):
 * - billed: contracts whose attempt succeeded and whose next billing date svc set on the platform;
 * - throttledFailures: attempts svc could not hand over because the bucket stayed empty past its budget (they would be
 *   handed over again later, with the same key), plus outcomes that failed to apply for the same reason;
 * - duplicates: attempts beyond one per contract and cycle, on the platform or in svc;
 * - bucketUseRatio: of the points the bucket restored while the storm lasted (restore rate × seconds), the share svc
 *   spent (what it spent beyond the bucket's level at the start);
 * - throttledAnswers (for information): THROTTLED answers met and retried, which cost no points.
 * Targets for 5,000 contracts: bucketUseRatio ≥ 0.9, no throttled failure, no duplicate.
 *
 *   npx tsx bench/billingPlatform.ts [contracts=5000] [restoreRate=1000] [bucket=2000]
 */
import { pathToFileURL } from 'node:url';
import { uniqueShop } from '../test/support/app.js';
import { startPlatform } from '../test/support/platform.js';
import { setShopPlan } from '../src/services/shops.js';
import { BillingWorker } from '../src/workers/billing.js';
import { benchDatabase } from './support.js';

export type BillingStormResult = {
  contracts: number;
  billed: number;
  throttledFailures: number;
  /** Of which: attempts the worker could not hand over at its first try (handed over again later, same key). */
  submitFailures: number;
  duplicates: number;
  bucketUseRatio: number;
  throttledAnswers: number;
  seconds: number;
  pointsPerSecond: number;
};

export async function billingPlatformScenario(opts: { contracts: number; restoreRate?: number; maximumAvailable?: number; concurrency?: number }): Promise<BillingStormResult> {
  const restoreRate = opts.restoreRate ?? 1000;
  const maximumAvailable = opts.maximumAvailable ?? 2000;
  const database = await benchDatabase();
  const testDatabase = { db: database.db, connectAgain: async () => database.db, observed: async () => database.db, url: null, schema: null, drop: database.cleanup };
  const p = await startPlatform({ database: testDatabase, standIn: { bucket: { maximumAvailable, restoreRate }, keepLog: false, webhookTimeoutMs: 30_000 }, timeoutMs: 30_000 });
  try {
    const shopify = p.t.shopify!;
    p.t.ctx.billing = { gateway: shopify.billing, maxLateMs: 3 * 86_400_000 };
    const domain = uniqueShop('storm');
    p.standIn.createShop(domain);
    const due = new Date(Date.now() - 1000).toISOString();
    for (let i = 0; i < opts.contracts; i++) p.standIn.createContract(domain, { nextBillingDate: due }, { silent: true });
    await p.openAdmin(domain);
    const shop = await setShopPlan({ ctx: p.t.ctx, input: { domain, plan: 'enterprise' } });
    await p.settle();

    const bucket = p.standIn.shop(domain).bucket;
    // The import left the bucket low: the storm starts from a full one, as after a quiet night.
    while (bucket.status().currentlyAvailable < maximumAvailable) await sleep(50);
    const start = { at: Date.now(), spent: bucket.spent, level: bucket.status().currentlyAvailable, throttled: bucket.throttled };
    const failures: string[] = [];
    const log = { info: () => {}, warn: () => {}, error: (o: object, m: string) => void failures.push(`${m}: ${JSON.stringify(o)}`) };
    const worker = new BillingWorker(p.t.ctx, { intervalMs: 1000, maxLateMs: 3 * 86_400_000, concurrency: opts.concurrency ?? 32, shopId: shop.id, log });

    let billingDone = false;
    let stop = false;
    const billing = (async () => {
      // The worker's rounds, as it runs in production (each waits for the one before): the first bills every due
      // contract, each attempt waiting its turn at the bucket; a later one hands over what could not be.
      await worker.tick();
      billingDone = true;
      while (!stop) {
        await worker.tick();
        await sleep(1000);
      }
    })();
    let lastOutcomeAt = start.at;
    let settled = 0;
    let outcomeFailures = 0;
    let traced = 0;
    for (;;) {
      let n = 0;
      try {
        n = await shopify.inbox.processDue();
      } catch {
        outcomeFailures++;
      }
      const counted = await count(p, shop.id);
      if (process.env.BENCH_TRACE && Date.now() - traced > 1000) {
        traced = Date.now();
        const total = await p.t.ctx.db.withSession((run) => run<{ n: number }>(`SELECT count(*)::int AS n FROM billing_attempts WHERE shop_id = $1`, [shop.id]));
        console.error(JSON.stringify({ s: Math.round((traced - start.at) / 1000), attempts: total[0].n, created: p.standIn.billing.of(domain).length, ...counted, level: bucket.status().currentlyAvailable }));
      }
      if (counted.settled > settled) {
        settled = counted.settled;
        lastOutcomeAt = Date.now();
      }
      if (billingDone && counted.pending === 0) break;
      if (billingDone && Date.now() - lastOutcomeAt > 120_000) break; // nothing moves any more: stop and report
      if (n === 0) await sleep(20);
    }
    stop = true;
    await billing;
    const seconds = (lastOutcomeAt - start.at) / 1000;
    const end = { spent: bucket.spent, level: bucket.status().currentlyAvailable, throttled: bucket.throttled };
    const fromRestore = end.spent - start.spent - (start.level - end.level);
    const final = await count(p, shop.id);
    if (failures.length) console.error(`${failures.length} failures, the first: ${failures.slice(0, 3).join(' | ')}`);
    const platformAttempts = p.standIn.billing.of(domain);
    const platformCycles = new Set(platformAttempts.map((a) => `${a.contractId}/${a.cycleIndex}`));
    return {
      contracts: opts.contracts,
      billed: final.succeededWithDate,
      throttledFailures: worker.stats.submitFailures + outcomeFailures,
      submitFailures: worker.stats.submitFailures,
      duplicates: platformAttempts.length - platformCycles.size + final.duplicates,
      bucketUseRatio: round(fromRestore / (restoreRate * seconds)),
      throttledAnswers: end.throttled - start.throttled,
      seconds: round(seconds),
      pointsPerSecond: Math.round(fromRestore / seconds),
    };
  } finally {
    await p.close();
    await database.db.close();
    await database.cleanup();
  }
}

async function count(p: Awaited<ReturnType<typeof startPlatform>>, shopId: string) {
  const [row] = await p.t.ctx.db.withSession((run) =>
    run<{ pending: number; settled: number; succeeded_with_date: number; duplicates: number }>(
      `SELECT count(*) FILTER (WHERE b.status = 'pending')::int AS pending,
              count(*) FILTER (WHERE b.status <> 'pending')::int AS settled,
              count(*) FILTER (WHERE b.status = 'succeeded' AND c.next_billing_date > b.cycle_date)::int AS succeeded_with_date,
              (count(*) - count(DISTINCT (b.contract_id, b.cycle_date)))::int AS duplicates
         FROM billing_attempts b JOIN subscription_contracts c ON c.id = b.contract_id WHERE b.shop_id = $1`,
      [shopId],
    ),
  );
  return { pending: row.pending, settled: row.settled, succeededWithDate: row.succeeded_with_date, duplicates: row.duplicates };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const round = (x: number) => Math.round(x * 1000) / 1000;

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [contracts = 5000, restoreRate = 1000, maximumAvailable = 2000] = process.argv.slice(2).map(Number);
  const result = await billingPlatformScenario({ contracts, restoreRate, maximumAvailable });
  const targets = { bucketUseRatio: 0.9, throttledFailures: 0, duplicates: 0 };
  const ok = result.bucketUseRatio >= targets.bucketUseRatio && result.throttledFailures === 0 && result.duplicates === 0 && result.billed === contracts;
  console.log(JSON.stringify({ ...result, targets, ok }));
  process.exit(ok ? 0 : 1);
}
