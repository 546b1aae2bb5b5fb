import type { components, operations } from '../../clients/typescript/src/schema';
import type { Session } from './auth';

/** Shapes of the admin JSON API (src/http/admin/routes.ts and webhookRoutes.ts). */
export type ApiAccessReason = 'enterprise' | 'free_period' | 'plan_required';
export type ShopInfo = {
  shop: { domain: string; plan: string; apiAccess: { allowed: boolean; reason: ApiAccessReason; freePeriodEndsAt: string | null } };
  limits: { maxActiveKeys: number; maxWebhookEndpoints: number };
  platform: PlatformInfo;
};
/**
 * Platform mode (docs/product.md, "Platform mode"): the install's import of the shop's contracts, and whether the shop
 * can upgrade itself.
 */
export type ImportStatus = 'pending' | 'running' | 'completed' | 'failed';
export type ImportProgress = {
  status: ImportStatus;
  mode: 'paged' | 'bulk' | null;
  imported: number;
  total: number | null;
  startedAt: string | null;
  finishedAt: string | null;
  error: string | null;
};
export type PlatformInfo = { mode: 'standalone' | 'shopify'; import: ImportProgress | null; canUpgrade: boolean };
/** The two presets of a key's permissions. */
export type KeyAccess = 'read_write' | 'read_only';
/** What a key may do, per resource (docs/keys-and-permissions.md): as the public API shows it for GET /key. */
export type Permissions = components['schemas']['Permissions'];
export type Resource = keyof Permissions;
export type Level = Permissions[Resource];
export type ApiKey = {
  id: string;
  name: string | null;
  fingerprint: string;
  /** The preset its permissions equal, or custom. */
  access: KeyAccess | 'custom';
  permissions: Permissions;
  status: 'active' | 'revoked';
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
  /** Why it was revoked: by hand, or reported found in public by a secret scanner (and then revoked at once). */
  revokedReason: 'revoked' | 'leaked' | null;
  leakedAt: string | null;
  /** Where the report says the key was found (null when it did not say). */
  leakedUrl: string | null;
};
export type KeyList = { keys: ApiKey[]; activeCount: number };
// The resources the admin API shares with the public API: the types generated from the OpenAPI document
// (clients/typescript, `npm run client:generate`), so the page and the server cannot drift apart.
type Schemas = components['schemas'];
export type Contract = Schemas['SubscriptionContract'];
export type ContractStatus = Contract['status'];
export type ContractEvent = Schemas['ContractEvent'];
/** An action's body, as the API takes it (the admin takes the same). */
export type ContractAction = operations['actOnSubscriptionContract']['requestBody']['content']['application/json'];
export type ActionName = ContractAction['action'];
/**
 * Fields the contract resource gains with contract edits (lines with ids, delivery policy, address, discounts,
 * totals; amounts are decimal strings). Optional here, so the page shows them when the server sends them.
 */
