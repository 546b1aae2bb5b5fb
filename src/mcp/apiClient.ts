import { randomUUID } from 'node:crypto';
import { ERROR_STATUS, ServiceError, type ErrorCode, type ErrorDetail } from '../domain/errors.js';
import type { CurrentKey } from '../domain/resources.js';
import type { ContractOperations } from './operations.js';

/** A refusal from the HTTP API, as its envelope said it: code, message, details and the API's request id. */
export class ApiError extends ServiceError {
  constructor(
    code: ErrorCode,
    message: string,
    readonly requestId: string,
    details?: ErrorDetail[],
  ) {
    super(code, message, { details });
  }
}

type Envelope = { error?: { code?: unknown; message?: unknown; requestId?: unknown; details?: unknown } };

const TIMEOUT_MS = 30_000;
export const USER_AGENT = 'svc-mcp-stdio/1';
/** Attempts per call, and the pause before each retry (doubling), for answers that say "try again". */
const ATTEMPTS = 3;
const RETRY_DELAY_MS = 300;

/**
 * The contract operations as any client of the HTTP API performs them (what `svc mcp-stdio` runs its tools on): the
 * key in `Authorization: Bearer`, never in a URL; refusals come back as ApiErrors carrying the API's envelope.
 *
 * Retries, as a careful client of the API does: a request that got no answer (the server unreachable, a timeout, a
 * cut connection) or an answer that says to come back (503 unavailable, 409 idempotency_in_progress) is sent again,
 * up to ATTEMPTS times. An action carries an Idempotency-Key made for that tool call, the same on every attempt, so
 * a retry after a lost answer replays the first outcome instead of acting twice (a second skip, say).
 */
export function httpOperations(
  baseUrl: string,
  apiKey: string,
  fetchImpl: typeof fetch = fetch,
  opts: { retryDelayMs?: number } = {},
): ContractOperations & { currentKey(): Promise<CurrentKey> } {
  const base = baseUrl.replace(/\/+$/, '');
  const retryDelayMs = opts.retryDelayMs ?? RETRY_DELAY_MS;

  /** One attempt: the parsed answer, or the error it amounts to. */
  async function attempt<T>(method: 'GET' | 'POST', path: string, body: unknown, idempotencyKey: string | undefined): Promise<T> {
    let res: Response;
    let text: string;
    try {
      res = await fetchImpl(`${base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${apiKey}`,
          accept: 'application/json',
          // How the merchant's request log tells these calls from the integrator's own.
          'user-agent': USER_AGENT,
          ...(body !== undefined && { 'content-type': 'application/json' }),
          ...(idempotencyKey && { 'idempotency-key': idempotencyKey }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
      // Inside the try: a connection cut or a timeout while the body arrives is "no answer" as well.
      text = await res.text();
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      const why = cause?.code ?? cause?.message ?? (err as Error).message;
      throw new ServiceError('unavailable', `Cannot reach the svc API at ${base} (${why}). Is the server running, and is SVC_BASE_URL right?`);
    }
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    if (res.ok && json !== undefined) return json as T;
    const e = (json as Envelope | undefined)?.error;
    if (e && typeof e.code === 'string' && e.code in ERROR_STATUS && typeof e.message === 'string') {
      const details = Array.isArray(e.details) ? (e.details as ErrorDetail[]) : undefined;
      throw new ApiError(e.code as ErrorCode, e.message, typeof e.requestId === 'string' ? e.requestId : '', details);
    }
    throw new ServiceError('internal_error', `Unexpected answer from ${base}${path.split('?')[0]}: HTTP ${res.status}. Is SVC_BASE_URL the svc server?`);
  }

  async function call<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    const idempotencyKey = method === 'POST' ? randomUUID() : undefined;
    for (let n = 1; ; n++) {
      try {
        return await attempt<T>(method, path, body, idempotencyKey);
      } catch (err) {
        const code = (err as ServiceError).code;
        if (n >= ATTEMPTS || (code !== 'unavailable' && code !== 'idempotency_in_progress')) throw err;
        await new Promise((r) => setTimeout(r, retryDelayMs * 2 ** (n - 1)));
      }
    }
  }

  const query = (q: Record<string, string | number | readonly string[] | undefined>) => {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(q)) {
      if (Array.isArray(v)) for (const each of v) params.append(k, String(each));
      else if (v !== undefined) params.set(k, String(v));
    }
    const s = params.toString();
    return s ? `?${s}` : '';
  };
  // Tool arguments are validated before they get here (contract ids are digits), but a path segment is encoded anyway.
  const contract = (id: string) => `/api/v1/subscription-contracts/${encodeURIComponent(id)}`;

  return {
    /** What the key is (GET /api/v1/key, which any key may call): whether it is accepted, and what it may do. */
    currentKey: async () => (await call<{ key: CurrentKey }>('GET', '/api/v1/key')).key,
    getContract: async (id) => (await call<{ contract: never }>('GET', contract(id))).contract,
    listContracts: (q) => call('GET', `/api/v1/subscription-contracts${query(q)}`),
    actOnContract: async (id, body) => (await call<{ contract: never }>('POST', `${contract(id)}/actions`, body)).contract,
    listContractEvents: (id, { limit, cursor }) => call('GET', `${contract(id)}/events${query({ limit, cursor })}`),
    editContract: (id, body) => call('POST', `${contract(id)}/edits`, body),
    listBillingAttempts: ({ contractId, status, since, limit, cursor }) =>
      contractId
        ? call('GET', `${contract(contractId)}/billing-attempts${query({ limit, cursor })}`)
        : call('GET', `/api/v1/billing-attempts${query({ status, since, limit, cursor })}`),
    getUpcomingRenewals: (id, count) => call('GET', `${contract(id)}/upcoming${query({ count })}`),
    createBulkPreview: async (body) => (await call<{ bulkJob: never }>('POST', '/api/v1/bulk-jobs', { ...body, preview: true })).bulkJob,
    getBulkJob: async (id) => (await call<{ bulkJob: never }>('GET', `/api/v1/bulk-jobs/${encodeURIComponent(id)}`)).bulkJob,
    startBulkJob: async (id) => (await call<{ bulkJob: never }>('POST', `/api/v1/bulk-jobs/${encodeURIComponent(id)}/start`, {})).bulkJob,
    listBulkJobs: ({ status, limit, cursor }) => call('GET', `/api/v1/bulk-jobs${query({ status, limit, cursor })}`),
    listBulkJobResults: (id, { status, limit, cursor }) => call('GET', `/api/v1/bulk-jobs/${encodeURIComponent(id)}/results${query({ status, limit, cursor })}`),
  };
}
