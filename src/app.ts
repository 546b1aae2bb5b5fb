import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import swagger from '@fastify/swagger';
import { jsonSchemaTransform, validatorCompiler } from 'fastify-type-provider-zod';
import type { Logger } from 'pino';
import { invalidInput, ServiceError } from './domain/errors.js';
import { replyJson } from './domain/json.js';
import { appendHook } from './http/hooks.js';
import { mentionsKey } from './domain/keys.js';
import { adminApiRoutes } from './http/admin/routes.js';
import { installApiKeyGate, type ApiKeyGate, type RateLimitOptions } from './http/apiKeyGate.js';
import { isApiPath } from './http/apiPaths.js';
import { adminUiRoutes } from './http/admin/static.js';
import { contractRoutes } from './http/api/v1/contracts.js';
import { webhookEndpointRoutes } from './http/api/v1/webhookEndpoints.js';
import { billingRoutes } from './http/api/v1/billing.js';
import { bulkJobRoutes } from './http/api/v1/bulkJobs.js';
import { keyRoutes } from './http/api/v1/key.js';
import { clientErrorHandler, frameworkErrors, keyInUrl, newRequestId, registerErrorHandling, sendError } from './http/errors.js';
import { installJsonBodyParser } from './http/body.js';
import { DEFAULT_CLIENT_LIMITS, limitConnectionsPerAddress, refuseConnect, requestTimeoutOptions, type ClientLimits } from './http/connections.js';
import { healthRoutes } from './http/health.js';
import { installIdempotency } from './http/idempotency.js';
import { accessLogWriter, requestLoggerFactory, scrubSecrets } from './http/logging.js';
import type { RequestLoad } from './http/load.js';
import { installMetrics, type MetricsOptions } from './http/metrics.js';
import { requestLogRecorder } from './http/requestLog.js';
import { RequestLogWriter, type RequestLogWriterOptions } from './db/requestLogWriter.js';
import { docsRoutes } from './http/docsPage.js';
import { openapiDocument, transformObject } from './http/openapi.js';
import { mcpRoutes } from './mcp/http.js';
import { oauthRoutes } from './http/oauth/routes.js';
import type { ServiceContext } from './services/context.js';
import type { Shopify } from './platform/shopify/index.js';
import { shopifyWebhookRoutes } from './http/shopifyWebhooks.js';
import type { AppCredentials } from './services/sessionTokens.js';
import { GITHUB_SECRET_SCANNING_KEYS_URL } from './domain/secretScanning.js';
import { secretScanningRoutes } from './http/secretScanning.js';
import { SecretScanningKeys } from './services/secretScanningKeys.js';

export type AppDeps = {
  ctx: ServiceContext;
  credentials: AppCredentials;
  logger: Logger;
  publicUrl?: string;
  /** The admin UI: SHOPIFY_API_KEY (when set, the page runs embedded with App Bridge) and where the build is. */
  adminUi?: { shopifyApiKey?: string; distDir?: string };
  /** Per-shop and failed-authentication limits on the API and MCP; none when absent (tests about other things). */
  rateLimit?: RateLimitOptions;
  /** GET /metrics: optional token and the process's collectors (scheduler stats). */
  metrics?: MetricsOptions;
  /** Which proxies' X-Forwarded-For gives the client IP (TRUST_PROXY); off by default. */
  trustProxy?: boolean | number | string[];
  /** Slow and greedy clients: REQUEST_BODY_TIMEOUT_MS and MAX_CONNECTIONS_PER_IP (defaults when absent). */
  clientLimits?: ClientLimits;
  /** Routes a test adds before the app is sealed (e.g. one that throws, to see the 500 envelope). */
  extraRoutes?: (app: FastifyInstance) => void;
  /** Counts the requests, for background work that gives way to them (workers/webhookDispatcher.ts). */
  load?: RequestLoad;
  /**
   * Platform mode (docs/product.md, "Platform mode"): the platform's webhooks in, install on the admin's session token,
   * the upgrade.
   */
  shopify?: { services: Shopify; onWebhook?: () => void };
  /** The public keys GitHub signs leaked-key reports with (GITHUB_SECRET_SCANNING_KEYS_URL; GitHub's own by default). */
  secretScanningKeys?: SecretScanningKeys;
  /** The request log (REQUEST_LOG): on unless `false`, with its writer's settings. */
  requestLog?: false | RequestLogWriterOptions;
};

