import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import FindMyWay from 'find-my-way';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { isDatabaseUnavailable } from '../db/client.js';
import { errorEnvelope, invalidInput, MESSAGES, ServiceError, type ErrorDetail } from '../domain/errors.js';
import { mentionsKey } from '../domain/keys.js';

/** A key in a URL ends up in proxies' and browsers' histories: the request is refused, and its URL never logged. */
export const keyInUrl = (): ServiceError =>
  new ServiceError('key_in_url', 'An API key must never be sent in a URL. Send it only in the Authorization header, and revoke this key: it may have been exposed.');

/** The envelope of every error on every surface (docs/product.md §4). */
export const ErrorEnvelope = z
  .object({
    error: z.object({
      code: z.string(),
      message: z.string(),
      requestId: z.string(),
      details: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
    }),
  })
  .meta({ id: 'Error' });

export function sendError(reply: FastifyReply, err: ServiceError): FastifyReply {
  if (err.headers) reply.headers(err.headers);
  // For the request log: the code the client got.
  reply.request.errorCode = err.code;
  // Answered before the request's body has arrived (a refusal by the key gate or the admin's session check, a body
  // too large): the connection closes after the answer, so a client cannot go on trickling a body nobody will read
  // (Node would otherwise read it to its end, to keep the connection). Injected requests have no `complete`.
  if (reply.request.raw.complete === false) reply.header('connection', 'close');
  return reply.code(err.status).type('application/json; charset=utf-8').send(errorEnvelope(err, String(reply.request.id)));
}

