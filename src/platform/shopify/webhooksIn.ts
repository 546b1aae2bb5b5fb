import { createHmac, timingSafeEqual } from 'node:crypto';
import { inArray } from 'drizzle-orm';
import { Batcher, perDatabase } from '../../db/batcher.js';
import { mapInLanes } from '../../lanes.js';
import { ContractBusy } from '../../db/commitContractChange.js';
import { isDatabaseUnavailable, type Database } from '../../db/client.js';
import { shops } from '../../db/schema.js';
import { ServiceError } from '../../domain/errors.js';
import { fitsInt8 } from '../../domain/contractId.js';
import type { ServiceContext } from '../../services/context.js';
import type { ShopifyAdmin, ShopRef } from './admin.js';
import { contractGid, contractIdOf, isNewerRevision, mirrorFields, type PlatformContract } from './contracts.js';
import * as doc from './documents.js';
import type { ShopifyInstaller } from './install.js';
import { eraseCustomer, eraseShop } from './privacy.js';
import { mirroredRevisions, syncContracts } from './sync.js';

/**
 * Webhooks from the platform (PRODUCT §9). Receiving is cheap and durable: check the HMAC, store the delivery
 * (deduplicated by X-Shopify-Webhook-Id), answer 200. Processing comes after, from the stored row (the inbox
 * worker), so a slow re-read never makes the platform wait past its 5 s, and a crash loses nothing.
 */

export type IncomingWebhook = { rawBody: Buffer; headers: Record<string, string | string[] | undefined> };

const header = (h: IncomingWebhook['headers'], name: string) => {
  const v = h[name];
  return typeof v === 'string' ? v : undefined;
};

/** base64 HMAC-SHA256 of the raw body with the app secret, compared in constant time. */
export function verifyPlatformHmac(rawBody: Buffer, given: string | undefined, secret: string): boolean {
  if (!given) return false;
  const expected = createHmac('sha256', secret).update(rawBody).digest();
  const actual = Buffer.from(given, 'base64');
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/**
 * Verifies and stores one delivery. `stored`: it was new (a repeat is answered 200 too); `pending`: the inbox has
 * work to do for it.
 */
export async function receivePlatformWebhook(ctx: ServiceContext, secret: string, w: IncomingWebhook): Promise<{ stored: boolean; pending: boolean }> {
  if (!verifyPlatformHmac(w.rawBody, header(w.headers, 'x-shopify-hmac-sha256'), secret)) {
    throw new ServiceError('unauthorized', 'The webhook signature (X-Shopify-Hmac-Sha256) is missing or does not match.');
  }
  const topic = header(w.headers, 'x-shopify-topic');
  const shop = header(w.headers, 'x-shopify-shop-domain');
  const id = header(w.headers, 'x-shopify-webhook-id');
  if (!topic || !shop || !id || id.length > 200 || topic.length > 100 || shop.length > 255) {
    throw new ServiceError('invalid_request', 'A webhook needs X-Shopify-Topic, X-Shopify-Shop-Domain and X-Shopify-Webhook-Id.');
  }
  let payload: unknown;
  const raw = w.rawBody.toString('utf8');
  try {
    payload = JSON.parse(raw);
  } catch {
    throw new ServiceError('invalid_request', 'The webhook body is not JSON.');
  }
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) throw new ServiceError('invalid_request', 'The webhook body is not a JSON object.');
  // jsonb cannot hold U+0000 or an unpaired surrogate (JSON allows both, as \u escapes: UTF-8 itself cannot carry a
  // lone surrogate): they are stored as U+FFFD, the payload being a signal and not a record.
  if (SURROGATE_ESCAPE.test(raw)) payload = wellFormed(payload);
  const triggered = header(w.headers, 'x-shopify-triggered-at');
  const triggeredAt = triggered ? storableTime(triggered) : null;
  const text = JSON.stringify(payload).replaceAll('\\u0000', '\\ufffd');
  const signal = { topic, payload: payload as Record<string, unknown> };
  const contract = contractOf(signal);
  const revision = revisionOf(signal);
  const receipt: Receipt = { id, shop, topic, payload: text, receivedAt: ctx.clock.now(), triggeredAt, contract, revision: contract ? revision : null };
  return receipts(ctx.db).load(receipt);
}

