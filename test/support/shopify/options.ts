import type { BillingSettings } from './billing.js';
import type { BulkSettings } from './bulk.js';
import type { RootCall } from './resolverContext.js';
import type { PlatformError } from './schema.js';
import type { Clock } from './store.js';

export type StandInOptions = {
  appKey: string;
  appSecret: string;
  /** The stand-in's time (tokens, buckets, timestamps); default the system clock. */
  clock?: Clock;
  /** The scopes granted on token exchange. */
  scopes?: string;
  accessTokenTtlSeconds?: number;
  refreshTokenTtlSeconds?: number;
  /** Each shop's cost bucket: default 2000 points, 100 restored per second. */
  bucket?: { maximumAvailable?: number; restoreRate?: number };
  /** The single-query cost limit (default 1000). */
  maxQueryCost?: number;
  /** Fixed requested costs by operation name, replacing the computed ones. */
  costByOperation?: Record<string, number>;
  /** Whether subscriptionContractSetNextBillingDate sends subscription_contracts/update (default false). */
  webhookOnSetNextBillingDate?: boolean;
  webhookTimeoutMs?: number;
  /** Automatic redeliveries of a failed webhook, in ms after each failure (default none: use retryFailed()). */
  webhookRetryDelaysMs?: number[];
  /** Webhooks declared in the app's configuration: the compliance topics always, plus `topics`. */
  appWebhooks?: { uri: string; topics?: string[] };
  bulk?: Partial<BulkSettings>;
  /** Billing attempts settle right after the answer (`auto`, the default) or when the test calls `billing.settlePending()`. */
  billing?: BillingSettings;
  /**
   * Whether requests, webhook events and deliveries are kept for tests' assertions (default true). A benchmark turns
   * it off: a log of every request, kept for seconds, makes the stand-in's garbage collector pause for tens of
   * milliseconds, and those pauses were the tail of the latencies it measured.
   */
  keepLog?: boolean;
};

/** One request svc sent, as the stand-in saw it (the access token header left out). */
export type LoggedRequest = {
  at: Date;
  shop: string;
  endpoint: 'graphql' | 'oauth' | 'other';
  method: string;
  path: string;
  headers: Record<string, string>;
  query?: string;
  operationName?: string | null;
  variables?: Record<string, unknown>;
  /** The root fields the operation ran, with their arguments as the schema coerced them. */
  rootCalls?: RootCall[];
  validationErrors?: PlatformError[];
  grantType?: string;
  status?: number;
  response?: unknown;
  fault?: string;
};
