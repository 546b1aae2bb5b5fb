import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { CONTRACT_EVENT_TYPES, type ContractEventType } from './commands/registry.js';

export type { ContractEventType };
import { isStorableText, StoredText } from './text.js';

/** Outgoing webhooks (docs/product.md §10): what an endpoint is, what is sent, and when a failed delivery is tried again. */

/**
 * Events about the shop rather than one contract: `api_key.leaked` (a key reported found in public and revoked at
 * once), `bulk_job.previewed` and `bulk_job.finished` (a bulk job's preview or run ended: `data: { bulkJob }`).
 * Their payload is `{ type, timestamp, data }` with the event's own data (no contract, no version).
 */
export const SHOP_EVENT_TYPES = ['api_key.leaked', 'bulk_job.previewed', 'bulk_job.finished'] as const;
export type ShopEventType = (typeof SHOP_EVENT_TYPES)[number];
export const isShopEventType = (type: string): type is ShopEventType => (SHOP_EVENT_TYPES as readonly string[]).includes(type);

/** Every event type an endpoint may subscribe to: each event a contract command records (the registry's list), then the shop's. */
export const WEBHOOK_EVENT_TYPES = [...CONTRACT_EVENT_TYPES, ...SHOP_EVENT_TYPES] as [ContractEventType | ShopEventType, ...(ContractEventType | ShopEventType)[]];
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/**
 * What each event type means, in the merchant's words: the list Settings → Webhooks shows (GET
 * /admin/api/webhook-event-types), so a type an endpoint may subscribe to cannot be missing from it.
 */
const WEBHOOK_EVENT_DESCRIPTIONS: Record<WebhookEventType, string> = {
  'contract.paused': 'A contract was paused: by a key, MCP, the admin, the platform, or when its payments ran out and the billing policy pauses.',
  'contract.pause_updated': 'A paused contract got a new resume date, or lost it (paused until resumed).',
  'contract.resumed': 'A contract was resumed: by hand, or by itself on its resume date.',
  'contract.cancelled': 'A contract was cancelled: by hand, on the platform, or when its payments ran out and the billing policy cancels.',
  'contract.skipped': 'The next order of a contract was skipped, and its next billing date moved on one interval.',
  'contract.rescheduled': 'The next billing date of a contract was changed.',
  'contract.updated': 'A contract was edited (lines, frequency, shipping address, discounts: data.changes says what changed), or changed on the platform.',
  'contract.created': 'A contract was created on the platform (platform mode).',
  'contract.expired': 'A contract expired on the platform (platform mode).',
  'contract.failed': 'A contract failed: its payment retries ran out, or it failed on the platform.',
  'billing.attempted': 'A renewal was started: a billing attempt awaits its outcome.',
  'billing.succeeded': 'A renewal was paid: the order was made and the next billing date moved on.',
  'billing.failed': 'A renewal payment failed; it is retried as the shop\'s billing policy says.',
  'billing.action_required': 'A renewal awaits the customer (3-D Secure, say) before it can be paid.',
  'billing.missed': 'A renewal was too late to bill (after an outage) and was skipped; the next billing date moved on.',
  'api_key.leaked': 'An API key of the shop was found in public (GitHub secret scanning) and revoked at once.',
  'bulk_job.previewed': 'A bulk job\'s preview is ready: its counts, totals and problems, waiting to be started.',
  'bulk_job.finished': 'A bulk job ended: it ran to the end, was cancelled, failed, or its preview expired unstarted; data.bulkJob has its status and counts.',
};

/** Every event type an endpoint may subscribe to, with what it means, in WEBHOOK_EVENT_TYPES' order. */
export const webhookEventTypeList = (): { type: WebhookEventType; description: string }[] =>
  WEBHOOK_EVENT_TYPES.map((type) => ({ type, description: WEBHOOK_EVENT_DESCRIPTIONS[type] }));

/** The data of an `api_key.leaked` event: which key (never the key itself), and where the report says it was found. */
export type KeyLeakedData = { key: { id: string; name: string | null; fingerprint: string }; url: string | null; source: string | null };

export const MAX_WEBHOOK_ENDPOINTS = 10;

type Status = 'ACTIVE' | 'PAUSED' | 'CANCELLED' | 'EXPIRED' | 'FAILED';

