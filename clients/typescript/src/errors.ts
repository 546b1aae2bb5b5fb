/** One problem with a field of the request, as the API's `details` names it. */
export type SvcErrorDetail = { path: string; message: string };

/**
 * The API refused the request: every refusal carries the API's error envelope (`{ error: { code, message,
 * requestId, details? } }`). `code` is the stable thing to branch on (`not_found`, `invalid_state`, `rate_limited`…);
 * quote `requestId` when asking for support.
 */
export class SvcApiError extends Error {
  override readonly name = 'SvcApiError';
  /** The HTTP status (404, 409…). */
  readonly status: number;
  /** The envelope's code; `unexpected_response` when the body was not the envelope (e.g. a proxy's own 502 page). */
  readonly code: string;
  /** The request's id (the envelope's, else the X-Request-Id header; '' when neither came back). */
  readonly requestId: string;
  /** Per-field problems of a 400 `invalid_request`. */
  readonly details: SvcErrorDetail[] | undefined;
  /** Retry-After in seconds, when the answer carried one (429, 503, 409 idempotency_in_progress). */
  readonly retryAfterSeconds: number | undefined;
  /** The Idempotency-Key the request was sent with: retry the same action with it to get its outcome, never twice. */
  readonly idempotencyKey: string | undefined;

  constructor(init: {
    status: number;
    code: string;
    message: string;
    requestId: string;
    details?: SvcErrorDetail[];
    retryAfterSeconds?: number;
    idempotencyKey?: string;
  }) {
    super(init.message);
    this.status = init.status;
    this.code = init.code;
    this.requestId = init.requestId;
    this.details = init.details;
    this.retryAfterSeconds = init.retryAfterSeconds;
    this.idempotencyKey = init.idempotencyKey;
  }
}

/**
 * No answer came back, after the retries (the server unreachable, a cut connection, a timeout). For an action the
 * outcome is unknown: send it again later with `idempotencyKey` and the API answers with what happened, once.
 */
export class SvcConnectionError extends Error {
  override readonly name = 'SvcConnectionError';
  readonly idempotencyKey: string | undefined;
  constructor(message: string, opts: { cause: unknown; idempotencyKey?: string }) {
    super(message, { cause: opts.cause });
    this.idempotencyKey = opts.idempotencyKey;
  }
}

/** Seconds from a Retry-After header (delta-seconds or an HTTP date), or undefined. */
export function retryAfterSeconds(headers: Headers, now = Date.now()): number | undefined {
  const value = headers.get('retry-after');
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

/** The SvcApiError for a refused response, from its (already parsed) body. */
export function apiError(response: Response, body: unknown, idempotencyKey: string | undefined): SvcApiError {
  const e = (body as { error?: { code?: unknown; message?: unknown; requestId?: unknown; details?: unknown } } | undefined)?.error;
  const headerId = response.headers.get('x-request-id') ?? '';
  const retryAfter = retryAfterSeconds(response.headers);
  if (e && typeof e.code === 'string' && typeof e.message === 'string') {
    return new SvcApiError({
      status: response.status,
      code: e.code,
      message: e.message,
      requestId: typeof e.requestId === 'string' ? e.requestId : headerId,
      details: Array.isArray(e.details) ? (e.details as SvcErrorDetail[]) : undefined,
      retryAfterSeconds: retryAfter,
      idempotencyKey,
    });
  }
  return new SvcApiError({
    status: response.status,
    code: 'unexpected_response',
    message: `HTTP ${response.status} without the svc error envelope: is baseUrl the svc server?`,
    requestId: headerId,
    retryAfterSeconds: retryAfter,
    idempotencyKey,
  });
}
