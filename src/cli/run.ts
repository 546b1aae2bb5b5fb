import { parseArgs } from 'node:util';
import { openConfiguredDatabase } from '../boot.js';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { EmbeddedDatabaseInUse } from '../db/embeddedLock.js';
import { ServiceError } from '../domain/errors.js';
import { shopifyPlatform } from '../platform/shopify/index.js';
import { createServiceContext, systemClock } from '../services/context.js';
import { findCommand, OPTIONS, USAGE, type CliHost, type Options } from './commands.js';
import { runThroughServer } from './control.js';
import { CliRefusal, UsageError, type Out } from './io.js';

/** The CLI's own host: the command opens the configured database itself, and closes it when done. */
export function localHost(config: Config): CliHost {
  return {
    config,
    async withContext(fn) {
      const database = await openConfiguredDatabase(config, 'svc CLI');
      try {
        return await fn(createServiceContext({ db: database.db, clock: systemClock, freeUntil: config.freeUntil }));
      } finally {
        await database.close();
      }
    },
    /**
     * In platform mode, the context's platform is the shop's (the server's wiring, src/main.ts), and the platform's
     * services are built on it. Nothing runs in the background: the command does its one thing and closes.
     */
    async withPlatform(platform, io, fn) {
      const database = await openConfiguredDatabase(config, 'svc CLI');
      try {
        const built = shopifyPlatform({ db: database.db, clock: systemClock }, platform);
        const ctx = createServiceContext({ db: database.db, clock: systemClock, freeUntil: config.freeUntil, platform: built.port });
        const shopify = built.attach(ctx, { publicUrl: config.publicUrl, log: { info: () => undefined, warn: (_obj, msg) => io.err(`svc: ${msg}`) } });
        return await fn(ctx, shopify);
      } finally {
        await database.close();
      }
    },
  };
}

/** argv as the CLI reads it: the positionals and the options (strict: an unknown option is a usage error). */
export function parseCommandLine(argv: string[]): { positionals: string[]; options: Options } {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, strict: true, options: OPTIONS });
  return { positionals, options: values };
}

/**
 * Runs one CLI command; returns the exit code: 0 done, 1 failed (a plain message on stderr: bad configuration, the
 * embedded database held by another process, a refused input), 2 bad usage. On the embedded database held by a
 * running server, the command runs in that server (control.ts). `host`: given by a server running a command sent to
 * it (its configuration and database); absent, the CLI opens the configured database itself.
 */
export async function runCli(argv: string[], io: Out, env: NodeJS.ProcessEnv = process.env, host?: CliHost): Promise<number> {
  try {
    return await runCommand(argv, io, env, host);
  } catch (err) {
    if ((err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) return usageError(io, (err as Error).message);
    if (err instanceof UsageError) return usageError(io, err.message);
    if (err instanceof ConfigError || err instanceof EmbeddedDatabaseInUse || err instanceof ServiceError || err instanceof CliRefusal) {
      io.err(`svc: ${err.message}`);
      return 1;
    }
    throw err;
  }
}

async function runCommand(argv: string[], io: Out, env: NodeJS.ProcessEnv, host: CliHost | undefined): Promise<number> {
  const { positionals, options } = parseCommandLine(argv);
  if (options.help || !positionals.length) {
    io.out(USAGE);
    return options.help ? 0 : 2;
  }
  const found = findCommand(positionals);
  // A command that never opens the database runs where it was typed, never in a server.
  if (host && found && !found.command.database) throw new CliRefusal(`${found.command.name} runs in the CLI's own process, not through a server`);
  if (found?.command.name === 'mcp-stdio') {
    const { runMcpStdio } = await import('../mcp/stdio.js');
    return runMcpStdio(env, io);
  }
  const config = host?.config ?? loadConfig(env);
  if (!found) return usageError(io, `unknown command "${positionals.join(' ')}"`);
  // The embedded database held by a running server: the command runs there (control.ts).
  if (!host && found.command.database && config.database.kind === 'pglite') {
    const code = await runThroughServer(config.database.dataDir, argv, io);
    if (code !== null) return code;
  }
  return found.command.run({ args: found.args, options, io, host: host ?? localHost(config) });
}

function usageError(io: Out, msg: string): number {
  io.err(`svc: ${msg}\n\n${USAGE}`);
  return 2;
}
