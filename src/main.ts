import { openConfiguredDatabase } from './boot.js';
import { ConfigError, loadConfig } from './config.js';
import { EmbeddedDatabaseInUse } from './db/embeddedLock.js';
import { createLogger, scrubSecrets } from './http/logging.js';

/**
 * The rest of the server: loaded while the database opens (on the embedded database, compiling and starting
 * PostgreSQL takes seconds, and so does loading these modules; the two overlap).
 */
async function serverModules() {
  const [app, rateLimitStore, context, sessionTokens, workers, load, addressGuard, shopify, secretScanning, testGateway, billingOutcome, cli, control] = await Promise.all([
    import('./app.js'),
    import('./http/rateLimitStore.js'),
    import('./services/context.js'),
    import('./services/sessionTokens.js'),
    import('./workers/index.js'),
    import('./http/load.js'),
    import('./webhooks/addressGuard.js'),
    import('./platform/shopify/index.js'),
    import('./services/secretScanningKeys.js'),
    import('./services/testGateway.js'),
    import('./services/recordBillingOutcome.js'),
    import('./cli/run.js'),
    import('./cli/control.js'),
  ]);
  return { ...app, ...rateLimitStore, ...context, ...sessionTokens, ...workers, ...load, ...addressGuard, ...shopify, ...secretScanning, ...testGateway, ...billingOutcome, ...cli, ...control };
}