export type ShippingAddress = {
  firstName: string;
  lastName: string;
  address1: string;
  address2?: string | null;
  city: string;
  provinceCode?: string | null;
  zip: string;
  countryCode: string;
  phone?: string | null;
};
export type Money = { amount: string; currencyCode: string };
export type Discount = {
  id: string;
  title: string;
  code?: string | null;
  value: { type: 'percentage'; percentage: number } | { type: 'fixed_amount'; amount: Money };
};
export type ContractTotals = { subtotal: string; discounts: string; shipping: string; total: string; currencyCode: string };
export type ContractLine = Contract['lines'][number] & { id?: string };
export type ContractView = Omit<Contract, 'lines'> & {
  lines: ContractLine[];
  deliveryPolicy?: Contract['billingPolicy'];
  shippingAddress?: ShippingAddress | null;
  discounts?: Discount[];
  totals?: ContractTotals;
};
export type ContractPage = { contracts: ContractView[]; nextCursor: string | null; previousCursor: string | null };
/** One contract as its admin page shows it: the actions its status allows and the newest page of its history. */
export type ContractDetail = {
  contract: ContractView;
  allowedActions: ActionName[];
  editable: boolean;
  events: ContractEvent[];
  eventsNextCursor: string | null;
  /** When the contract last billed (its latest attempt that succeeded); null: never. */
  lastBilled: { at: string; trigger: BillingAttempt['trigger']; orderName: string | null } | null;
  /** When resume is allowed: whether it bills the unpaid cycle at once, and the next billing date it sets. */
  resume: { billsNow: boolean; nextBillingDate: string } | null;
};
/** A variant of the shop's catalog, offered for a swap or a new line (standalone mode; none in platform mode). */
export type CatalogVariant = { id: string; title: string; price: Money };
/** An edit's body, as the API takes it (the admin takes the same): the operations, and whether only to preview them. */
export type ContractEdit = { operations: { op: string }[]; preview?: boolean };
/** Webhooks out (docs/product.md, "Webhooks out"). */
export type WebhookEventType = { type: string; description: string };
export type WebhookEndpoint = Schemas['WebhookEndpoint'];
export type WebhookEndpointStatus = WebhookEndpoint['status'];
export type WebhookDisabledReason = NonNullable<WebhookEndpoint['disabledReason']>;
export type WebhookEndpointInput = { url: string; description?: string | null; events: string[] };
export type WebhookEndpointPatch = Partial<WebhookEndpointInput> & { status?: WebhookEndpointStatus };
/** What failed while a disabled endpoint was failing: offered for resending when it is enabled again. */
export type WebhookResendable = { count: number; since: string };
export type WebhookDelivery = Schemas['WebhookDelivery'];
export type WebhookDeliveryStatus = WebhookDelivery['status'];
export type WebhookAttempt = WebhookDelivery['attemptLog'][number];
export type ErrorDetail = { path: string; message: string };
/** One request of a key or a connected app, as the request log keeps it (src/domain/requestLog.ts): no body, secrets scrubbed. */
export type RequestLogEntry = {
  id: string;
  at: string;
  keyId: string | null;
  fingerprint: string | null;
  /** A connected app's request (OAuth): the connection and its name; null for a key's. */
  connectionId: string | null;
  connectionName: string | null;
  method: string;
  path: string;
  mcpTool: string | null;
  status: number;
  /** MCP: a refused tool call answers 200; this is the status the API gives its errorCode (null otherwise). */
  mcpStatus: number | null;
  errorCode: string | null;
  durationMs: number;
  requestId: string;
  idempotencyKey: string | null;
  ip: string | null;
  userAgent: string | null;
};
/** The request log's filters: a status class (2xx, 4xx, 5xx) or code, text in the path, requests before a moment. */
export type RequestLogQuery = { keyId?: string; connectionId?: string; status?: string; path?: string; before?: string; cursor?: string; limit?: number };

/** An AI assistant the merchant connected through OAuth (src/http/admin/oauthRoutes.ts). */
export type Connection = { id: string; clientName: string; clientId: string; permissions: Permissions; createdAt: string; lastUsedAt: string | null };
/** What the consent page shows of an app's authorization request. */
export type AuthorizationDetails = {
  client: { id: string; name: string; kind: 'registered' | 'metadata_document' };
  redirectHost: string;
  asked: Permissions;
  scope: string;
  resource: string;
};

/** Renewals (src/http/admin/billingRoutes.ts and routes.ts): a billing attempt, where a contract's billing stands, the policy. */
export type BillingAttempt = Schemas['BillingAttempt'];
export type ContractBilling = Schemas['ContractBilling'];
export type BillingStatus = ContractBilling['status'];
export type BillingPolicy = Schemas['BillingPolicy'];
export type FinalAction = BillingPolicy['finalAction'];
export type BilledDay = {
  attempts: number;
  succeeded: number;
  failed: number;
  failedByCode: { errorCode: string; count: number }[];
  actionRequired: number;
  pending: number;
  recovered: number;
  revenue: Money[];
};
export type DueDay = { renewals: number; expectedRevenue: Money[] };
export type RenewalsDay = { date: string; billed: BilledDay | null; due: DueDay | null };
export type RenewalsOverview = { from: string; today: string; to: string; days: RenewalsDay[]; totals: { billed: BilledDay; due: DueDay } };

/** Bulk jobs (docs/bulk-jobs.md): one change across the contracts a filter matches, previewed, then run. */
export type ContractFilter = Schemas['ContractFilterInput'];
export type BulkChange = Schemas['BulkChangeInput'];
export type BulkEditOperation = Schemas['BulkEditOperationInput'];
export type BulkJobCreate = Schemas['BulkJobCreateInput'];
export type BulkJob = Schemas['BulkJob'];
export type BulkJobStatus = BulkJob['status'];
export type BulkJobResult = Schemas['BulkJobResult'];
export type BulkJobResultStatus = BulkJobResult['status'];

