import { createHmac, timingSafeEqual } from 'node:crypto';
import type { PlatformContract as MirroredContract } from '../../db/mirror.js';
import { inboxReceipts, type Delivery, type InboxShop, type ReceiptRow, type Stored } from '../../db/webhookInbox.js';
import { ServiceError } from '../../domain/errors.js';
import { fitsInt8 } from '../../domain/ids.js';
import { parseJson } from '../../domain/json.js';
import type { ServiceContext } from '../../services/context.js';
import { WebhookInbox, type InboxAdapter, type Processed } from '../../services/webhookInbox.js';
import type { ShopifyAdmin, ShopRef } from './admin.js';
import { contractGid, contractIdOf, mirrorFields, type PlatformContract } from './contracts.js';
import * as doc from './documents.js';
import type { ShopifyInstaller } from './install.js';
import { eraseCustomer } from '../../services/privacy.js';
import { applyShopRedact, applyUninstall, type UninstallDeps } from './uninstallConfirmation.js';
import { applyAttemptSignals } from './billing.js';
import { checkWebhookBody, receiptDigest } from './webhookChecks.js';
import { BILLING_ATTEMPT_TOPICS, BILLING_CYCLE_TOPICS, CONFIRMED_TOPICS, CONTRACT_TOPICS, isTopic, type Topic } from './topics.js';

export { INBOX_BATCH } from '../../services/webhookInbox.js';

/**
 * Webhooks from the platform. Receiving is cheap and durable: check the HMAC, the body against its topic and shop
 * (webhookChecks.ts), store the delivery (deduplicated by X-Shopify-Webhook-Id and by the digest of its topic, shop
 * and body: db/webhookInbox.ts), answer 200. Processing comes after, from the stored row (the platform-neutral inbox,
 * services/webhookInbox.ts, with this platform's adapter below), so a slow re-read never makes the platform wait past
 * its 5 s, and a crash loses nothing; an uninstall or a shop's erasure is confirmed with the platform there first
 * (uninstallConfirmation.ts).
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
 * What became of one delivery: `stored` when it was new (a repeat is answered 200 too); `pending` when the inbox has
 * work to do for it; `refused` (why, without anything of the body) when its body does not pass its topic's checks:
 * answered 200 as well, neither stored nor acted on.
 */
export type Receipt = Stored & { refused?: string };

/** Verifies and stores one delivery. */
export async function receivePlatformWebhook(ctx: ServiceContext, secret: string, w: IncomingWebhook): Promise<Receipt> {
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
    payload = parseJson(raw);
  } catch {
    throw new ServiceError('invalid_request', 'The webhook body is not JSON.');
  }
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) throw new ServiceError('invalid_request', 'The webhook body is not a JSON object.');
  // jsonb cannot hold U+0000 or an unpaired surrogate (JSON allows both, as \u escapes: UTF-8 itself cannot carry a
  // lone surrogate): they are stored as U+FFFD, the payload being a signal and not a record.
  if (SURROGATE_ESCAPE.test(raw)) payload = wellFormed(payload);
  const check = checkWebhookBody(topic, shop, payload as Record<string, unknown>);
  if (check) return { stored: false, pending: false, refused: check.refused };
  const triggered = header(w.headers, 'x-shopify-triggered-at');
  const triggeredAt = triggered ? storableTime(triggered) : null;
  const text = JSON.stringify(payload).replaceAll('\\u0000', '\\ufffd');
  const signal = { topic, payload: payload as Record<string, unknown> };
  const contract = contractOf(signal);
  const revision = revisionOf(signal);
  const digest = receiptDigest(topic, shop, w.rawBody);
  const row: ReceiptRow = { id, shop, topic, payload: text, digest, receivedAt: ctx.clock.now(), triggeredAt, contract, revision: contract ? revision : null };
  return inboxReceipts(ctx.db).load(row);
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

type Signal = Pick<Delivery, 'topic' | 'payload'>;

/**
 * A topic whose work something else redoes: reconciliation reads every contract changed since its last sweep, and the
 * billing poller reads every attempt still pending after ten minutes.
 */
const SIGNAL_TOPICS: readonly string[] = [...CONTRACT_TOPICS, ...BILLING_CYCLE_TOPICS, ...BILLING_ATTEMPT_TOPICS];
const isContractSignal = (topic: string) => SIGNAL_TOPICS.includes(topic);

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
 * The platform's side of the inbox (services/webhookInbox.ts holds the rest): what each topic's delivery is about
 * and the work of each topic that is not a contract signal.
 */
export class ShopifyInboxAdapter implements InboxAdapter {
  readonly readBatch = doc.CONTRACTS_PER_PAGE;
  readonly releaseDigestOf = CONFIRMED_TOPICS;
  readonly contractOf = contractOf;
  readonly revisionOf = revisionOf;
  readonly isContractSignal = isContractSignal;
  readonly batchedTopics = BILLING_ATTEMPT_TOPICS;