/** Boot: config → database (+ migrations) → app → listen → scheduler; SIGTERM/SIGINT drain and stop cleanly. */
async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`svc: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  const log = createLogger({ level: config.logLevel });
  // Each step of the start goes out at once: someone at `npm start` sees what it is doing while it prepares.
  const progress = (msg: string, fields: Record<string, unknown> = {}) => {
    log.info(fields, msg);
    log.flush();
  };
  progress('starting svc', { step: 'start' });
  if (config.webhooksAllowPrivate) {
    // A development switch that opens svc's outgoing requests to the machine's own network: said at every start, so
    // it is never left on in production unnoticed.
    log.warn(
      { setting: 'WEBHOOKS_ALLOW_PRIVATE' },
      'WEBHOOKS_ALLOW_PRIVATE=true: webhook endpoints may be loopback, private, link-local or cloud metadata addresses, and http:// on loopback. ' +
        'This is for development and tests only: in production it lets a webhook URL reach services on this machine and its network.',
    );
  }
  const loading = serverModules();
  loading.catch(() => undefined); // awaited below; a failure there is reported there
  let database;
  try {
    database = await openConfiguredDatabase(
      config,
      'svc server',
      (err) => log.warn({ err: { message: err.message } }, 'database connection lost'),
      progress,
    );
  } catch (err) {
    if (err instanceof EmbeddedDatabaseInUse) {
      process.stderr.write(`svc: ${err.message}\n`);
      process.exit(1);
    }
    process.stderr.write(`svc: could not open the database: ${scrubSecrets((err as Error).message)}\n`);
    process.exit(1);
  }
  const {
    runCli,
    serveCliControl,
    serverHost,
    buildApp,
    createRateLimitStore,
    createServiceContext,
    systemClock,
    loadAppCredentials,
    createWorkers,
    RequestLoad,
    systemResolve,
    shopifyPlatform,
    SecretScanningKeys,
    TestGateway,
    recordBillingOutcome,
  } = await loading;
  // Platform mode: the port calls the platform first; the rest (install, webhooks in, reconciliation) follows.
  const platform = config.platform.kind === 'shopify' ? shopifyPlatform({ db: database.db, clock: systemClock }, config.platform) : null;
  const ctx = createServiceContext({
    db: database.db,
    clock: systemClock,
    freeUntil: config.freeUntil,
    warn: (obj, msg) => log.warn(obj, msg),
    webhookAddresses: { allowPrivate: config.webhooksAllowPrivate, resolve: systemResolve },
    platform: platform?.port,
  });
  const shopify = platform?.attach(ctx, { publicUrl: config.publicUrl, log });
  // Renewals: in standalone mode payments go through the built-in test gateway; in platform mode a billing attempt
  // is the platform's (platform/shopify/billing.ts).
  if (config.billing.enabled && config.platform.kind === 'standalone') {
    const gateway = new TestGateway({ db: database.db, record: (report) => recordBillingOutcome(ctx, report), warn: (o, m) => log.warn(o, m) });
    ctx.billing = { gateway, maxLateMs: config.billing.maxLateMs };
  } else if (config.billing.enabled && shopify) {
    ctx.billing = { gateway: shopify.billing, maxLateMs: config.billing.maxLateMs };
  }
  const credentials = await loadAppCredentials(ctx, { apiKey: config.shopifyApiKey, secret: config.shopifyApiSecret });
  const load = new RequestLoad();
  const workers = createWorkers(ctx, {
    resumeIntervalMs: config.schedulerIntervalMs,
    webhookIntervalMs: config.webhookDispatchIntervalMs,
    webhookTimeoutMs: config.webhookTimeoutMs,
    bulkJobLeaseMs: config.bulkJobLeaseMs,
    load,
    log,
    shopify: shopify && config.platform.kind === 'shopify' ? { services: shopify, syncIntervalMs: config.platform.syncIntervalMs } : undefined,
    billing: { intervalMs: config.schedulerIntervalMs, maxLateMs: config.billing.maxLateMs, concurrency: config.billing.concurrency },
  });
  const limits = createRateLimitStore({ redisUrl: config.redisUrl, redisPrefix: config.redisKeyPrefix, clock: systemClock, warn: (o, m) => log.warn(o, m) });
  const app = await buildApp({
    ctx,
    credentials,
    logger: log,
    publicUrl: config.publicUrl,
    adminUi: { shopifyApiKey: config.shopifyApiKey },
    rateLimit: { perMinute: config.rateLimitPerMinute, authFailuresPerMinute: config.authFailureLimitPerMinute, ...limits },
    metrics: {
      token: config.metricsToken,
      schedulerStats: () => workers.resumeSweep.stats,
      webhookStats: () => workers.webhookDispatcher.stats,
      billingStats: workers.billing ? () => workers.billing!.stats : undefined,
      processMetrics: true,
    },
    trustProxy: config.trustProxy,
    clientLimits: { requestBodyTimeoutMs: config.requestBodyTimeoutMs, maxConnectionsPerIp: config.maxConnectionsPerIp },
    load,
    shopify: shopify ? { services: shopify, onWebhook: () => workers.platformInbox?.wakeSoon() } : undefined,
    secretScanningKeys: new SecretScanningKeys({ url: config.secretScanningKeysUrl, clock: systemClock, warn: (o, m) => log.warn(o, m) }),
    requestLog: config.requestLog && { onError: (err) => log.warn({ err: { message: err.message } }, 'request log: a batch could not be written; retrying') },
  });

  let address: string;
  try {
    address = await app.listen({ port: config.port, host: config.host });
  } catch (err) {
    log.fatal({ err: { message: (err as Error).message } }, 'could not listen');
    await database.close();
    process.exit(1);
  }
  // On the embedded database, which serves this process alone, the CLI's commands run here (cli/control.ts): opened
  // before the line that says it listens, so a CLI started on that line finds it.
  const control =
    config.database.kind === 'pglite'
      ? await serveCliControl(config.database.dataDir, (argv, io) => runCli(argv, io, {}, serverHost(config, ctx, shopify)), log).catch((err: unknown) => {
          log.warn({ err: { message: (err as Error).message } }, 'the CLI cannot reach this server: its control socket could not be opened');
          return null;
        })
      : null;
  // Handled before the line that says it listens: whoever waits for that line may signal at once, and a signal
  // with no handler yet would end the process on the spot.
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: draining in-flight requests');
    const force = setTimeout(() => {
      log.error({}, 'shutdown timed out; exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs);
    force.unref();
    try {
      await control?.close();
      await workers.stop();
      // close() drops connections idle at this moment only; a keep-alive connection whose request is still in
      // flight would hold it open until the client hangs up (keepAliveTimeout: over a minute), so close each one
      // as soon as its last response has gone out.
      const closeIdle = setInterval(() => app.server.closeIdleConnections(), 50);
      try {
        await app.close();
      } finally {
        clearInterval(closeIdle);
      }
      await limits.store.close();
      await database.close();
      log.info({}, 'stopped');
      log.flush?.();
    } finally {
      clearTimeout(force);
      setImmediate(() => process.exit(0));
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  if (config.schedulerEnabled) {
    ctx.onBulkJob = () => workers.bulkJobs.wake();
    workers.start();
  }
  log.info(
    { address, url: config.publicUrl, database: database.db.kind, scheduler: config.schedulerEnabled },
    `svc listening on ${address} (${database.db.kind === 'pglite' ? `embedded database in ${config.database.kind === 'pglite' ? config.database.dataDir : ''}` : 'PostgreSQL'})`,
  );
  // Whoever waits for this line (a supervisor, a test) gets it now rather than with the next block.
  log.flush();
}

// Anything else that stops the start (the app credentials cannot be read or stored, say): one plain line, exit 1.
main().catch((err: unknown) => {
  process.stderr.write(`svc: could not start: ${scrubSecrets(err instanceof Error ? err.message : String(err))}\n`);
  process.exit(1);
});