/** What each event type's test event says happened: the status before and after, as a real event of it would. */
const TEST_TRANSITIONS: Record<ContractEventType, readonly [from: Status | null, to: Status]> = {
  'contract.paused': ['ACTIVE', 'PAUSED'],
  'contract.pause_updated': ['PAUSED', 'PAUSED'],
  'contract.resumed': ['PAUSED', 'ACTIVE'],
  'contract.cancelled': ['ACTIVE', 'CANCELLED'],
  'contract.skipped': ['ACTIVE', 'ACTIVE'],
  'contract.rescheduled': ['ACTIVE', 'ACTIVE'],
  'contract.updated': ['ACTIVE', 'ACTIVE'],
  'contract.created': [null, 'ACTIVE'],
  'contract.expired': ['ACTIVE', 'EXPIRED'],
  'contract.failed': ['ACTIVE', 'FAILED'],
  'billing.attempted': ['ACTIVE', 'ACTIVE'],
  'billing.succeeded': ['ACTIVE', 'ACTIVE'],
  'billing.failed': ['ACTIVE', 'ACTIVE'],
  'billing.action_required': ['ACTIVE', 'ACTIVE'],
  'billing.missed': ['ACTIVE', 'ACTIVE'],
};

/**
 * A test event of a type: the event and a sample contract (id "0") in the state that event leaves a contract in,
 * shaped as every delivery is. Its version is 0, below every real contract's, so a receiver that applies only newer
 * versions never applies it; `test: true` says what it is, in the payload and in the event's data.
 */
export function testEvent(type: ContractEventType, deliveryId: string, at: Date) {
  const [from, to] = TEST_TRANSITIONS[type];
  const when = at.toISOString();
  const event = { id: `test_${deliveryId}`, type, at: when, actor: { type: 'admin' }, from, to, data: { test: true } };
  const contract = {
    id: '0',
    status: to,
    customer: { id: '0', email: 'test@example.com' },
    billingPolicy: { interval: 'MONTH', intervalCount: 1 },
    deliveryPolicy: { interval: 'MONTH', intervalCount: 1 },
    nextBillingDate: new Date(at.getTime() + 30 * 86_400_000).toISOString(),
    lines: [{ id: '00000000-0000-4000-8000-000000000000', title: 'Test product', variantId: '0', quantity: 1, price: { amount: '10.00', currencyCode: 'USD' } }],
    shippingAddress: null,
    discounts: [],
    totals: { subtotal: '10.00', discounts: '0.00', shipping: '0.00', total: '10.00', currencyCode: 'USD' },
    pausedAt: to === 'PAUSED' ? when : null,
    resumeAt: null,
    cancelledAt: to === 'CANCELLED' ? when : null,
    cancellationReason: null,
    billing: { status: 'ok', failedAttempts: 0, nextAttemptAt: null, lastAttempt: null },
    createdAt: when,
    updatedAt: when,
  };
  return { event, contract, version: 0 };
}

export const WebhookEventFilter = z
  .array(z.enum([...WEBHOOK_EVENT_TYPES, '*']))
  .min(1)
  .max(WEBHOOK_EVENT_TYPES.length + 1)
  .refine((e) => !(e.includes('*') && e.length > 1), { message: '"*" (every event) stands alone' })
  .describe('The event types sent to this endpoint, or ["*"] for all of them.');

/** The URL of an endpoint: its form; where it may point is checked by the SSRF guard (webhooks/addressGuard.ts). */
export const WebhookUrl = z
  .string()
  .max(2048)
  .refine((u) => URL.canParse(u), { message: 'must be an absolute URL' })
  .refine(isStorableText, { message: 'must be valid Unicode text without NUL characters' })
  .describe('Where svc POSTs events: https (http only for a loopback address while WEBHOOKS_ALLOW_PRIVATE=true).');

export const WebhookEndpointInput = z.strictObject({
  url: WebhookUrl,
  description: StoredText(500).nullable().optional().describe('What the endpoint is for, for people.'),
  events: WebhookEventFilter.default(['*']),
});
export type WebhookEndpointInput = z.infer<typeof WebhookEndpointInput>;

export const WebhookEndpointPatch = z
  .strictObject({
    url: WebhookUrl.optional(),
    description: StoredText(500).nullable().optional(),
    events: WebhookEventFilter.optional(),
    status: z.enum(['enabled', 'disabled']).optional().describe('disabled: nothing is sent until it is enabled again.'),
  })
  .refine((p) => Object.keys(p).length > 0, { message: 'send at least one of url, description, events, status' });
export type WebhookEndpointPatch = z.infer<typeof WebhookEndpointPatch>;

