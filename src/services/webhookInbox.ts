import { claimDeliveries, markDone, scheduleRetries, shopsByDomain, type Delivery, type InboxShop, type Retry } from '../db/webhookInbox.js';
import type { PlatformContract } from '../db/mirror.js';
import { mirroredRevisions } from '../db/mirror.js';
import { isNewerRevision } from '../domain/commands/sync.js';
import { ServiceError } from '../domain/errors.js';
import { mapInLanes } from '../lanes.js';
import { ContractBusy } from './changeContract.js';
import type { ServiceContext } from './context.js';
import { syncContracts } from './platformSync.js';

/**
 * The inbox of a platform's webhooks, for any platform: what to do with the deliveries stored at receipt
 * (db/webhookInbox.ts). A platform adapter says what a delivery is about and does the topic's work; the inbox claims
 * rounds (any number of instances), takes a round's contract signals together, and retries with backoff.
 *
 * Contract signals: one read per contract however many signals came (the latest state is what counts), none where
 * the mirror already holds the revision the signal names (a repeat, or the echo of svc's own change), the rest read
 * again from the platform in batches, several batches at once, and applied through platform sync. Other topics
 * follow, in the order they came (a shop's uninstall or erasure after its contract signals).
 */

/** What processing one delivery did, for logs and tests. */
export type Processed = { topic: string; outcome: 'ignored' | 'done' };

/** What the inbox asks of a platform's adapter. */
export type InboxAdapter = {
  /** The contract a delivery is about (a contract signal), or null for any other topic. */
  contractOf(d: Pick<Delivery, 'topic' | 'payload'>): string | null;
  /** The contract revision a signal names, or null when it names none. */
  revisionOf(d: Pick<Delivery, 'topic' | 'payload'>): string | null;
  /** A topic whose work reconciliation also does: set aside after MAX_ATTEMPTS instead of tried for ever. */
  isContractSignal(topic: string): boolean;
  /** How many contracts one read of the platform takes. */
  readonly readBatch: number;
  /** The platform's contracts by id (those it no longer has are left out). */
  readContracts(shop: InboxShop, ids: string[]): Promise<PlatformContract[]>;
  /** The work of one delivery of any other topic. */
  process(d: Delivery, shop: InboxShop): Promise<Processed>;
  /** Topics whose body digest is let go once processed (their bodies can come again, the same, later). */
  readonly releaseDigestOf: readonly string[];
  /**
   * Topics whose deliveries the adapter takes together, a shop's at a time (one read of the platform for many, their
   * changes committed together), before the round's other topics; none when absent.
   */
  readonly batchedTopics?: readonly string[];
  /** The work of a shop's deliveries of `batchedTopics`: answers the failure of each delivery that failed. */
  processBatch?(ds: Delivery[], shop: InboxShop): Promise<Map<Delivery, unknown>>;
};

const LEASE_MS = 60_000;
const MAX_ATTEMPTS = 20;
/** A delivery about a contract a change holds is looked at again this much later. */
const BUSY_RETRY_MS = 1000;
/** Deliveries claimed per round. */
export const INBOX_BATCH = 100;
/** Re-reads in flight at once, each then applied contract by contract. */
const LANES = 4;