// A \u escape of a surrogate (possibly an escaped backslash before it: then the slower path below finds nothing).
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** The value with every unpaired surrogate of its strings (keys included) replaced by U+FFFD. */
function wellFormed(v: unknown): unknown {
  if (typeof v === 'string') return v.replace(LONE_SURROGATE, '\ufffd');
  if (Array.isArray(v)) return v.map(wellFormed);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [wellFormed(k) as string, wellFormed(x)]));
  return v;
}

/** X-Shopify-Triggered-At as a time PostgreSQL stores (years 1 to 9999), or null: it only orders late signals. */
function storableTime(value: string): Date | null {
  const at = new Date(value);
  const year = at.getUTCFullYear();
  return Number.isNaN(at.getTime()) || year < 1 || year > 9999 ? null : at;
}

type Receipt = {
  id: string;
  shop: string;
  topic: string;
  payload: string;
  receivedAt: Date;
  triggeredAt: Date | null;
  contract: string | null;
  /** A contract signal's revision (then `contract` fits a bigint), else null. */
  revision: string | null;
};

/**
 * Stores receipts, new ones only. A contract signal whose revision the mirror already holds (the echo of svc's own
 * action, mostly, or a repeat) is stored as processed: it says nothing the mirror does not, exactly as the inbox
 * would decide (PlatformInbox.contractUnits), and so costs no round of the inbox.
 */
const STORE_RECEIPTS = `
  INSERT INTO platform_webhooks (webhook_id, shop_domain, topic, payload, received_at, triggered_at, processed_at)
  SELECT r.id, r.shop, r.topic, r.payload, r.received, r.triggered,
         CASE WHEN r.revision IS NOT NULL AND EXISTS (
                SELECT 1 FROM subscription_contracts c JOIN shops s ON s.id = c.shop_id
                 WHERE s.domain = r.shop AND c.id = r.contract::bigint AND c.platform_revision >= r.revision::numeric)
              THEN r.received END
    FROM unnest($1::text[], $2::text[], $3::text[], $4::jsonb[], $5::timestamptz[], $6::timestamptz[], $7::text[], $8::text[])
      AS r(id, shop, topic, payload, received, triggered, contract, revision)
  ON CONFLICT (webhook_id) DO NOTHING RETURNING webhook_id, processed_at IS NULL AS pending`;

/**
 * Receipts arriving together are stored in one statement (each caller still answers only once its row is
 * committed): under a burst the platform's deliveries cost the database one insert per batch, not per delivery.
 * Answers whether each was new, and whether it waits for the inbox; of one id twice in a batch, the first.
 */
const receipts = perDatabase(
  (db: Database) =>
    new Batcher<Receipt, { stored: boolean; pending: boolean }>(
      async (rs) => {
        const col = <T>(f: (r: Receipt) => T) => rs.map(f);
        const rows = await db.prepared<{ webhook_id: string; pending: boolean }>('svc_store_platform_webhooks', STORE_RECEIPTS, [
          col((r) => r.id),
          col((r) => r.shop),
          col((r) => r.topic),
          col((r) => r.payload),
          col((r) => r.receivedAt),
          col((r) => r.triggeredAt),
          col((r) => r.contract),
          col((r) => r.revision),
        ]);
        const fresh = new Map(rows.map((r) => [r.webhook_id, r.pending]));
        return rs.map((r) => {
          const pending = fresh.get(r.id);
          fresh.delete(r.id);
          return { stored: pending !== undefined, pending: pending ?? false };
        });
      },
      { failsEveryInput: isDatabaseUnavailable },
    ),
);

type Stored = { webhook_id: string; shop_domain: string; topic: string; payload: Record<string, unknown>; triggered_at: Date | null; attempts: number };

/** What processing one stored delivery did, for logs and tests. */
export type Processed = { topic: string; outcome: 'ignored' | 'done' };

