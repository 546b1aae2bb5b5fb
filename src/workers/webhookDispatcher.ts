import { createHmac } from 'node:crypto';
import { claimDueDeliveries, purgeDeliveries, recordAttempts, type AttemptOutcome, type ClaimedDelivery } from '../db/webhookOutbox.js';
import { toContractEvent } from '../domain/resources.js';
import { DISABLE_AFTER_FAILING_MS, isShopEventType, messageId, parseRetryAfter, retryDelayMs, testEvent, type ContractEventType } from '../domain/webhooks.js';
import { systemClock, type Clock, type ServiceContext } from '../services/context.js';
import { DELIVERY_TIMEOUT_MS, postWebhook, type AttemptResult } from '../webhooks/send.js';
import { mapInLanes } from '../lanes.js';
import { Worker, type WorkerLog } from './worker.js';

/** Channel the outbox's trigger notifies when deliveries are written (migration 0005). */
export const DELIVERIES_CHANNEL = 'svc_webhook_deliveries';
/** A claimed delivery whose instance died is claimed again this long after its attempt would have timed out. */
const LEASE_MARGIN_MS = 5_000;
/** While the instance is crowded with requests: this many deliveries, then this pause (about 100 a second). */
const YIELDING_BATCH = 10;
const YIELDING_PAUSE_MS = 100;
/** After a round that sent something, poll every LINGER_POLL_MS for LINGER_MS before waiting for a notification. */
const LINGER_MS = 200;
const LINGER_POLL_MS = 10;
/** The delivery log is kept this long. */
export const DELIVERY_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

export type DispatcherStats = {
  /** Attempts by what followed: succeeded, retrying (another attempt later), failed (no attempt left, or gone). */
  outcomes: { succeeded: number; retrying: number; failed: number };
  attempts: number;
};

/** The body and headers of one attempt (Standard Webhooks), the same body on every attempt of a delivery. */
export function signedRequest(d: ClaimedDelivery, signedAt: Date): { body: string; headers: Record<string, string> } {
  return signed(d, signedAt, isShopEventType(d.type) ? shopEventBody(d) : contractEventBody(d));
}

/**
 * A shop event (`api_key.leaked`, `bulk_job.*`): `{ type, timestamp, data }`, its data stored whole in the delivery's
 * payload column when it was queued, put in as stored.
 */
function shopEventBody(d: ClaimedDelivery): string {
  return `{"type":${JSON.stringify(d.type)},"timestamp":${JSON.stringify(d.createdAt.toISOString())},"data":${d.contract}}`;
}

/** A contract event: `{ type, timestamp, data: { event, contract, version } }`. */
function contractEventBody(d: ClaimedDelivery): string {
  const event = d.event
    ? toContractEvent({
        id: d.eventId!,
        contractId: d.contractId!,
        shopId: '',
        type: d.type,
        at: d.event.at,
        actorType: d.event.actorType,
        actorKeyFingerprint: d.event.actorKeyFingerprint,
        actorId: d.event.actorId,
        fromStatus: d.event.fromStatus,
        toStatus: d.event.toStatus,
        data: d.event.data,
        contractVersion: d.contractVersion,
      })
    : testEvent(d.type as ContractEventType, d.id, d.createdAt).event;
  // The contract's JSON is put in as stored: it is never parsed and written again. A test event says so beside its
  // type, and its version is 0 (domain/webhooks.ts: testEvent).
  const head = d.event ? `{"type":${JSON.stringify(d.type)},` : `{"type":${JSON.stringify(d.type)},"test":true,`;
  return `${head}"timestamp":${JSON.stringify(event.at)},"data":{"event":${JSON.stringify(event)},"contract":${d.contract},"version":${d.contractVersion ?? 0}}}`;
}

