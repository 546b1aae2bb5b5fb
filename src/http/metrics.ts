import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Database } from '../db/client.js';
import { ServiceError } from '../domain/errors.js';
import type { AuthFailureReason } from '../services/authenticateApiKey.js';
import { bearerToken } from '../services/authenticateApiKey.js';
import { batchedStatements } from '../db/batchedStatements.js';
import { outboxBacklog } from '../db/webhookOutbox.js';
import type { RequestLogWriter } from '../db/requestLogWriter.js';
import type { DispatcherStats } from '../workers/webhookDispatcher.js';

export type SchedulerStats = { ticks: number; resumed: number; failures: number; lastLagMs: number };
/** The billing worker's running totals (BillingWorker.stats). */
export type BillingStats = { ticks: number; attempted: number; missed: number; submitted: number; submitFailures: number; failures: number };

export type MetricsOptions = {
  /** METRICS_TOKEN: when set, GET /metrics needs `Authorization: Bearer <token>`. */
  token?: string;
  /** The resume scheduler's running totals (ResumeSweep.stats), read at each scrape. */
  schedulerStats?: () => SchedulerStats;
  /** Renewals: the billing worker's running totals (BillingWorker.stats), read at each scrape. */
  billingStats?: () => BillingStats;
  /** The webhook dispatcher's running totals (WebhookDispatcher.stats), read at each scrape. */
  webhookStats?: () => DispatcherStats;
  /**
   * Node process metrics (CPU, memory, event loop lag, GC). Off unless asked for (main turns them on): their
   * event-loop monitor cannot be stopped, and a test process builds many apps.
   */
  processMetrics?: boolean;
};

const AUTH_REASONS: AuthFailureReason[] = ['missing', 'malformed', 'unknown', 'revoked', 'app_not_installed', 'plan_required'];
export type IdempotencyOutcome = 'executed' | 'replayed' | 'in_progress' | 'key_reused';

/**
 * The service's Prometheus metrics, on a registry of its own (several apps in one process, as in tests, never
 * share or collide). Labels hold only route patterns, methods, status codes and fixed reasons: no URL, no shop,
 * no key, nothing a client chooses.
 */
export class AppMetrics {
  readonly registry = new Registry();
  private readonly authFailures: Counter<'reason'>;
  private readonly limited: Counter<'limit'>;
  private readonly idempotent: Counter<'outcome'>;
  readonly requests: Counter<'method' | 'route' | 'status'>;
  readonly duration: Histogram<'method' | 'route' | 'status'>;

