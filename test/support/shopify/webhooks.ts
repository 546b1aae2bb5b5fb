import { createHmac, randomUUID } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { Clock } from './store.js';

const httpAgent = new http.Agent({ keepAlive: true });
const httpsAgent = new https.Agent({ keepAlive: true });

/**
 * Faults a test can put on the next webhook deliveries:
 * - `delay`: sent `ms` milliseconds late;
 * - `twice`: sent twice with the same X-Shopify-Webhook-Id (one after the other, or both at once with `concurrent`);
 * - `hold`: kept back until `release()`, which sends the held ones newest first (out of order);
 * - `drop`: never sent;
 * - `badHmac`: signed with the wrong secret.
 */
export type WebhookFault =
  | { mode: 'delay'; ms: number }
  | { mode: 'twice'; concurrent?: boolean }
  | { mode: 'hold' }
  | { mode: 'drop' }
  | { mode: 'badHmac' };

export type WebhookFaultScope = {
  /** How many deliveries the fault applies to (default 1; Infinity until cleared). */
  count?: number;
  topic?: string;
  shop?: string;
};

export type DeliveryState = 'scheduled' | 'held' | 'sending' | 'delivered' | 'failed' | 'dropped';

export type Delivery = {
  webhookId: string;
  eventId: string;
  topic: string;
  shop: string;
  url: string;
  /** The raw body, exactly as sent and signed. */
  body: string;
  payload: unknown;
  headers: Record<string, string>;
  state: DeliveryState;
  /** One per request sent: the receiver's status, or the network error. */
  attempts: { at: Date; status?: number; error?: string }[];
};

type Rule = WebhookFault & { remaining: number; topic?: string; shop?: string };

export function signWebhook(body: string, secret: string): string {
  return createHmac('sha256', secret).update(body, 'utf8').digest('base64');
}

/** The platform's side of webhooks: signs, sends, records, and misbehaves on request. */
export class WebhookSender {
  readonly deliveries: Delivery[] = [];
  /** Every event the platform emitted, with the urls it went to (none when nobody subscribed). */
  readonly events: { eventId: string; shop: string; topic: string; payload: unknown; urls: string[] }[] = [];
  private readonly pending = new Set<Promise<void>>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly aborts = new Set<() => void>();
  private held: Delivery[] = [];
  private rules: Rule[] = [];
  private closed = false;

  constructor(
    private readonly opts: { appSecret: string; apiVersion: string; clock: Clock; timeoutMs: number; retryDelaysMs: number[]; keepLog: boolean },
  ) {}

  fault(fault: WebhookFault, scope: WebhookFaultScope = {}): void {
    this.rules.push({ ...fault, remaining: scope.count ?? 1, topic: scope.topic, shop: scope.shop });
  }

  clearFaults(): void {
    this.rules = [];
  }

  /** Sends one event of `topic` to every url (one delivery, with its own webhook id, per url; one event id). */
  emit(shop: string, topic: string, payload: unknown, urls: string[]): Delivery[] {
    const eventId = randomUUID();
    if (this.opts.keepLog) this.events.push({ eventId, shop, topic, payload, urls });
    const body = JSON.stringify(payload);
    return urls.map((url) => {
      const webhookId = randomUUID();
      const rule = this.takeRule(shop, topic);
      const secret = rule?.mode === 'badHmac' ? `${this.opts.appSecret}-wrong` : this.opts.appSecret;
      const delivery: Delivery = {
        webhookId,
        eventId,
        topic,
        shop,
        url,
        body,
        payload,
        state: 'scheduled',
        attempts: [],
        headers: {
          'Content-Type': 'application/json',
          'User-Agent': 'Shopify-Captain-Hook',
          'X-Shopify-Topic': topic,
          'X-Shopify-Hmac-Sha256': signWebhook(body, secret),
          'X-Shopify-Shop-Domain': shop,
          'X-Shopify-Webhook-Id': webhookId,
          'X-Shopify-Event-Id': eventId,
          'X-Shopify-Triggered-At': this.opts.clock.now().toISOString(),
          'X-Shopify-API-Version': this.opts.apiVersion,
        },
      };
      if (this.opts.keepLog) this.deliveries.push(delivery);
      if (rule?.mode === 'drop') delivery.state = 'dropped';
      else if (rule?.mode === 'hold') {
        delivery.state = 'held';
        this.held.push(delivery);
      } else if (rule?.mode === 'delay') this.track(this.later(rule.ms).then(() => this.send(delivery)));
      else if (rule?.mode === 'twice' && rule.concurrent) this.track(Promise.all([this.send(delivery), this.send(delivery)]).then(() => {}));
      else if (rule?.mode === 'twice') this.track(this.send(delivery).then(() => this.send(delivery)));
      // The platform's webhooks leave after its answer (a queue behind its commit), never inside it.
      else this.track(afterAnswer().then(() => this.send(delivery)));
      return delivery;
    });
  }

