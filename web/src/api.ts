import type { Session } from './auth';

/** Shapes of the admin JSON API (src/http/admin/routes.ts). */
export type ApiAccessReason = 'enterprise' | 'free_period' | 'plan_required';
export type ShopInfo = {
  shop: { domain: string; plan: string; apiAccess: { allowed: boolean; reason: ApiAccessReason; freePeriodEndsAt: string | null } };
  limits: { maxActiveKeys: number };
};
export type KeyAccess = 'read_write' | 'read_only';
export type ApiKey = {
  id: string;
  name: string | null;
  fingerprint: string;
  access: KeyAccess;
  status: 'active' | 'revoked';
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
};
export type KeyList = { keys: ApiKey[]; activeCount: number };
export type ContractStatus = 'ACTIVE' | 'PAUSED' | 'CANCELLED' | 'EXPIRED' | 'FAILED';
export type Contract = {
  id: string;
  status: ContractStatus;
  customer: { id: string; email: string };
  billingPolicy: { interval: 'DAY' | 'WEEK' | 'MONTH' | 'YEAR'; intervalCount: number };
  nextBillingDate: string;
  lines: { title: string; variantId: string; quantity: number; price: { amount: string; currencyCode: string } }[];
  pausedAt: string | null;
  resumeAt: string | null;
  cancelledAt: string | null;
  cancellationReason: string | null;
  createdAt: string;
  updatedAt: string;
};
export type ContractEvent = {
  id: string;
  type: string;
  at: string;
  actor: { type: 'api_key' | 'mcp' | 'admin' | 'scheduler'; keyFingerprint?: string };
  from: ContractStatus;
  to: ContractStatus;
  data: Record<string, unknown>;
};

/** Every failure the page can show: the server's envelope, or a network failure in the same shape. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly requestId: string | null,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export type AdminApi = {
  shop(): Promise<ShopInfo>;
  keys(): Promise<KeyList>;
  generateKey(name: string | null, access: KeyAccess): Promise<{ key: ApiKey; secret: string }>;
  revokeKey(id: string): Promise<{ key: ApiKey }>;
  contracts(q: { status?: ContractStatus; cursor?: string; limit?: number }): Promise<{ contracts: Contract[]; nextCursor: string | null }>;
  events(contractId: string, cursor?: string): Promise<{ events: ContractEvent[]; nextCursor?: string | null }>;
};

const BASE = `${import.meta.env.BASE_URL}api`;

/**
 * The one way the page talks to the server. A token is obtained before every call and none leaves without one;
 * a 401 means the session is over, which `onUnauthorized` turns into the "get a new link" page.
 */
export function createAdminApi(session: Session, onUnauthorized: (err: ApiError) => void): AdminApi {
  async function call<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    let token: string;
    try {
      token = await session.getToken();
    } catch {
      throw new ApiError(0, 'no_session', 'Could not get a session token from the shop admin. Reload the app.', null);
    }
    if (!token) throw new ApiError(0, 'no_session', 'No session token: open the app again.', null);
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(BASE + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
    } catch {
      throw new ApiError(0, 'network_error', 'Could not reach the service. Check the connection and try again.', null);
    }
    const payload = (await res.json().catch(() => null)) as { error?: { code?: string; message?: string; requestId?: string } } | null;
    if (!res.ok) {
      const e = payload?.error;
      const err = new ApiError(
        res.status,
        e?.code ?? 'http_error',
        e?.message ?? `The service answered HTTP ${res.status}.`,
        e?.requestId ?? res.headers.get('x-request-id'),
      );
      if (res.status === 401) onUnauthorized(err);
      throw err;
    }
    if (payload === null) throw new ApiError(res.status, 'bad_response', 'The service sent a response the page cannot read.', res.headers.get('x-request-id'));
    return payload as T;
  }

  return {
    shop: () => call('GET', '/shop'),
    keys: () => call('GET', '/keys'),
    generateKey: (name, access) => call('POST', '/keys', name ? { name, access } : { access }),
    revokeKey: (id) => call('POST', `/keys/${encodeURIComponent(id)}/revoke`, {}),
    contracts: (q) => {
      const params = new URLSearchParams();
      if (q.status) params.set('status', q.status);
      if (q.cursor) params.set('cursor', q.cursor);
      params.set('limit', String(q.limit ?? 20));
      return call('GET', `/contracts?${params}`);
    },
    events: (id, cursor) => call('GET', `/contracts/${encodeURIComponent(id)}/events${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ''}`),
  };
}