  constructor(opts: MetricsOptions & { db?: Database; requestLog?: RequestLogWriter }) {
    const registers = [this.registry];
    if (opts.processMetrics) collectDefaultMetrics({ register: this.registry });
    this.requests = new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests by method, route pattern and status code.',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
    this.duration = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'Time from request to response, by method, route pattern and status code.',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    });
    this.authFailures = new Counter({
      name: 'svc_auth_failures_total',
      help: 'API key authentications refused, by reason (missing, malformed, unknown, revoked, app_not_installed, plan_required).',
      labelNames: ['reason'],
      registers,
    });
    for (const reason of AUTH_REASONS) this.authFailures.inc({ reason }, 0);
    this.limited = new Counter({
      name: 'svc_rate_limited_total',
      help: 'Requests refused with 429, by limit (shop: requests per shop; auth_failures: failed lookups per IP; connections: open connections per IP).',
      labelNames: ['limit'],
      registers,
    });
    for (const limit of ['shop', 'auth_failures', 'connections']) this.limited.inc({ limit }, 0);
    this.idempotent = new Counter({
      name: 'svc_idempotency_requests_total',
      help: 'Requests with an Idempotency-Key, by outcome (executed, replayed, in_progress, key_reused).',
      labelNames: ['outcome'],
      registers,
    });
    for (const outcome of ['executed', 'replayed', 'in_progress', 'key_reused']) this.idempotent.inc({ outcome }, 0);

    // A counter kept by a worker or a writer of this process, read at each scrape.
    const total = (name: string, help: string, read: () => number) =>
      new Counter({
        name,
        help,
        registers,
        collect() {
          this.reset();
          this.inc(read());
        },
      });

    const scheduler = opts.schedulerStats;
    if (scheduler) {
      total('svc_scheduler_ticks_total', 'Resume sweeps run by this instance.', () => scheduler().ticks);
      total('svc_scheduler_resumed_total', 'Contracts resumed by this instance\'s scheduler.', () => scheduler().resumed);
      total('svc_scheduler_failures_total', 'Resume sweeps that failed (retried on the next tick).', () => scheduler().failures);
      new Gauge({
        name: 'svc_scheduler_resume_lag_seconds',
        help: 'How late after its resumeAt the latest scheduled resume ran (the most overdue contract of that sweep).',
        registers,
        collect() {
          this.set(scheduler().lastLagMs / 1000);
        },
      });
    }

    const billing = opts.billingStats;
    if (billing) {
      total('svc_billing_attempts_total', 'Billing attempts this instance created (due cycles and retries).', () => billing().attempted);
      total('svc_billing_missed_total', 'Cycles this instance recorded as missed (later than BILLING_MAX_LATE).', () => billing().missed);
      total('svc_billing_submitted_total', 'Attempts this instance handed to the gateway (again, after a crash, included).', () => billing().submitted);
      total('svc_billing_submit_failures_total', 'Attempts the gateway could not take (handed over again later with the same key).', () => billing().submitFailures);
      total('svc_billing_round_failures_total', 'Billing rounds that failed (retried on the next tick).', () => billing().failures);
    }

    const db = opts.db;
    if (db) {
      // Each hot statement runs once per batch of concurrent callers: inputs / statements is the mean batch size.
      const batchTotal = (name: string, help: string, read: (s: { batches: number; inputs: number }) => number) =>
        new Counter({
          name,
          help,
          labelNames: ['statement'],
          registers,
          collect() {
            this.reset();
            for (const [statement, b] of Object.entries(batchedStatements(db))) this.inc({ statement }, read(b.stats));
          },
        });
      batchTotal('svc_db_batched_statements_total', 'Hot statements run, each for a batch of concurrent callers.', (s) => s.batches);
      batchTotal('svc_db_batched_inputs_total', 'Callers served by the hot statements (divide by statements for the batch size).', (s) => s.inputs);
    }

    const webhooks = opts.webhookStats;
    if (webhooks) {
      new Counter({
        name: 'svc_webhook_deliveries_total',
        help: 'Webhook delivery attempts by what followed: succeeded, retrying (another attempt later), failed (given up).',
        labelNames: ['outcome'],
        registers,
        collect() {
          this.reset();
          for (const [outcome, n] of Object.entries(webhooks().outcomes)) this.inc({ outcome }, n);
        },
      });
      total('svc_webhook_attempts_total', 'Webhook delivery attempts made by this instance.', () => webhooks().attempts);
    }
    if (db && webhooks) {
      // Read from the outbox at each scrape: the whole deployment's backlog, whichever instance sends it.
      const backlog = () => outboxBacklog(db, new Date());
      new Gauge({
        name: 'svc_webhook_queue_depth',
        help: 'Webhook deliveries not yet finished (pending, or being sent).',
        registers,
        async collect() {
          this.set((await backlog()).depth);
        },
      });
      new Gauge({
        name: 'svc_webhook_oldest_undelivered_seconds',
        help: 'How long the oldest unfinished webhook delivery has waited since its event.',
        registers,
        async collect() {
          this.set((await backlog()).oldestAgeMs / 1000);
        },
      });
    }

    const requestLog = opts.requestLog;
    if (requestLog) {
      total('svc_request_log_written_total', 'Requests written to the request log by this instance.', () => requestLog.stats.written);
      total(
        'svc_request_log_dropped_total',
        'Request log entries dropped because the buffer was full (the database could not take them in time).',
        () => requestLog.stats.dropped,
      );
      total('svc_request_log_failed_batches_total', 'Request log batches the database refused or did not answer (tried again).', () => requestLog.stats.failures);
      new Gauge({
        name: 'svc_request_log_buffered',
        help: 'Request log entries waiting to be written.',
        registers,
        collect() {
          this.set(requestLog.buffered);
        },
      });
    }

    const pool = opts.db?.poolStats ? () => opts.db!.poolStats!() : null;
    if (pool) {
      new Gauge({
        name: 'svc_db_pool_connections',
        help: 'PostgreSQL pool connections: total open, idle, and requests waiting for one; max is the pool size.',
        labelNames: ['state'],
        registers,
        collect() {
          const p = pool();
          this.set({ state: 'total' }, p.total);
          this.set({ state: 'idle' }, p.idle);
          this.set({ state: 'waiting' }, p.waiting);
          this.set({ state: 'max' }, p.max);
        },
      });
    }
  }

  private readonly perRoute = new Map<string, { count(): void; observe(seconds: number): void }>();

  /** One request: its route pattern (`unmatched` when no route matched), never the URL. */
  observeRequest(method: string, route: string | undefined, status: number, ms: number): void {
    const id = `${method} ${route} ${status}`;
    let series = this.perRoute.get(id);
    if (!series) {
      const labels = { method, route: route ?? 'unmatched', status: String(status) };
      const counter = this.requests.labels(labels);
      const histogram = this.duration.labels(labels);
      series = { count: () => counter.inc(), observe: (seconds) => histogram.observe(seconds) };
      // Bounded by the route table × methods × statuses; a client cannot add series (unmatched URLs share one).
      this.perRoute.set(id, series);
    }
    series.count();
    series.observe(ms / 1000);
  }

  authFailure(reason: AuthFailureReason): void {
    this.authFailures.inc({ reason });
  }
  rateLimited(limit: 'shop' | 'auth_failures' | 'connections'): void {
    this.limited.inc({ limit });
  }
  idempotency(outcome: IdempotencyOutcome): void {
    this.idempotent.inc({ outcome });
  }
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * Records every request (route pattern, not the raw URL: `/api/v1/subscription-contracts/:contract_id`; requests
 * that match no route are `unmatched`) and auth failures, and serves GET /metrics. Without METRICS_TOKEN the
 * endpoint is open, as is usual for a scrape target on a private network; with it, the token is compared in
 * constant time.
 */
export function installMetrics(app: FastifyInstance, opts: MetricsOptions & { db?: Database; requestLog?: RequestLogWriter }): AppMetrics {
  const metrics = new AppMetrics(opts);

  const expected = opts.token ? digest(opts.token) : null;
  app.get('/metrics', { schema: { hide: true } }, async (req, reply) => {
    if (expected) {
      const given = bearerToken(req.headers.authorization);
      if (!given || !timingSafeEqual(digest(given), expected)) {
        reply.header('www-authenticate', 'Bearer');
        throw new ServiceError('unauthorized', 'GET /metrics needs "Authorization: Bearer <METRICS_TOKEN>".');
      }
    }
    reply.header('cache-control', 'no-store').type(metrics.registry.contentType);
    return metrics.registry.metrics();
  });
  return metrics;
}
