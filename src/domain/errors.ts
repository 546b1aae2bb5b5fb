import type { z } from 'zod';
import { scrubKeys } from './keys.js';
// Plain-words messages for every zod schema of the process (installed once, on import).
import './validationMessages.js';

/** Every error code a client can receive, with its HTTP status: the one table the error handler maps from. */
export const ERROR_STATUS = {
  invalid_request: 400,
  unsupported_action: 400,
  key_in_url: 400,
  unauthorized: 401,
  plan_required: 403,
  insufficient_scope: 403,
  app_not_installed: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  invalid_state: 409,
  billing_in_progress: 409,
  recently_billed: 409,
  key_limit_reached: 409,
  too_many_jobs: 409,
  endpoint_limit_reached: 409,
  idempotency_in_progress: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  idempotency_key_reused: 422,
  platform_rejected: 422,
  invalid_edit: 422,
  too_many_contracts: 422,
  rate_limited: 429,
  internal_error: 500,
  unavailable: 503,
  platform_unavailable: 503,
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

/**
 * A change sent to the platform whose answer never came (no answer in time, a cut connection, a 5xx): it may have been
 * made there. 503 platform_unavailable like any platform failure, but whoever would send it again must know first
 * (a status change may be sent again: its end state is the same; an edit may not: a line would be added twice).
 */
export class OutcomeUnknown extends ServiceError {
  constructor(message: string, opts: { headers?: Record<string, string> } = {}) {
    super('platform_unavailable', message, opts);
    this.name = 'OutcomeUnknown';
  }
}

export const MESSAGES = {
  unauthorized: 'The API key is invalid or has been revoked.',
  missingKey: 'Missing API key. Send it as "Authorization: Bearer <API_KEY>".',
  planRequired: 'External API access requires the Enterprise plan. The shop owner can upgrade the plan to restore access.',
  appNotInstalled: 'The shop has uninstalled the app. Its API keys work again when the app is reinstalled.',
  contractNotFound: 'No subscription contract with this id exists for this shop.',
  internal: 'An unexpected error occurred. Try again; if it persists, contact support with the request id.',
  unavailable: 'The service cannot reach its database right now. Try again shortly.',
} as const;

export const invalidRequest = (message: string, details?: ErrorDetail[]) =>
  new ServiceError('invalid_request', message, { details });

/** Zod issues as the envelope's `details`, naming unknown fields one by one. */
export function issuesToDetails(issues: z.core.$ZodIssue[], prefix: (string | number)[] = []): ErrorDetail[] {
  const out: ErrorDetail[] = [];
  for (const issue of issues) {
    const base = [...prefix, ...issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p))];
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) out.push({ path: [...base, key].join('.'), message: `unknown field "${key}"` });
    } else {
      out.push({ path: base.join('.'), message: issue.message });
    }
  }
  return out;
}

/**
 * A validation failure with its details, summed up in the message the way every surface says it: "Invalid request:
 * resumeAt must be in the future (and 1 more)." `what` names the input ("Invalid arguments" for an MCP tool).
 */
export function invalidInput(details: ErrorDetail[], what = 'Invalid request'): ServiceError {
  const first = details[0];
  const more = details.length > 1 ? ` (and ${details.length - 1} more)` : '';
  // "limit must be at most 100"; an unknown field or parameter names itself ("unknown field \"colour\"").
  const subject = first?.path && !first.message.startsWith('unknown ') ? `${first.path} ` : '';
  const message = first ? `${what}: ${subject}${first.message}${more}.` : `${what}.`;
  return new ServiceError('invalid_request', message, { details });
}

/** A value read with `schema`, or the validation failure (invalid_request with details) every surface returns. */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw invalidInput(issuesToDetails(parsed.error.issues));
  return parsed.data;
}

export type ErrorEnvelopeBody = { error: { code: ErrorCode; message: string; requestId: string; details?: ErrorDetail[] } };

/**
 * The envelope of every error on every surface (docs/product.md §4): the HTTP API, the admin API, MCP tool errors. Messages
 * may echo what the client sent (an unknown action, an unknown field's name): never a key.
 */
export function errorEnvelope(err: ServiceError, requestId: string): ErrorEnvelopeBody {
  const error: ErrorEnvelopeBody['error'] = { code: err.code, message: scrubKeys(err.message), requestId };
  if (err.details?.length) error.details = err.details.map((d) => ({ path: scrubKeys(d.path), message: scrubKeys(d.message) }));
  return { error };
}