/** Every failure the page can show: the server's envelope, or a network failure in the same shape. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly requestId: string | null,
    /** Validation failures field by field (the envelope's `details`), for showing each on its field. */
    readonly details: ErrorDetail[] = [],
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export type AdminApi = {
  shop(): Promise<ShopInfo>;
  /** Platform mode: creates the Enterprise app subscription; the merchant approves it on the platform's page. */
  upgrade(): Promise<{ confirmationUrl: string }>;
  /** Platform mode: what became of the subscription the merchant comes back from (`charge_id`). */
  upgradeOutcome(chargeId: string): Promise<{ status: string; plan: string }>;
  keys(): Promise<KeyList>;
  /** A preset (`access`) or one level per resource (`permissions`). */
  generateKey(name: string | null, grant: { access: KeyAccess } | { permissions: Permissions }): Promise<{ key: ApiKey; secret: string }>;
  revokeKey(id: string): Promise<{ key: ApiKey }>;
  /** In effect at once, for the key's very next request. */
  updateKeyPermissions(id: string, permissions: Permissions): Promise<{ key: ApiKey }>;
  /** A page of contracts, newest first: by id or the start of the customer's email (`query`), by a bulk job's filter. */
  contracts(q: { query?: string; cursor?: string; limit?: number } & ContractFilter): Promise<ContractPage>;
  contract(id: string): Promise<ContractDetail>;
  act(id: string, action: ContractAction): Promise<{ contract: ContractView }>;
  /** Edits a contract; with `preview: true` answers the contract as it would be and changes nothing. */
  edit(id: string, edit: ContractEdit): Promise<{ contract: ContractView; preview: boolean }>;
  catalogVariants(): Promise<{ variants: CatalogVariant[] }>;
  events(contractId: string, cursor?: string): Promise<{ events: ContractEvent[]; nextCursor?: string | null }>;
  webhookEndpoints(): Promise<{ endpoints: WebhookEndpoint[] }>;
  /** Every event type an endpoint may subscribe to, with what it means. */
  webhookEventTypes(): Promise<{ eventTypes: WebhookEventType[] }>;
  webhookEndpoint(id: string): Promise<{ endpoint: WebhookEndpoint }>;
  createWebhookEndpoint(input: WebhookEndpointInput): Promise<{ endpoint: WebhookEndpoint; secret: string }>;
  updateWebhookEndpoint(id: string, patch: WebhookEndpointPatch): Promise<{ endpoint: WebhookEndpoint; resendable?: WebhookResendable }>;
  deleteWebhookEndpoint(id: string): Promise<void>;
  revealWebhookSecret(id: string): Promise<{ secret: string; previousSecretExpiresAt: string | null }>;
  rotateWebhookSecret(id: string): Promise<{ endpoint: WebhookEndpoint; secret: string }>;
  sendTestWebhook(id: string, type: string): Promise<{ delivery: WebhookDelivery }>;
  webhookDeliveries(id: string, q: { cursor?: string; limit?: number }): Promise<{ deliveries: WebhookDelivery[]; nextCursor: string | null }>;
  resendWebhookDelivery(id: string, deliveryId: string): Promise<{ delivery: WebhookDelivery }>;
  resendFailedWebhookDeliveries(id: string, since: string): Promise<{ resent: number }>;
  /** A page of a key's or a connected app's requests, newest first (kept 14 days). */
  requestLog(q: RequestLogQuery): Promise<{ requests: RequestLogEntry[]; nextCursor: string | null }>;
  /** The AI assistants connected through OAuth. */
  connections(): Promise<{ connections: Connection[] }>;
  /** Ends a connection at once: the app's very next request is refused. */
  disconnect(id: string): Promise<{ disconnected: true }>;
  /** An app's authorization request (the parameters /oauth/authorize passed on), checked. */
  authorization(request: Record<string, string>): Promise<AuthorizationDetails>;
  /** The merchant's decision: where the browser goes next (back to the app, with a code or access_denied). */
  decideAuthorization(request: Record<string, string>, approve: boolean, permissions?: Permissions): Promise<{ redirectTo: string }>;
  billingAttempts(contractId: string, cursor?: string): Promise<{ billingAttempts: BillingAttempt[]; nextCursor: string | null }>;
  billingPolicy(): Promise<BillingPolicy>;
  saveBillingPolicy(policy: BillingPolicy): Promise<BillingPolicy>;
  renewals(q: { days: number; ahead: number }): Promise<RenewalsOverview>;
  /** How many contracts a filter matches, as a bulk job made with it would take them (`more`: past the 100,000 a job takes). */
  contractCount(filter: ContractFilter): Promise<{ count: number; more: boolean }>;
  createBulkJob(body: BulkJobCreate): Promise<{ bulkJob: BulkJob }>;
  bulkJobs(q: { cursor?: string; limit?: number }): Promise<{ bulkJobs: BulkJob[]; nextCursor: string | null }>;
  bulkJob(id: string): Promise<{ bulkJob: BulkJob }>;
  bulkJobResults(id: string, q: { status?: BulkJobResultStatus; cursor?: string; limit?: number }): Promise<{ results: BulkJobResult[]; nextCursor: string | null }>;
  /** Every result of a job as one CSV file. */
  bulkJobResultsCsv(id: string): Promise<Blob>;
  startBulkJob(id: string): Promise<{ bulkJob: BulkJob }>;
  cancelBulkJob(id: string): Promise<{ bulkJob: BulkJob }>;
};