function signed(d: ClaimedDelivery, signedAt: Date, body: string): { body: string; headers: Record<string, string> } {
  const id = messageId(d.id);
  const timestamp = Math.floor(signedAt.getTime() / 1000);
  const sign = (secret: string) => standardSignature(secret, id, timestamp, body);
  // During a rotation the previous secret signs beside the new one: a receiver with either verifies.
  const overlapping = d.previousSecret && d.previousSecretExpiresAt && d.previousSecretExpiresAt.getTime() > signedAt.getTime();
  const signature = overlapping ? `${sign(d.secret)} ${sign(d.previousSecret!)}` : sign(d.secret);
  return { body, headers: { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signature } };
}

/**
 * One Standard Webhooks signature: `v1,` and the base64 of HMAC-SHA256 over `id.timestamp.body`, keyed with the
 * secret's bytes (the base64 after its `whsec_` prefix). The specification's fact (standard-webhooks.com, "Signature
 * scheme"); node:crypto's HMAC, not a JavaScript SHA-256: every delivery is signed, and the native one costs a
 * fraction of the JavaScript one. The tests verify what svc sends with the `standardwebhooks` library itself.
 */
function standardSignature(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** What follows an attempt (docs/product.md §10): success on a 2xx; 410 gives up and disables; else the retry schedule. */
export function outcomeOf(d: ClaimedDelivery, r: AttemptResult, now: Date, random: () => number = Math.random): AttemptOutcome {
  const base = { deliveryId: d.id, endpointId: d.endpointId, at: now, statusCode: r.statusCode, durationMs: r.durationMs, error: r.error, responseBody: r.responseBody };
  if (r.statusCode !== null && r.statusCode >= 200 && r.statusCode < 300) return { ...base, next: 'succeeded', nextAttemptAt: null, gone: false };
  if (r.statusCode === 410) return { ...base, next: 'failed', nextAttemptAt: null, gone: true };
  const retryAfterMs = r.statusCode === 429 || r.statusCode === 503 ? parseRetryAfter(r.retryAfter, now) : null;
  const delay = retryDelayMs(d.attempts, { retryAfterMs, random });
  if (delay === null) return { ...base, next: 'failed', nextAttemptAt: null, gone: false };
  return { ...base, next: 'pending', nextAttemptAt: new Date(now.getTime() + delay), gone: false };
}

/**
 * Sends the outbox (docs/product.md §10). Each round claims due deliveries in batches (SKIP LOCKED: any number of instances,
 * no delivery claimed twice; in order per contract and endpoint), sends them concurrently, and records every attempt
 * and what follows in one transaction per batch. It wakes at once when deliveries are written (LISTEN on the
 * outbox's channel) and on its interval otherwise. At least once: a claim is a lease, so a delivery whose instance
 * died mid-send goes out again, with the same webhook-id.
 */
export class WebhookDispatcher extends Worker {
  readonly stats: DispatcherStats = { outcomes: { succeeded: 0, retrying: 0, failed: 0 }, attempts: 0 };
  private unlisten: (() => Promise<void>) | null = null;
  private lastPurge = 0;
  private wakePending: NodeJS.Timeout | null = null;
  private lingerUntil = 0;

  constructor(
    private readonly ctx: ServiceContext,
    private readonly opts: {
      intervalMs?: number;
      batchSize?: number;
      concurrency?: number;
      log?: WorkerLog;
      signingClock?: Clock;
      random?: () => number;
      /** How long a receiver has to answer (15 s). */
      timeoutMs?: number;
      /** How long a wake-up waits for more deliveries to send them together (10 ms). */
      coalesceMs?: number;
      /**
       * True while the instance is crowded with requests, or its renewals are working through a storm: deliveries
       * then go out in small batches with a pause between them (about 100 a second), so they take little from the
       * requests and the renewals, and catch up at full speed after.
       */
      busy?: () => boolean;
    } = {},
  ) {
    super('webhook dispatch', opts.intervalMs ?? 1000, opts.log);
  }

  /** Sends everything due now, batch after batch. Returns how many attempts it made. */
  async tick(): Promise<number> {
    const batchSize = this.opts.batchSize ?? 100;
    let made = 0;
    // Until nothing is due: a delivery waiting behind an earlier one of its contract is due once that one is done.
    for (let round = 0; round < 1000; round++) {
      const busy = this.opts.busy?.() ?? false;
      const claimed = await claimDueDeliveries(this.ctx.db, this.ctx.clock.now(), busy ? YIELDING_BATCH : batchSize, (this.opts.timeoutMs ?? DELIVERY_TIMEOUT_MS) + LEASE_MARGIN_MS);
      if (claimed.length === 0) break;
      const outcomes = await this.sendAll(claimed);
      await recordAttempts(this.ctx.db, outcomes, DISABLE_AFTER_FAILING_MS);
      for (const o of outcomes) this.stats.outcomes[o.next === 'pending' ? 'retrying' : o.next]++;
      this.stats.attempts += outcomes.length;
      made += outcomes.length;
      if (busy) await new Promise((r) => setTimeout(r, YIELDING_PAUSE_MS));
    }
    if (made) this.lingerUntil = Date.now() + LINGER_MS;
    await this.purgeOldDeliveries();
    return made;
  }

  private sendAll(claimed: ClaimedDelivery[]): Promise<AttemptOutcome[]> {
    return mapInLanes(claimed, this.opts.concurrency ?? 50, async (d) => {
      const { body, headers } = signedRequest(d, (this.opts.signingClock ?? systemClock).now());
      const result = await postWebhook(d.url, headers, body, this.ctx.webhookAddresses, this.opts.timeoutMs);
      if (result.error) this.log?.info({ delivery: d.id, endpoint: d.endpointId, attempt: d.attempts, status: result.statusCode, error: result.error }, 'webhook delivery attempt failed');
      return outcomeOf(d, result, this.ctx.clock.now(), this.opts.random);
    });
  }

  /** The delivery log is kept 30 days: older finished deliveries go, at most once an hour per instance. */
  private async purgeOldDeliveries(): Promise<void> {
    const now = this.ctx.clock.now().getTime();
    if (now - this.lastPurge < 3_600_000) return;
    this.lastPurge = now;
    await purgeDeliveries(this.ctx.db, new Date(now - DELIVERY_RETENTION_MS));
  }

  /**
   * While deliveries flow, poll again shortly rather than at the interval: the outbox does not notify while a
   * delivery is in flight (migration 0005), so a change committed just as a round ends is picked up here.
   */
  protected override nextDelayMs(): number {
    return Date.now() < this.lingerUntil ? LINGER_POLL_MS : super.nextDelayMs();
  }

  override start(): void {
    super.start();
    void this.listen();
  }

  /** Wakes on every NOTIFY of the outbox; a lost connection is tried again on the next round's interval. */
  private async listen(): Promise<void> {
    try {
      this.unlisten = await this.ctx.db.listen(DELIVERIES_CHANNEL, () => this.wakeSoon(), (err) => {
        this.log?.error({ err: { message: err.message } }, 'webhook wake-up channel lost; retrying');
        this.unlisten = null;
        setTimeout(() => void this.listen(), 5000).unref();
      });
    } catch (err) {
      this.log?.error({ err: { message: (err as Error).message } }, 'could not listen for webhook deliveries; the interval still runs');
    }
  }

  /**
   * Every commit that writes deliveries notifies; under load that is thousands a second. Waking once per short window
   * sends them in batches (one claim, one record per batch instead of per delivery) at the cost of a few
   * milliseconds of latency.
   */
  private wakeSoon(): void {
    if (this.wakePending) return;
    this.wakePending = setTimeout(() => {
      this.wakePending = null;
      this.wake();
    }, this.opts.coalesceMs ?? 10);
  }

  override async stop(): Promise<void> {
    if (this.wakePending) clearTimeout(this.wakePending);
    this.wakePending = null;
    await this.unlisten?.();
    this.unlisten = null;
    await super.stop();
  }
}