const LEASE_MS = 60_000;
const MAX_ATTEMPTS = 20;
// One statement, so its own transaction: the rows it takes are leased until $2 (any number of instances).
const CLAIM = `
  UPDATE platform_webhooks w SET lease_until = $2, attempts = w.attempts + 1
   WHERE w.webhook_id IN (
     SELECT webhook_id FROM platform_webhooks
      WHERE processed_at IS NULL AND (lease_until IS NULL OR lease_until < $1)
      ORDER BY received_at, webhook_id LIMIT $3 FOR UPDATE SKIP LOCKED)
   RETURNING w.webhook_id, w.shop_domain, w.topic, w.payload, w.triggered_at, w.attempts`;

/** A delivery about a contract an action holds is looked at again this much later. */
const BUSY_RETRY_MS = 1000;
/** Deliveries claimed per round. */
export const INBOX_BATCH = 100;
/** Re-reads (each of up to CONTRACTS_PER_PAGE contracts) in flight at once, each then applied contract by contract. */
const LANES = 4;

type Signal = Pick<Stored, 'topic' | 'payload'>;

/** A topic whose work reconciliation also does (it reads every contract changed since its last sweep). */
const isContractSignal = (topic: string) => topic.startsWith('subscription_contracts/') || topic.startsWith('subscription_billing_cycles/');

/** The contract a signal is about, or null for any other topic. */
function contractOf(w: Signal): string | null {
  const p = w.payload;
  let id: string | null = null;
  if (w.topic.startsWith('subscription_contracts/')) id = contractIdOf(String(p.admin_graphql_api_id ?? '')) ?? idOf(p.id);
  else if (w.topic.startsWith('subscription_billing_cycles/')) id = idOf(p.subscription_contract_id);
  // Past bigint an id names no contract svc can hold: the signal is stored and ignored, rather than failing the
  // round of its shop's other signals.
  return id !== null && fitsInt8(id) ? id : null;
}

/** The contract revision a subscription_contracts/* payload was sent for (a billing cycle's payload has none). */
function revisionOf(w: Signal): string | null {
  const r = w.payload.revision_id;
  return w.topic.startsWith('subscription_contracts/') && (typeof r === 'string' || typeof r === 'number') && /^\d{1,20}$/.test(String(r)) ? String(r) : null;
}

/**
 * Processes stored deliveries: claimed under a lease (any number of instances), retried with backoff. A round's
 * contract signals are taken together: one per contract (the latest state is read, however many signals came),
 * none where the mirror already holds the revision the payload names (a repeat, or the echo of svc's own action),
 * and the rest read again in batches of contracts, several batches at once. Other topics follow, in order.
 */