  constructor(
    private readonly ctx: ServiceContext,
    private readonly admin: ShopifyAdmin,
    private readonly installer: ShopifyInstaller,
  ) {}

  async readContracts(shop: ShopRef, ids: string[]): Promise<MirroredContract[]> {
    const data = await this.admin.graphql<{ nodes: (PlatformContract | Record<string, never> | null)[] }>(shop, doc.CONTRACTS_BY_ID, { ids: ids.map(contractGid) });
    return data.nodes.flatMap((n) => {
      const f = n && 'revisionId' in n ? mirrorFields(n as PlatformContract) : null;
      return f ? [f] : [];
    });
  }

  /**
   * A shop's billing attempt webhooks, together (billing.ts). An uninstalled shop is billed no more, and its token is
   * gone: its attempts cannot be read, and are left as they stand.
   */
  async processBatch(ds: Delivery[], shop: InboxShop): Promise<Map<Delivery, unknown>> {
    if (shop.uninstalledAt) return new Map();
    return applyAttemptSignals(this.ctx, this.admin, shop, ds);
  }

  private destructive(): UninstallDeps {
    return { ctx: this.ctx, admin: this.admin, installer: this.installer };
  }

  async process(w: Delivery, shop: InboxShop): Promise<Processed> {
    // A topic svc does not know (a row stored by another version of svc): nothing to do.
    const outcome = isTopic(w.topic) ? await this.handlers[w.topic](w, shop) : 'ignored';
    return { topic: w.topic, outcome };
  }

  /** The work of each topic's delivery (topics.ts): a topic without a handler does not compile. */
  private readonly handlers: { readonly [T in Topic]: (w: Delivery, shop: InboxShop) => Promise<Processed['outcome']> } = {
    'subscription_contracts/create': signalOfNoContract,
    'subscription_contracts/update': signalOfNoContract,
    'subscription_contracts/activate': signalOfNoContract,
    'subscription_contracts/pause': signalOfNoContract,
    'subscription_contracts/cancel': signalOfNoContract,
    'subscription_contracts/expire': signalOfNoContract,
    'subscription_contracts/fail': signalOfNoContract,
    'subscription_billing_cycles/skip': signalOfNoContract,
    'subscription_billing_cycles/unskip': signalOfNoContract,
    'subscription_billing_attempts/success': takenInBatches,
    'subscription_billing_attempts/failure': takenInBatches,
    'subscription_billing_attempts/challenged': takenInBatches,
    'app/uninstalled': async (w, shop) => applyUninstall(this.destructive(), shop, { webhookId: w.webhook_id, triggeredAt: w.triggered_at }),
    'app_subscriptions/update': async (_w, shop) => {
      // A signal: the shop's active subscriptions now decide the plan. Uninstalled: the tokens are gone, and so
      // is API access whatever the plan says.
      if (shop.uninstalledAt) return 'ignored';
      await this.installer.refreshPlan(shop);
      return 'done';
    },
    'bulk_operations/finish': async (_w, shop) => {
      this.installer.bulkFinished(shop.id);
      return 'done';
    },
    'customers/redact': async (w, shop) => {
      const customer = idOf((w.payload.customer as Record<string, unknown> | undefined)?.id);
      if (customer) await eraseCustomer(this.ctx, shop.id, w.shop_domain, customer);
      return 'done';
    },
    'shop/redact': async (w, shop) => applyShopRedact(this.destructive(), shop, { webhookId: w.webhook_id }),
    'customers/data_request': async (w) => {
      await this.ctx.db.withSession((run) =>
        run(`INSERT INTO compliance_requests (shop_domain, topic, customer_id, payload, received_at) VALUES ($1, $2, $3, $4::jsonb, $5)`, [
          w.shop_domain,
          w.topic,
          idOf((w.payload.customer as Record<string, unknown> | undefined)?.id),
          JSON.stringify(w.payload),
          this.ctx.clock.now(),
        ]),
      );
      return 'done';
    },
  };
}

/**
 * The contract topics are taken by the inbox as contract signals (the contract read again); one reaches a handler
 * only when it names no contract svc can hold (an id past bigint): stored, and ignored.
 */
const signalOfNoContract = async (): Promise<Processed['outcome']> => 'ignored';

/** The billing attempt topics are taken a shop's at a time (processBatch), never one by one. */
const takenInBatches = async (): Promise<Processed['outcome']> => 'ignored';

/** The inbox of platform mode: the neutral inbox with this platform's adapter. */
export class PlatformInbox extends WebhookInbox {
  constructor(ctx: ServiceContext, admin: ShopifyAdmin, installer: ShopifyInstaller) {
    super(ctx, new ShopifyInboxAdapter(ctx, admin, installer));
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