  /** Sends the held deliveries: newest first (the default, out of order) or in the order they were held. */
  release(order: 'reverse' | 'fifo' = 'reverse'): void {
    const held = order === 'reverse' ? [...this.held].reverse() : [...this.held];
    this.held = [];
    this.track(held.reduce<Promise<void>>((p, d) => p.then(() => this.send(d)), Promise.resolve()));
  }

  /** Sends every failed delivery again, with its original webhook id (as the platform's retries do). */
  retryFailed(): void {
    for (const d of this.deliveries.filter((x) => x.state === 'failed')) this.track(this.send(d));
  }

  /** Resolves once nothing is scheduled or in flight (held deliveries stay held; retries are waited for). */
  async flush(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const abort of this.aborts) abort();
    await Promise.allSettled([...this.pending]);
  }

  private takeRule(shop: string, topic: string): Rule | undefined {
    const rule = this.rules.find((r) => r.remaining > 0 && (!r.topic || r.topic === topic) && (!r.shop || r.shop === shop));
    if (rule) rule.remaining--;
    this.rules = this.rules.filter((r) => r.remaining > 0);
    return rule;
  }

  private track(p: Promise<void>): void {
    const tracked = p.catch(() => {}).finally(() => this.pending.delete(tracked));
    this.pending.add(tracked);
  }

  private later(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.timers.delete(t);
        resolve();
      }, ms);
      this.timers.add(t);
    });
  }

  private async send(d: Delivery, retry = 0): Promise<void> {
    if (this.closed) return;
    d.state = 'sending';
    const attempt: Delivery['attempts'][number] = { at: this.opts.clock.now() };
    d.attempts.push(attempt);
    const answer = await this.post(d);
    if (typeof answer === 'number') attempt.status = answer;
    else attempt.error = answer.error;
    d.state = typeof answer === 'number' && answer >= 200 && answer < 300 ? 'delivered' : 'failed';
    const wait = this.opts.retryDelaysMs[retry];
    if (d.state === 'failed' && wait !== undefined && !this.closed) {
      await this.later(wait);
      await this.send(d, retry + 1);
    }
  }

  /**
   * One POST (node:http, connections kept alive; a redirect is an answer, not followed): the status, or why there was
   * none. Not fetch: the bench sends thousands a second, and fetch's per-request cost and retained state would be
   * the stand-in's, not svc's, yet weigh on svc's figures on a shared machine.
   */
  private post(d: Delivery): Promise<number | { error: string }> {
    return new Promise((resolve) => {
      const url = new URL(d.url);
      const body = Buffer.from(d.body);
      const req = (url.protocol === 'https:' ? https : http).request(
        url,
        { method: 'POST', agent: url.protocol === 'https:' ? httpsAgent : httpAgent, headers: { ...d.headers, 'Content-Length': String(body.length) } },
        (res) => {
          res.resume();
          res.on('end', () => done(res.statusCode ?? 0));
          res.on('error', (err) => done({ error: err.message }));
        },
      );
      const timer = setTimeout(() => req.destroy(new Error('The operation was aborted due to timeout')), this.opts.timeoutMs);
      const aborted = () => req.destroy(new Error('The stand-in closed'));
      this.aborts.add(aborted);
      const done = (r: number | { error: string }) => {
        clearTimeout(timer);
        this.aborts.delete(aborted);
        resolve(r);
      };
      req.on('error', (err) => done({ error: err.message }));
      req.end(body);
    });
  }
}

/** Resolves once the current turn (the request that emitted, and its answer) is done. */
const afterAnswer = () => new Promise<void>((resolve) => setImmediate(resolve));