export class PlatformInbox {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly admin: ShopifyAdmin,
    private readonly installer: ShopifyInstaller,
  ) {}

  /** One round: claims up to `limit` due deliveries, oldest first, and processes them. Returns how many. */
  async processDue(limit = INBOX_BATCH): Promise<number> {
    const now = this.ctx.clock.now();
    const claimed = await this.ctx.db.prepared<Stored>('svc_claim_platform_webhooks', CLAIM, [now, new Date(now.getTime() + LEASE_MS), limit]);
    if (!claimed.length) return 0;
    const failures = new Map<Stored, unknown>();
    const fail = (ws: Stored[], err: unknown) => ws.forEach((w) => failures.set(w, err));
    // Contract signals first: a shop's uninstall or erasure in the same round then comes after them, as it came.
    const signals = claimed.filter((w) => contractOf(w) !== null);
    const shops = await this.shops([...new Set(signals.map((w) => w.shop_domain))]);
    const units: (() => Promise<void>)[] = [];
    for (const [domain, ws] of groupBy(signals, (w) => w.shop_domain)) {
      const shop = shops.get(domain);
      if (!shop) continue; // not a shop svc knows: nothing to do
      units.push(...(await this.contractUnits(shop, ws, fail)));
    }
    await mapInLanes(units, LANES, (unit) => unit());
    for (const w of claimed) {
      if (contractOf(w) !== null) continue;
      try {
        await this.process(w);
      } catch (err) {
        fail([w], err);
      }
    }
    await this.settle(claimed, failures);
    const unexpected = [...failures.values()].find((err) => !(err instanceof ServiceError));
    if (unexpected) throw unexpected;
    return claimed.length;
  }

  /** The work for one shop's contract signals: a unit per batch of contracts to read again. */
  private async contractUnits(shop: ShopRef, ws: Stored[], fail: (ws: Stored[], err: unknown) => void): Promise<(() => Promise<void>)[]> {
    const byContract = groupBy(ws, (w) => contractOf(w)!);
    const ids = [...byContract.keys()];
    let held: Map<string, string | null>;
    try {
      const mirror = await mirroredRevisions(this.ctx, shop.id, ids);
      held = new Map([...mirror].map(([id, m]) => [id, m.revision]));
      // A contract an action is changing on the platform right now (most often this is that action's echo, come
      // before its commit): looked at again in a moment, when the action has written the platform's answer.
      for (const [id, m] of mirror) {
        if (!m.leased) continue;
        fail(byContract.get(id)!, new ContractBusy());
        byContract.delete(id);
      }
    } catch (err) {
      fail(ws, err);
      return [];
    }
    // A contract needs reading when any of its signals may be newer than the mirror.
    const stale = [...byContract.keys()].filter((id) =>
      byContract.get(id)!.some((w) => {
        const r = revisionOf(w);
        const mine = held.get(id);
        return r === null || mine === undefined || isNewerRevision(r, mine);
      }),
    );
    const units: (() => Promise<void>)[] = [];
    for (let i = 0; i < stale.length; i += doc.CONTRACTS_PER_PAGE) {
      const chunk = stale.slice(i, i + doc.CONTRACTS_PER_PAGE);
      units.push(async () => {
        let found: PlatformContract[];
        try {
          found = await this.readContracts(shop, chunk);
        } catch (err) {
          return fail(chunk.flatMap((id) => byContract.get(id)!), err);
        }
        const fields = [...new Map(found.map(mirrorFields).flatMap((f) => (f ? [[f.id, f] as const] : []))).values()];
        let outcomes: Map<string, unknown>;
        try {
          outcomes = await syncContracts(this.ctx, shop.id, fields, { announce: true });
        } catch (err) {
          return fail(fields.flatMap((f) => byContract.get(f.id) ?? []), err);
        }
        for (const [id, outcome] of outcomes) if (outcome instanceof Error) fail(byContract.get(id) ?? [], outcome);
      });
    }
    return units;
  }

  /** The platform's current state of these contracts (those it no longer has are left out). */
  private async readContracts(shop: ShopRef, ids: string[]): Promise<PlatformContract[]> {
    const data = await this.admin.graphql<{ nodes: (PlatformContract | Record<string, never> | null)[] }>(shop, doc.CONTRACTS_BY_ID, { ids: ids.map(contractGid) });
    return data.nodes.filter((n): n is PlatformContract => !!n && 'revisionId' in n);
  }

  /** Marks the round done in one statement; each failure is set to be tried again later (or set aside). */
  private async settle(claimed: Stored[], failures: Map<Stored, unknown>): Promise<void> {
    const now = this.ctx.clock.now();
    const done = claimed.filter((w) => !failures.has(w)).map((w) => w.webhook_id);
    if (done.length) {
      await this.ctx.db.prepared(
        'svc_platform_webhooks_done',
        `UPDATE platform_webhooks SET processed_at = $2, lease_until = NULL, last_error = NULL WHERE webhook_id = ANY($1::text[])`,
        [done, now],
      );
    }
    if (!failures.size) return;
    const retries = [...failures].map(([w, err]) => {
      const message = (err instanceof ServiceError ? err.message : 'unexpected error').slice(0, 500);
      // A contract busy with an action: again in a second, not counted as an attempt. Else backoff: 5 s, 10 s, …
      // up to 10 minutes; after MAX_ATTEMPTS a contract signal is set aside (reconciliation still converges). Any
      // other topic (an uninstall, a plan change, a privacy request) has nothing else that would redo its work: it
      // goes on being tried every 10 minutes until it succeeds.
      if (err instanceof ContractBusy) return { id: w.webhook_id, at: new Date(now.getTime() + BUSY_RETRY_MS), message, counted: false, aside: null };
      const delay = Math.min(600_000, 5000 * 2 ** Math.min(w.attempts - 1, 10));
      return { id: w.webhook_id, at: new Date(now.getTime() + delay), message, counted: true, aside: w.attempts >= MAX_ATTEMPTS && isContractSignal(w.topic) ? now : null };
    });
    await this.ctx.db.prepared(
      'svc_platform_webhooks_retry',
      `UPDATE platform_webhooks w SET lease_until = r.at, last_error = r.message, processed_at = r.aside,
              attempts = w.attempts - CASE WHEN r.counted THEN 0 ELSE 1 END
         FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::boolean[], $5::timestamptz[]) AS r(id, at, message, counted, aside)
        WHERE w.webhook_id = r.id`,
      [retries.map((r) => r.id), retries.map((r) => r.at), retries.map((r) => r.message), retries.map((r) => r.counted), retries.map((r) => r.aside)],
    );
  }

  private async shops(domains: string[]): Promise<Map<string, ShopRef & { uninstalledAt: Date | null }>> {
    if (!domains.length) return new Map();
    const rows = await this.ctx.db.orm
      .select({ id: shops.id, domain: shops.domain, uninstalledAt: shops.uninstalledAt })
      .from(shops)
      .where(inArray(shops.domain, domains));
    return new Map(rows.map((r) => [r.domain, r]));
  }

  private async shop(domain: string): Promise<(ShopRef & { uninstalledAt: Date | null }) | null> {
    return (await this.shops([domain])).get(domain) ?? null;
  }

  /** Processes one stored delivery of a topic other than a contract signal (those go by round: contractUnits). */
  private async process(w: Stored): Promise<Processed> {
    const shop = await this.shop(w.shop_domain);
    const p = w.payload;
    const topic = w.topic;
    if (!shop) return { topic, outcome: 'ignored' };
    switch (topic) {
      case 'app/uninstalled': {
        const row = await this.installer.installation(shop.id);
        // A late uninstall from before the latest install changes nothing.
        if (w.triggered_at && row && w.triggered_at.getTime() < row.installedAt.getTime() && row.accessToken) return { topic, outcome: 'ignored' };
        await this.ctx.db.transaction(async (run) => {
          await run(`UPDATE shops SET uninstalled_at = $2, updated_at = $2 WHERE id = $1`, [shop.id, this.ctx.clock.now()]);
          await this.admin.forgetTokens(shop.id, run);
        });
        return { topic, outcome: 'done' };
      }
      case 'app_subscriptions/update':
        // A signal: the shop's active subscriptions now decide the plan. Uninstalled: the tokens are gone, and so
        // is API access whatever the plan says.
        if (shop.uninstalledAt) return { topic, outcome: 'ignored' };
        await this.installer.refreshPlan(shop);
        return { topic, outcome: 'done' };
      case 'bulk_operations/finish':
        this.installer.bulkFinished(shop.id);
        return { topic, outcome: 'done' };
      case 'customers/redact': {
        const customer = idOf((p.customer as Record<string, unknown> | undefined)?.id);
        if (customer) await eraseCustomer(this.ctx, shop.id, w.shop_domain, customer);
        return { topic, outcome: 'done' };
      }
      case 'shop/redact':
        await eraseShop(this.ctx, shop.id, w.shop_domain);
        this.admin.forgetCachedToken(shop.id);
        return { topic, outcome: 'done' };
      case 'customers/data_request': {
        await this.ctx.db.withSession((run) =>
          run(`INSERT INTO compliance_requests (shop_domain, topic, customer_id, payload, received_at) VALUES ($1, $2, $3, $4::jsonb, $5)`, [
            w.shop_domain,
            topic,
            idOf((p.customer as Record<string, unknown> | undefined)?.id),
            JSON.stringify(p),
            this.ctx.clock.now(),
          ]),
        );
        return { topic, outcome: 'done' };
      }
      default:
        return { topic, outcome: 'ignored' };
    }
  }
}

/** A numeric id from a payload (a number, a numeric string, or a gid), or null. */
function idOf(v: unknown): string | null {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v > 0) return String(v);
  if (typeof v === 'string') {
    const m = /^(?:gid:\/\/shopify\/\w+\/)?(\d{1,19})$/.exec(v);
    return m ? m[1] : null;
  }
  return null;
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