export class WebhookInbox {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly adapter: InboxAdapter,
  ) {}

  /** One round: claims up to `limit` due deliveries, oldest first, and processes them. Returns how many. */
  async processDue(limit = INBOX_BATCH): Promise<number> {
    const now = this.ctx.clock.now();
    const claimed = await claimDeliveries(this.ctx.db, now, new Date(now.getTime() + LEASE_MS), limit);
    if (!claimed.length) return 0;
    const failures = new Map<Delivery, unknown>();
    const fail = (ds: Delivery[], err: unknown) => ds.forEach((d) => failures.set(d, err));
    const signals = claimed.filter((d) => this.adapter.contractOf(d) !== null);
    const shops = await shopsByDomain(this.ctx.db, [...new Set(signals.map((d) => d.shop_domain))]);
    const units: (() => Promise<void>)[] = [];
    for (const [domain, ds] of groupBy(signals, (d) => d.shop_domain)) {
      const shop = shops.get(domain);
      if (!shop) continue; // not a shop svc knows: nothing to do
      units.push(...(await this.contractUnits(shop, ds, fail)));
    }
    await mapInLanes(units, LANES, (unit) => unit());
    const batched = new Set(claimed.filter((d) => this.adapter.contractOf(d) === null && this.adapter.batchedTopics?.includes(d.topic)));
    await this.processBatches([...batched], fail);
    for (const d of claimed) {
      if (this.adapter.contractOf(d) !== null || batched.has(d)) continue;
      try {
        // Read again for each: an uninstall earlier in the round changes what a later topic of the shop may do.
        const shop = (await shopsByDomain(this.ctx.db, [d.shop_domain])).get(d.shop_domain);
        if (shop) await this.adapter.process(d, shop);
      } catch (err) {
        fail([d], err);
      }
    }
    await this.settle(claimed, failures);
    const unexpected = [...failures.values()].find((err) => !(err instanceof ServiceError));
    if (unexpected) throw unexpected;
    return claimed.length;
  }

  /** The deliveries of batched topics, a shop's together, several shops at once. */
  private async processBatches(ds: Delivery[], fail: (ds: Delivery[], err: unknown) => void): Promise<void> {
    if (!ds.length || !this.adapter.processBatch) return;
    let shops: Map<string, InboxShop>;
    try {
      shops = await shopsByDomain(this.ctx.db, [...new Set(ds.map((d) => d.shop_domain))]);
    } catch (err) {
      return fail(ds, err);
    }
    const groups = [...groupBy(ds, (d) => d.shop_domain)].flatMap(([domain, list]) => {
      const shop = shops.get(domain);
      return shop ? [{ shop, list }] : []; // not a shop svc knows: nothing to do
    });
    await mapInLanes(groups, LANES, async ({ shop, list }) => {
      try {
        for (const [d, err] of await this.adapter.processBatch!(list, shop)) fail([d], err);
      } catch (err) {
        fail(list, err);
      }
    });
  }

  /** The work for one shop's contract signals: a unit per batch of contracts to read again. */
  private async contractUnits(shop: InboxShop, ds: Delivery[], fail: (ds: Delivery[], err: unknown) => void): Promise<(() => Promise<void>)[]> {
    const byContract = groupBy(ds, (d) => this.adapter.contractOf(d)!);
    let held: Map<string, string | null>;
    try {
      const mirror = await mirroredRevisions(this.ctx.db, shop.id, [...byContract.keys()], this.ctx.clock.now());
      held = new Map([...mirror].map(([id, m]) => [id, m.revision]));
      // A contract a change is carrying out on the platform right now (most often this is that change's echo, come
      // before its commit): looked at again in a moment, when the change has written the platform's answer.
      for (const [id, m] of mirror) {
        if (!m.leased) continue;
        fail(byContract.get(id)!, new ContractBusy());
        byContract.delete(id);
      }
    } catch (err) {
      fail(ds, err);
      return [];
    }
    // A contract needs reading when any of its signals may be newer than the mirror.
    const stale = [...byContract.keys()].filter((id) =>
      byContract.get(id)!.some((d) => {
        const r = this.adapter.revisionOf(d);
        const mine = held.get(id);
        return r === null || mine === undefined || isNewerRevision(r, mine);
      }),
    );
    const units: (() => Promise<void>)[] = [];
    for (let i = 0; i < stale.length; i += this.adapter.readBatch) {
      const chunk = stale.slice(i, i + this.adapter.readBatch);
      units.push(async () => {
        let found: PlatformContract[];
        try {
          found = await this.adapter.readContracts(shop, chunk);
        } catch (err) {
          return fail(chunk.flatMap((id) => byContract.get(id)!), err);
        }
        const contracts = [...new Map(found.map((c) => [c.id, c] as const)).values()];
        let outcomes: Map<string, unknown>;
        try {
          outcomes = await syncContracts(this.ctx, shop.id, contracts, { announce: true });
        } catch (err) {
          return fail(contracts.flatMap((c) => byContract.get(c.id) ?? []), err);
        }
        for (const [id, outcome] of outcomes) if (outcome instanceof Error) fail(byContract.get(id) ?? [], outcome);
      });
    }
    return units;
  }

  /** Marks the round done in one statement; each failure is set to be tried again later (or set aside). */
  private async settle(claimed: Delivery[], failures: Map<Delivery, unknown>): Promise<void> {
    const now = this.ctx.clock.now();
    await markDone(this.ctx.db, claimed.filter((d) => !failures.has(d)).map((d) => d.webhook_id), now, this.adapter.releaseDigestOf);
    const retries = [...failures].map(([d, err]): Retry => {
      const message = (err instanceof ServiceError ? err.message : 'unexpected error').slice(0, 500);
      // A contract busy with a change: again in a second, not counted as an attempt. Else backoff: 5 s, 10 s, … up
      // to 10 minutes; after MAX_ATTEMPTS a contract signal is set aside (reconciliation still converges). Any other
      // topic (an uninstall, a plan change, a privacy request) has nothing else that would redo its work: it goes on
      // being tried every 10 minutes until it succeeds.
      if (err instanceof ContractBusy) return { id: d.webhook_id, at: new Date(now.getTime() + BUSY_RETRY_MS), message, counted: false, aside: null };
      const delay = Math.min(600_000, 5000 * 2 ** Math.min(d.attempts - 1, 10));
      return { id: d.webhook_id, at: new Date(now.getTime() + delay), message, counted: true, aside: d.attempts >= MAX_ATTEMPTS && this.adapter.isContractSignal(d.topic) ? now : null };
    });
    await scheduleRetries(this.ctx.db, retries);
  }
}

function groupBy<T>(xs: T[], key: (x: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const x of xs) {
    const k = key(x);
    const list = out.get(k);
    if (list) list.push(x);
    else out.set(k, [x]);
  }
  return out;
}