/** A signing secret as Standard Webhooks has it: `whsec_` + base64 of 32 random bytes. */
export const newWebhookSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

/** A signing secret anywhere in a text (for redaction: logs). */
export const WEBHOOK_SECRET_ANYWHERE = /whsec_[0-9A-Za-z+/]{16,}={0,2}/g;

/** During a rotation the previous secret keeps signing beside the new one this long. */
export const SECRET_ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;

/** The webhook-id of a delivery: the same on every attempt and every resend of one event to one endpoint. */
export const messageId = (deliveryId: string): string => `msg_${deliveryId}`;

/**
 * When each attempt is made, after the first (at once): 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h; then
 * the delivery has failed. (The schedule of docs/product.md §10, which is Svix's.)
 */
export const RETRY_DELAYS_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 50_400_000, 72_000_000, 86_400_000] as const;
export const MAX_ATTEMPTS = RETRY_DELAYS_MS.length + 1;

/** An endpoint failing this long without one success is disabled. */
export const DISABLE_AFTER_FAILING_MS = 5 * 24 * 60 * 60 * 1000;

/**
 * The delay before the attempt after `attempts` failed ones, or null when none is left. Jittered by up to ±10 % (so
 * a recovering receiver is not hit by every retry at once), and never sooner than a Retry-After the receiver sent
 * (on 429 and 503), capped at a day.
 */
export function retryDelayMs(attempts: number, opts: { retryAfterMs?: number | null; random?: () => number } = {}): number | null {
  const base = RETRY_DELAYS_MS[attempts - 1];
  if (base === undefined) return null;
  const jittered = Math.round(base * (0.9 + 0.2 * (opts.random ?? Math.random)()));
  const floor = Math.min(opts.retryAfterMs ?? 0, 86_400_000);
  return Math.max(jittered, floor);
}

/** Retry-After as milliseconds: delta-seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now: Date): number | null {
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now.getTime());
}

/**
 * The body of a delivery: `{ type, timestamp, data: { event, contract, version } }`. `version` is the contract's
 * version right after the event: it only grows, so a receiver can drop a delivery older than one it has applied.
 */
export function webhookPayload(d: { type: string; at: Date; event: unknown; contract: unknown; version: number | null }): string {
  return JSON.stringify({ type: d.type, timestamp: d.at.toISOString(), data: { event: d.event, contract: d.contract, version: d.version } });
}

const Timestamp = z.string().meta({ format: 'date-time', example: '2026-12-01T00:00:00.000Z' });

export const WebhookEndpoint = z
  .object({
    id: z.string(),
    url: z.string(),
    description: z.string().nullable(),
    events: z.array(z.string()),
    status: z.enum(['enabled', 'disabled']),
    disabledReason: z
      .enum(['manual', 'gone', 'failing'])
      .nullable()
      .describe('Why it is disabled: by hand, the receiver answered 410 Gone, or 5 days of failed deliveries.'),
    disabledAt: Timestamp.nullable().describe('When it was disabled (null while enabled).'),
    failingSince: Timestamp.nullable().describe(
      'The first failed attempt of the current run of failures, null once a delivery succeeds: 5 days of it disable the endpoint.',
    ),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'WebhookEndpoint' });
export type WebhookEndpoint = z.infer<typeof WebhookEndpoint>;

export const WebhookAttempt = z.object({
  at: Timestamp,
  statusCode: z.number().int().nullable().describe('The receiver\'s HTTP status; null when it did not answer.'),
  durationMs: z.number().int(),
  error: z.string().nullable(),
  responseBody: z.string().nullable().describe('The first 4 KB of the response.'),
});

export const WebhookDelivery = z
  .object({
    id: z.string(),
    webhookId: z.string().describe('The webhook-id header: the same on every attempt and resend.'),
    type: z.string(),
    contractId: z.string().nullable(),
    eventId: z.string().nullable(),
    version: z.number().int().nullable(),
    test: z.boolean(),
    status: z.enum(['pending', 'delivering', 'succeeded', 'failed']),
    attempts: z.number().int(),
    nextAttemptAt: Timestamp.nullable().describe(
      'When it is next attempted: for one waiting behind an earlier delivery of its contract, that one\'s next attempt. Null when it is finished, or while its endpoint is disabled.',
    ),
    createdAt: Timestamp,
    finishedAt: Timestamp.nullable(),
    attemptLog: z.array(WebhookAttempt),
  })
  .meta({ id: 'WebhookDelivery' });
export type WebhookDelivery = z.infer<typeof WebhookDelivery>;