function validationDetails(err: FastifyError): ErrorDetail[] {
  const context = (err as { validationContext?: string }).validationContext;
  return (err.validation ?? []).flatMap((v) => {
    const params = v.params as { keys?: string[]; issue?: { code?: string; keys?: string[] } } | undefined;
    const where = String(v.instancePath ?? '').replace(/^\//, '').replace(/\//g, '.');
    // A query parameter is named as it is written: a repeated one (status=…&status=…) without the index of the bad value.
    const path = where === '' && context === 'params' ? 'contract_id' : context === 'querystring' ? where.replace(/\.\d+$/, '') : where;
    // Unknown parameters are named one by one (fastify-type-provider-zod reports them as the keyword with `keys`).
    const unknown = v.keyword === 'unrecognized_keys' ? params?.keys : params?.issue?.code === 'unrecognized_keys' ? params.issue.keys : undefined;
    if (unknown?.length) {
      return unknown.map((key) => ({ path: where ? `${where}.${key}` : key, message: context === 'body' ? `unknown field "${key}"` : `unknown parameter "${key}"` }));
    }
    return [{ path, message: v.message ?? 'is invalid' }];
  });
}

/** Maps anything thrown to a ServiceError; unknown errors become a fixed 500 that reveals nothing. */
export function toServiceError(err: unknown, req: FastifyRequest): ServiceError {
  if (err instanceof ServiceError) return err;
  const fe = err as FastifyError;
  if (hasZodFastifySchemaValidationErrors(fe)) {
    return invalidInput(validationDetails(fe));
  }
  // The request's connection was closed with a 408 while its body was being read (clientErrorHandler): whatever
  // reading it raised, that is what the request got.
  if (requestTimedOut(req)) {
    // Its response cannot go out (the connection is closed), so no access line follows: this is the request's line.
    req.log.info({ method: req.method, statusCode: 408 }, 'request timed out: its body did not arrive in full in time');
    return new ServiceError('request_timeout', REQUEST_TIMEOUT_MESSAGE);
  }
  if (fe?.statusCode === 413 || fe?.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    // Each route says its own limit (the API's 16 KiB, the platform's webhooks' 1 MiB…).
    const limit = req.routeOptions?.bodyLimit ?? req.server.initialConfig.bodyLimit ?? 0;
    return new ServiceError('payload_too_large', `The request body is larger than ${byteSize(limit)}, the most this endpoint takes.`);
  }
  if (fe?.statusCode === 415 || fe?.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return new ServiceError('unsupported_media_type', 'Send the body as JSON with "Content-Type: application/json".');
  }
  if (fe?.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') {
    return new ServiceError('invalid_request', 'The body is empty although Content-Type is application/json; send a JSON object.');
  }
  if (fe instanceof SyntaxError || fe?.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
    return new ServiceError('invalid_request', 'The request body is not valid JSON.');
  }
  if (typeof fe?.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    req.log.info({ code: fe.code }, 'client error from the framework');
    return new ServiceError('invalid_request', 'The request could not be read.');
  }
  if (isDatabaseUnavailable(err)) {
    req.log.error({ err: { message: (err as Error).message, code: (err as { code?: string }).code } }, 'database unavailable');
    return new ServiceError('unavailable', MESSAGES.unavailable, { headers: { 'retry-after': '5' } });
  }
  req.log.error({ err }, 'unexpected error');
  return new ServiceError('internal_error', MESSAGES.internal);
}

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

export type NotFoundHandler = (req: FastifyRequest, reply: FastifyReply) => FastifyReply;

/**
 * One error handler, a 404 that knows the route table (405 with `Allow` for a known path with the wrong method),
 * and nothing else: every error leaves as the envelope. Returns the not-found handler, so a plugin with a not-found
 * handler of its own (the admin UI's page fallback) can defer to it, and the caller installs it (after whatever
 * it composes it with).
 */
export function registerErrorHandling(
  app: FastifyInstance,
  /** A last step before an error is answered (the key gate's: confirm a pending caller, record a refusal). */
  beforeErrorResponse?: (req: FastifyRequest, reply: FastifyReply, err: ServiceError) => Promise<ServiceError>,
): NotFoundHandler {
  const known = FindMyWay({ ignoreTrailingSlash: false });
  app.addHook('onRoute', (route) => {
    for (const m of [route.method].flat()) {
      if (m === 'HEAD' || m === 'OPTIONS' || !(METHODS as readonly string[]).includes(m)) continue;
      try {
        known.on(m as (typeof METHODS)[number], route.url, () => {});
      } catch {
        // duplicate shapes registered by plugins: already known
      }
    }
  });

  app.setErrorHandler(async (err, req, reply) => {
    const mapped = toServiceError(err, req);
    let final = mapped;
    // A last step that fails itself still leaves as the envelope (never Fastify's own answer to a failing handler).
    if (beforeErrorResponse) final = await beforeErrorResponse(req, reply, mapped).catch((e: unknown) => toServiceError(e, req));
    return sendError(reply, final);
  });

  const notFound: NotFoundHandler = (req, reply) => {
    const path = req.url.split('?')[0];
    const allowed = METHODS.filter((m) => known.find(m, path));
    // A wildcard route that found nothing (a missing static file) allows this very method: that is a 404, not a 405.
    const method = req.method === 'HEAD' ? 'GET' : req.method;
    if (allowed.length && !(allowed as string[]).includes(method)) {
      reply.header('allow', allowed.join(', '));
      return sendError(reply, new ServiceError('method_not_allowed', `${req.method} is not allowed here. Allowed: ${allowed.join(', ')}.`));
    }
    return sendError(reply, new ServiceError('not_found', `No route ${req.method} ${mentionsKey(path) ? '[redacted]' : path.slice(0, 200)}.`));
  };
  return notFound;
}

/** Where a request's id is kept on Node's own request, for an answer given below the framework (a 408). */
const REQUEST_ID = Symbol('svc.requestId');

/** Fastify's genReqId: a UUID, kept on the raw request too. */
export function newRequestId(raw: object): string {
  return ((raw as { [REQUEST_ID]?: string })[REQUEST_ID] = randomUUID());
}

/** An error answered on the socket itself, below the framework: the envelope, X-Request-Id, and `Connection: close`. */
export function rawErrorResponse(
  status: number,
  reason: string,
  err: ServiceError,
  opts: { headers?: Record<string, string>; requestId?: string } = {},
): string {
  const requestId = opts.requestId ?? randomUUID();
  const body = JSON.stringify(errorEnvelope(err, requestId));
  const extra = Object.entries({ ...err.headers, ...opts.headers })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  return (
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
    `X-Request-Id: ${requestId}\r\n${extra}Connection: close\r\n\r\n${body}`
  );
}

const REQUEST_TIMEOUT_MESSAGE = 'The request did not arrive in full in time; the connection is closed.';

/** Sockets whose request did not arrive in time: the framework's side of that request reports it as the 408 it got. */
const timedOut = new WeakSet<object>();

/** True when `req`'s connection was closed with a 408 because its request did not arrive in full in time. */
export const requestTimedOut = (req: FastifyRequest): boolean => timedOut.has(req.raw.socket);

/**
 * A request Node's HTTP parser cannot read at all (not HTTP, a control character in a header, Content-Length beside
 * Transfer-Encoding, a broken chunk; headers over Node's limit; a request, body included, that has not arrived in
 * full within REQUEST_BODY_TIMEOUT_MS): it never reaches a route, or never gets its body, so it is answered here, on
 * the socket, in the envelope with an X-Request-Id like everything else (Fastify's default answer is a body of its
 * own), and the connection is closed, as it cannot be read further.
 */
export function clientErrorHandler(err: Error & { code?: string }, socket: Duplex): void {
  // The response of the request being read, if it has one (Node's own answer looks at it too). One already begun
  // cannot be followed by another: the connection just closes.
  const inFlight = (socket as { _httpMessage?: { headersSent?: boolean; req?: { [REQUEST_ID]?: string } } })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    timedOut.add(socket);
    // A request the app has begun (its body is late) is answered under its own id, the one its log line carries.
    const answer = rawErrorResponse(408, 'Request Timeout', new ServiceError('request_timeout', REQUEST_TIMEOUT_MESSAGE), {
      requestId: inFlight?.req?.[REQUEST_ID],
    });
    // Closed once the answer is out: a client still trickling bytes must not keep the connection open.
    socket.end(answer, () => socket.destroy());
    return;
  }
  const [status, reason, message] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request Header Fields Too Large', 'The request headers are too large.']
      : [400, 'Bad Request', 'The request is not valid HTTP.'];
  socket.end(rawErrorResponse(status, reason, new ServiceError('invalid_request', message)));
}

/**
 * Errors Fastify raises before routing, where no hook runs (a malformed percent-encoding in the URL, a path
 * parameter over its length limit): the same envelope and X-Request-Id as everything else, instead of Fastify's
 * default body, which echoes the URL (and so whatever a client put in it).
 */
export function frameworkErrors(err: FastifyError, req: FastifyRequest, reply: FastifyReply): void {
  reply.header('x-request-id', req.id);
  // No access line follows these (the request never reaches the hooks): this is the request's line, without its URL.
  req.log.info({ code: err.code }, 'malformed URL refused');
  if (mentionsKey(req.url)) {
    sendError(reply, keyInUrl());
    return;
  }
  const message =
    err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'A path segment of the URL is too long.' : 'The URL is not valid: it contains a malformed percent-encoding.';
  sendError(reply, new ServiceError('invalid_request', message));
}

/** A size as the limits are set: whole MiB or KiB where it is one, else bytes. */
export function byteSize(bytes: number): string {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}
