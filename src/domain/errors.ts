/** Every error code a client can receive, with its HTTP status: the one table the error handler maps from. */
export const ERROR_STATUS = {
  invalid_request: 400,
  unsupported_action: 400,
  key_in_url: 400,
  unauthorized: 401,
  plan_required: 403,
  not_found: 404,
  method_not_allowed: 405,
  invalid_state: 409,
  key_limit_reached: 409,
  idempotency_in_progress: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  idempotency_key_reused: 422,
  rate_limited: 429,
  internal_error: 500,
  unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export type ErrorDetail = { path: string; message: string };

/** A failure a client can act on. Services throw these; the HTTP, MCP and CLI surfaces render them. */
export class ServiceError extends Error {
  readonly code: ErrorCode;
  readonly details?: ErrorDetail[];
  readonly headers?: Record<string, string>;

  constructor(code: ErrorCode, message: string, opts: { details?: ErrorDetail[]; headers?: Record<string, string> } = {}) {
    // A client error needs no stack, and capturing one is most of the cost of a refused request (every 401 of
    // a key-spraying client): skip it.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
    this.name = 'ServiceError';
    this.code = code;
    this.details = opts.details;
    this.headers = opts.headers;
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }
}

export const MESSAGES = {
  unauthorized: 'The API key is invalid or has been revoked.',
  missingKey: 'Missing API key. Send it as "Authorization: Bearer <API_KEY>".',
  planRequired: 'External API access requires the Enterprise plan. The shop owner can upgrade the plan to restore access.',
  contractNotFound: 'No subscription contract with this id exists for this shop.',
  internal: 'An unexpected error occurred. Try again; if it persists, contact support with the request id.',
  unavailable: 'The service cannot reach its database right now. Try again shortly.',
} as const;

export const invalidRequest = (message: string, details?: ErrorDetail[]) =>
  new ServiceError('invalid_request', message, { details });
