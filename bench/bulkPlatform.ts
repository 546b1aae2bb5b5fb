/**
 * A bulk job in platform mode: one shop's N contracts paused by one job, each item through the platform port against
 * the stand-in of the platform with a real cost bucket (by default 2,000 points, 1,000 restored per second, the
 * figures of a large shop). svc and the stand-in run in this process, on the bench's database (PostgreSQL at
 * DATABASE_URL in a fresh schema, else embedded PGlite), with svc's bulk job worker as in production.
 *
 * Figures (bulkPlatformScenario answers them; the CLI prints them as one JSON line):
 * - paused: contracts the job paused, on the platform;
 * - throttledFailures: items that failed as the platform unavailable (a bucket empty past svc's retry budget is one);
 * - failed: items that failed for any reason;
 * - duplicates: pause mutations beyond one per contract (on the stand-in), and events beyond one per contract in svc;
 * - bucketUseRatio: of the points the bucket restored while the job ran (restore rate × seconds), the share svc spent;
 * - throttledAnswers (for information): THROTTLED answers met and retried, which cost no points.
 * Targets for 5,000 contracts: bucketUseRatio ≥ 0.9, no throttled failure, no duplicate.
 *
 *   npx tsx bench/bulkPlatform.ts [contracts=5000] [restoreRate=1000] [bucket=2000]
 */
import { pathToFileURL } from 'node:url';
import { uniqueShop } from '../test/support/app.js';
import { startPlatform } from '../test/support/platform.js';
import { generateKey } from '../src/services/generateKey.js';
import { setShopPlan } from '../src/services/shops.js';
import { BulkJobWorker } from '../src/workers/bulkJobs.js';
import { benchDatabase } from './support.js';

export type BulkPlatformResult = {
  contracts: number;
  paused: number;
  failed: number;
  throttledFailures: number;
  duplicates: number;
  bucketUseRatio: number;
  throttledAnswers: number;
  seconds: number;
  pointsPerSecond: number;
};

export async function bulkPlatformScenario(opts: { contracts: number; restoreRate?: number; maximumAvailable?: number }): Promise<BulkPlatformResult> {
  const restoreRate = opts.restoreRate ?? 1000;
  const maximumAvailable = opts.maximumAvailable ?? 2000;
  const database = await benchDatabase();
  const testDatabase = { db: database.db, connectAgain: async () => database.db, observed: async () => database.db, url: null, schema: null, drop: database.cleanup };
  const p = await startPlatform({ database: testDatabase, standIn: { bucket: { maximumAvailable, restoreRate }, webhookTimeoutMs: 30_000 }, timeoutMs: 30_000 });
  try {
    const domain = uniqueShop('bulk');
    p.standIn.createShop(domain);
    for (let i = 0; i < opts.contracts; i++) p.standIn.createContract(domain, {}, { silent: true });
    await p.openAdmin(domain);
    const shop = await setShopPlan({ ctx: p.t.ctx, input: { domain, plan: 'enterprise' } });
    const { secret } = await generateKey({ ctx: p.t.ctx, input: { shopId: shop.id, name: 'bench' } });
    await p.settle();
    const imported = await one<{ n: number }>(p, `SELECT count(*)::int AS n FROM subscription_contracts WHERE shop_id = $1 AND status = 'ACTIVE'`, [shop.id]);
    if (imported.n !== opts.contracts) throw new Error(`imported ${imported.n} of ${opts.contracts} contracts`);

    const bucket = p.standIn.shop(domain).bucket;
    // The import left the bucket low: the job starts from a full one.
    while (bucket.status().currentlyAvailable < maximumAvailable) await sleep(50);
    const pausesBefore = p.standIn.calls('subscriptionContractPause', domain).length;
    const start = { at: Date.now(), spent: bucket.spent, level: bucket.status().currentlyAvailable, throttled: bucket.throttled };
    const res = await p.t.inject({
      method: 'POST',
      url: '/api/v1/bulk-jobs',
      headers: { authorization: `Bearer ${secret}` },
      payload: { selector: { filter: { status: ['ACTIVE'] } }, change: { action: 'pause' } },
    });
    if (res.statusCode !== 201) throw new Error(`bulk job not made: ${res.statusCode} ${res.body}`);
    const jobId = (res.json() as { bulkJob: { id: string } }).bulkJob.id;
    const worker = new BulkJobWorker(p.t.ctx, { intervalMs: 200 });
    let status = 'queued';
    while (!['completed', 'failed', 'cancelled'].includes(status)) {
      const { settled } = await worker.tick();
      status = (await one<{ status: string }>(p, `SELECT status FROM bulk_jobs WHERE id = $1`, [jobId])).status;
      if (settled === 0) await sleep(20);
    }
    const seconds = (Date.now() - start.at) / 1000;
    await p.settle();
    const end = { spent: bucket.spent, level: bucket.status().currentlyAvailable, throttled: bucket.throttled };
    const fromRestore = end.spent - start.spent - (start.level - end.level);
    const items = await one<{ succeeded: number; failed: number; throttled: number }>(
      p,
      `SELECT count(*) FILTER (WHERE status = 'succeeded')::int AS succeeded, count(*) FILTER (WHERE status = 'failed')::int AS failed,
              count(*) FILTER (WHERE status = 'failed' AND error_code = 'platform_unavailable')::int AS throttled
         FROM bulk_job_items WHERE job_id = $1`,
      [jobId],
    );
    const events = await one<{ extra: number }>(
      p,
      `SELECT (count(*) - count(DISTINCT contract_id))::int AS extra FROM contract_events WHERE shop_id = $1 AND type = 'contract.paused'`,
      [shop.id],
    );
    const pauses = p.standIn.calls('subscriptionContractPause', domain).length - pausesBefore;
    const pausedOnPlatform = [...p.standIn.shop(domain).contracts.values()].filter((c) => c.status === 'PAUSED').length;
    return {
      contracts: opts.contracts,
      paused: Math.min(items.succeeded, pausedOnPlatform),
      failed: items.failed,
      throttledFailures: items.throttled,
      duplicates: Math.max(0, pauses - pausedOnPlatform) + events.extra,
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

async function one<T>(p: Awaited<ReturnType<typeof startPlatform>>, text: string, params: unknown[]): Promise<T> {
  const [row] = await p.t.ctx.db.withSession((run) => run<T>(text, params));
  return row;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const round = (x: number) => Math.round(x * 1000) / 1000;

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [contracts = 5000, restoreRate = 1000, maximumAvailable = 2000] = process.argv.slice(2).map(Number);
  const result = await bulkPlatformScenario({ contracts, restoreRate, maximumAvailable });
  const targets = { bucketUseRatio: 0.9, throttledFailures: 0, duplicates: 0 };
  const ok = result.bucketUseRatio >= targets.bucketUseRatio && result.throttledFailures === 0 && result.duplicates === 0 && result.paused === contracts;
  console.log(JSON.stringify({ ...result, targets, ok }));
  process.exit(ok ? 0 : 1);
}