/** A contract filter as query parameters (status repeated), as the admin's contract list and count take it. */
export function filterParams(f: ContractFilter, params = new URLSearchParams()): URLSearchParams {
  for (const s of f.status ?? []) params.append('status', s);
  for (const b of f.billingStatus ?? []) params.append('billingStatus', b);
  for (const name of ['customerId', 'customerEmail', 'variantId', 'nextBillingDateFrom', 'nextBillingDateTo'] as const) if (f[name]) params.set(name, f[name]!);
  return params;
}

const BASE = `${import.meta.env.BASE_URL}api`;
const endpointPath = (id: string) => `/webhook-endpoints/${encodeURIComponent(id)}`;
const bulkJobPath = (id: string) => `/bulk-jobs/${encodeURIComponent(id)}`;

/**
 * The one way the page talks to the server. A token is obtained before every call and none leaves without one;
 * a 401 means the session is over, which `onUnauthorized` turns into the "get a new link" page.
 */
export function createAdminApi(session: Session, onUnauthorized: (err: ApiError) => void): AdminApi {
  async function call<T>(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, body?: unknown, accept = 'application/json'): Promise<T> {
    let token: string;
    try {
      token = await session.getToken();
    } catch {
      throw new ApiError(0, 'no_session', 'Could not get a session token from the shop admin. Reload the app.', null);
    }
    if (!token) throw new ApiError(0, 'no_session', 'No session token: open the app again.', null);
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept };
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(BASE + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
    } catch {
      throw new ApiError(0, 'network_error', 'Could not reach the service. Check the connection and try again.', null);
    }
    // 204 (a delete) has no body to read.
    if (res.status === 204) return undefined as T;
    // A download (CSV): the file as it came.
    if (res.ok && accept !== 'application/json') return (await res.blob()) as T;
    const payload = (await res.json().catch(() => null)) as { error?: { code?: string; message?: string; requestId?: string; details?: ErrorDetail[] } } | null;
    if (!res.ok) {
      const e = payload?.error;
      const err = new ApiError(
        res.status,
        e?.code ?? 'http_error',
        e?.message ?? `The service answered HTTP ${res.status}.`,
        e?.requestId ?? res.headers.get('x-request-id'),
        Array.isArray(e?.details) ? e.details : [],
      );
      if (res.status === 401) onUnauthorized(err);
      throw err;
    }
    if (payload === null) throw new ApiError(res.status, 'bad_response', 'The service sent a response the page cannot read.', res.headers.get('x-request-id'));
    return payload as T;
  }

  return {
    shop: () => call('GET', '/shop'),
    upgrade: () => call('POST', '/billing/upgrade', {}),
    upgradeOutcome: (chargeId) => call('GET', `/billing/upgrade/${encodeURIComponent(chargeId)}`),
    keys: () => call('GET', '/keys'),
    generateKey: (name, grant) => call('POST', '/keys', name ? { name, ...grant } : grant),
    revokeKey: (id) => call('POST', `/keys/${encodeURIComponent(id)}/revoke`, {}),
    updateKeyPermissions: (id, permissions) => call('PATCH', `/keys/${encodeURIComponent(id)}`, { permissions }),
    contracts: (q) => {
      const params = new URLSearchParams();
      if (q.query) params.set('query', q.query);
      filterParams(q, params);
      if (q.cursor) params.set('cursor', q.cursor);
      params.set('limit', String(q.limit ?? 20));
      return call('GET', `/contracts?${params}`);
    },
    contract: (id) => call('GET', `/contracts/${encodeURIComponent(id)}`),
    act: (id, action) => call('POST', `/contracts/${encodeURIComponent(id)}/actions`, action),
    edit: (id, edit) => call('POST', `/contracts/${encodeURIComponent(id)}/edits`, edit),
    catalogVariants: () => call('GET', '/catalog/variants'),
    events: (id, cursor) => call('GET', `/contracts/${encodeURIComponent(id)}/events${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ''}`),
    webhookEndpoints: () => call('GET', '/webhook-endpoints'),
    webhookEventTypes: () => call('GET', '/webhook-event-types'),
    webhookEndpoint: (id) => call('GET', endpointPath(id)),
    createWebhookEndpoint: (input) => call('POST', '/webhook-endpoints', input),
    updateWebhookEndpoint: (id, patch) => call('PATCH', endpointPath(id), patch),
    deleteWebhookEndpoint: (id) => call('DELETE', endpointPath(id)),
    revealWebhookSecret: (id) => call('GET', `${endpointPath(id)}/secret`),
    rotateWebhookSecret: (id) => call('POST', `${endpointPath(id)}/rotate-secret`, {}),
    sendTestWebhook: (id, type) => call('POST', `${endpointPath(id)}/test`, { type }),
    webhookDeliveries: (id, q) => {
      const params = new URLSearchParams({ limit: String(q.limit ?? 20) });
      if (q.cursor) params.set('cursor', q.cursor);
      return call('GET', `${endpointPath(id)}/deliveries?${params}`);
    },
    resendWebhookDelivery: (id, deliveryId) => call('POST', `${endpointPath(id)}/deliveries/${encodeURIComponent(deliveryId)}/resend`, {}),
    resendFailedWebhookDeliveries: (id, since) => call('POST', `${endpointPath(id)}/resend-failed`, { since }),
    requestLog: (q) => {
      const params = new URLSearchParams({ limit: String(q.limit ?? 25) });
      for (const name of ['keyId', 'connectionId', 'status', 'path', 'before', 'cursor'] as const) if (q[name]) params.set(name, q[name]!);
      return call('GET', `/request-log?${params}`);
    },
    connections: () => call('GET', '/connections'),
    disconnect: (id) => call('POST', `/connections/${encodeURIComponent(id)}/disconnect`, {}),
    authorization: (request) => call('GET', `/oauth/authorization?${new URLSearchParams(request)}`),
    decideAuthorization: (request, approve, permissions) => call('POST', '/oauth/authorization', { request, approve, ...(permissions && { permissions }) }),
    billingAttempts: (contractId, cursor) =>
      call('GET', `/contracts/${encodeURIComponent(contractId)}/billing-attempts?limit=10${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`),
    billingPolicy: () => call('GET', '/billing-policy'),
    saveBillingPolicy: (policy) => call('PUT', '/billing-policy', policy),
    renewals: (q) => call('GET', `/renewals?days=${q.days}&ahead=${q.ahead}`),
    contractCount: (filter) => call('GET', `/contracts/count?${filterParams(filter)}`),
    createBulkJob: (body) => call('POST', '/bulk-jobs', body),
    bulkJobs: (q) => {
      const params = new URLSearchParams({ limit: String(q.limit ?? 20) });
      if (q.cursor) params.set('cursor', q.cursor);
      return call('GET', `/bulk-jobs?${params}`);
    },
    bulkJob: (id) => call('GET', bulkJobPath(id)),
    bulkJobResults: (id, q) => {
      const params = new URLSearchParams({ limit: String(q.limit ?? 20) });
      if (q.status) params.set('status', q.status);
      if (q.cursor) params.set('cursor', q.cursor);
      return call('GET', `${bulkJobPath(id)}/results?${params}`);
    },
    bulkJobResultsCsv: (id) => call('GET', `${bulkJobPath(id)}/results`, undefined, 'text/csv'),
    startBulkJob: (id) => call('POST', `${bulkJobPath(id)}/start`, {}),
    cancelBulkJob: (id) => call('POST', `${bulkJobPath(id)}/cancel`, {}),
  };
}