declare module 'fastify' {
  interface FastifyInstance {
    /** The request log's writer (null when REQUEST_LOG is off): closed, after a last flush, when the app closes. */
    requestLog: RequestLogWriter | null;
  }
}

export const BODY_LIMIT = 16 * 1024;

/** Builds the HTTP application: one error handler, the public API, the admin API, docs and health. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const clientLimits = deps.clientLimits ?? DEFAULT_CLIENT_LIMITS;
  const app = Fastify({
    loggerInstance: deps.logger as unknown as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'requestId' }),
    childLoggerFactory: requestLoggerFactory as never,
    genReqId: newRequestId,
    requestIdHeader: false,
    bodyLimit: BODY_LIMIT,
    // While closing, the onRequest hook below answers requests that still arrive on open connections, in the
    // envelope (Fastify's own 503 has another body).
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    frameworkErrors,
    clientErrorHandler,
    // Fastify also takes a hop count, which its types omit.
    trustProxy: (deps.trustProxy ?? false) as boolean | string[],
    ...requestTimeoutOptions(clientLimits),
  });
  limitConnectionsPerAddress(app.server, {
    max: clientLimits.maxConnectionsPerIp,
    trustProxy: deps.trustProxy,
    onRefused: () => metrics.rateLimited('connections'),
  });
  refuseConnect(app.server);

  app.setValidatorCompiler(validatorCompiler);
  // Responses are built by our own mappers from typed rows; the schemas are there to document them. A contract the
  // change path has already written as JSON goes out as that text (domain/json.ts JsonText), not written twice.
  app.setSerializerCompiler(() => replyJson);
  app.removeContentTypeParser('text/plain');
  installJsonBodyParser(app);
  // The key gate is installed below, before any route; the error handler defers to it first.
  let gate: ApiKeyGate | undefined;
  const notFound = registerErrorHandling(app, (req, reply, err) => (gate ? gate.beforeErrorResponse(req, reply, err) : Promise.resolve(err)));

  // The per-request work every route shares, in one onRequest and one onResponse hook (each hook is a step on
  // every request's path).
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  const load = deps.load;
  app.addHook('onRequest', (req, reply, done) => {
    if (load) load.started++;
    reply.header('x-request-id', req.id);
    if (closing) {
      // Shutting down (SIGTERM): requests in flight finish, new ones on an open connection are turned away with
      // the connection closed, so the client retries on a fresh one (another instance, behind a load balancer).
      reply.header('connection', 'close');
      sendError(reply, new ServiceError('unavailable', 'This instance is shutting down. Retry the request.', { headers: { 'retry-after': '1' } }));
      return;
    }
    // Percent-encoded in any way too (domain/keys.ts).
    if (mentionsKey(req.url)) {
      (req as { keyInUrl?: boolean }).keyInUrl = true;
      sendError(reply, keyInUrl());
      return;
    }
    done();
  });
  const requestLog = deps.requestLog === false ? null : new RequestLogWriter(deps.ctx.db, deps.requestLog);
  app.decorate('requestLog', requestLog);
  if (requestLog) app.addHook('onClose', () => requestLog.close());
  const metrics = installMetrics(app, { ...deps.metrics, db: deps.ctx.db, requestLog: requestLog ?? undefined });
  const accessLog = accessLogWriter(deps.logger);
  // Before any route: their onRoute hooks must reach every route registered below (the API's and MCP's).
  gate = installApiKeyGate(app, { ctx: deps.ctx, rateLimit: deps.rateLimit, metrics, publicUrl: deps.publicUrl });
  const apiGate = gate;
  const recordRequest = requestLog ? requestLogRecorder(requestLog, deps.ctx.clock, (req) => apiGate.identify(req)) : null;
  app.addHook('onResponse', (req, reply, done) => {
    // The URL scrubbed once, for the access log and the request log alike.
    const keyInUrl = (req as { keyInUrl?: boolean }).keyInUrl;
    const scrubbed = keyInUrl ? undefined : scrubSecrets(req.url);
    const ms = reply.elapsedTime;
    accessLog({ requestId: req.id, method: req.method, url: scrubbed ?? '[redacted: key in URL]', statusCode: reply.statusCode, ms });
    metrics.observeRequest(req.method, req.routeOptions.url, reply.statusCode, ms);
    recordRequest?.(req, reply, ms, scrubbed);
    done();
  });
  // An unknown path or a wrong method under /api/v1 is a request of the API like any other: the key and the limit
  // come first (a caller without a valid key learns nothing about the routes), then 404 or 405.
  app.setNotFoundHandler(async (req, reply) => {
    if (isApiPath(req.url) && (await apiGate.guardUnmatched(req, reply))) return reply;
    return notFound(req, reply);
  });
  installIdempotency(app, { ctx: deps.ctx, metrics });

  await app.register(swagger, {
    // Document-level parts (info, servers, tags) and the pruning of unused components: src/http/openapi.ts.
    openapi: openapiDocument(deps.publicUrl),
    transform: jsonSchemaTransform,
    transformObject,
  });
  await app.register(docsRoutes);

  await app.register(healthRoutes, { ctx: deps.ctx });
  await app.register(
    async (api) => {
      // Unknown query parameters are refused like unknown body fields, each named: a route that declares its
      // parameters refuses the others by its schema, and one that declares none refuses any here.
      api.addHook('onRoute', (route) => {
        if (route.schema?.querystring || route.schema?.hide) return;
        // A callback hook, not an async one: it runs on every such request and almost always has nothing to say.
        route.preValidation = appendHook(route.preValidation, (req: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
          const names = Object.keys(req.query as object);
          done(names.length ? invalidInput(names.map((name) => ({ path: name, message: `unknown parameter "${name}"` }))) : undefined);
        });
      });
      api.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
      await api.register(contractRoutes, { ctx: deps.ctx });
      await api.register(webhookEndpointRoutes, { ctx: deps.ctx });
      await api.register(billingRoutes, { ctx: deps.ctx });
      await api.register(bulkJobRoutes, { ctx: deps.ctx });
      await api.register(keyRoutes, { ctx: deps.ctx });
    },
    { prefix: '/api/v1' },
  );
  await app.register(
    async (admin) => {
      admin.addHook('onRoute', (route) => {
        route.schema = { ...route.schema, hide: true };
      });
      await admin.register(adminApiRoutes, { ctx: deps.ctx, credentials: deps.credentials, shopify: deps.shopify?.services, publicUrl: deps.publicUrl });
    },
    { prefix: '/admin/api' },
  );
  await app.register(adminUiRoutes, { prefix: '/admin', notFound, ...deps.adminUi });
  await app.register(mcpRoutes, { ctx: deps.ctx });
  await app.register(oauthRoutes, { ctx: deps.ctx, publicUrl: deps.publicUrl, rateLimit: deps.rateLimit });
  const secretScanningKeys =
    deps.secretScanningKeys ?? new SecretScanningKeys({ url: GITHUB_SECRET_SCANNING_KEYS_URL, clock: deps.ctx.clock, warn: (o, m) => deps.logger.warn(o, m) });
  await app.register(secretScanningRoutes, { ctx: deps.ctx, keys: secretScanningKeys });
  if (deps.shopify) await app.register(shopifyWebhookRoutes, { ctx: deps.ctx, shopify: deps.shopify.services, onReceived: deps.shopify.onWebhook });
  deps.extraRoutes?.(app);
  await app.ready();
  return app;
}
