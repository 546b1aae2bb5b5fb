import { chmodSync, lstatSync, mkdirSync, rmSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { Config } from '../config.js';
import { embeddedLockHolder } from '../db/embeddedLock.js';
import type { Shopify } from '../platform/shopify/index.js';
import type { ServiceContext } from '../services/context.js';
import type { CliHost } from './commands.js';
import { CliRefusal, type Out } from './io.js';

/**
 * The CLI through a running server. The embedded database serves one process: while a server holds it, a CLI command
 * cannot open it. So the server listens on a Unix domain socket in the data directory, and a CLI that finds the
 * database held by a live server sends its command line there; the server runs the command with its own database
 * (the same command table, cli/commands.ts) and sends back what it printed and its exit code. Nothing else is
 * served on it.
 *
 * Local only, and the owner's only: the socket is in a directory of the data directory that only the server's user
 * may enter (0700), the socket itself 0600; the file system's permissions are the authentication. Not opened on
 * PostgreSQL (where the CLI opens the database beside any number of servers) nor on Windows.
 *
 * The exchange, one JSON document per line: the CLI sends `{"argv": [...]}`; the server answers `{"out": line}` and
 * `{"err": line}` as the command prints them, then `{"exit": code}`.
 */

const CONTROL_DIR = 'svc-control';
const SOCKET = 'cli.sock';
/** Unix socket paths are limited to about a hundred bytes (108 on Linux, 104 on macOS). */
const MAX_SOCKET_PATH = 100;

export const controlSocketPath = (dataDir: string) => path.join(path.resolve(dataDir), CONTROL_DIR, SOCKET);

/** The host a command gets on the server: its configuration, its service context and its platform services. */
export function serverHost(config: Config, ctx: ServiceContext, shopify: Shopify | undefined): CliHost {
  return {
    config,
    withContext: (fn) => fn(ctx),
    withPlatform: (_platform, _io, fn) => {
      if (!shopify) throw new CliRefusal('the running server is not in platform mode (PLATFORM=shopify): restart it with the platform configuration');
      return fn(ctx, shopify);
    },
  };
}

export type ControlLog = { info(obj: object, msg: string): void; warn(obj: object, msg: string): void; error(obj: object, msg: string): void };

/**
 * Serves CLI commands on the data directory's control socket until closed. `run` runs one command line (run.ts
 * runCli with the server's host). Null when it cannot be served here (Windows, a path too long for a socket).
 */
export async function serveCliControl(
  dataDir: string,
  run: (argv: string[], io: Out) => Promise<number>,
  log: ControlLog,
): Promise<{ close(): Promise<void> } | null> {
  const socket = controlSocketPath(dataDir);
  if (process.platform === 'win32') return null;
  if (Buffer.byteLength(socket) > MAX_SOCKET_PATH) {
    log.warn({ socket }, 'the CLI cannot reach this server: its data directory path is too long for a control socket (stop the server to run CLI commands)');
    return null;
  }
  const dir = path.dirname(socket);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // A directory left by an earlier server is ours too (this process holds the data directory's lock): made private
  // again, and its socket, left by a server that did not stop cleanly, removed.
  const st = lstatSync(dir);
  if (!st.isDirectory() || (typeof process.getuid === 'function' && st.uid !== process.getuid())) {
    log.warn({ dir }, 'the CLI cannot reach this server: its control directory is not a directory of this user');
    return null;
  }
  chmodSync(dir, 0o700);
  rmSync(socket, { force: true });

  const connections = new Set<net.Socket>();
  const server = net.createServer((conn) => {
    connections.add(conn);
    conn.on('close', () => connections.delete(conn));
    conn.on('error', () => undefined);
    void serveOne(conn, run, log);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socket, () => {
      server.off('error', reject);
      resolve();
    });
  });
  chmodSync(socket, 0o600);
  log.info({ socket }, 'CLI commands on this data directory run through this server');
  return {
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const c of connections) c.destroy();
      });
      rmSync(socket, { force: true });
    },
  };
}

const send = (conn: net.Socket, message: object) => {
  if (!conn.destroyed) conn.write(`${JSON.stringify(message)}\n`);
};

async function serveOne(conn: net.Socket, run: (argv: string[], io: Out) => Promise<number>, log: ControlLog): Promise<void> {
  const lines = createInterface({ input: conn, crlfDelay: Infinity });
  let argv: unknown;
  for await (const line of lines) {
    try {
      argv = (JSON.parse(line) as { argv?: unknown }).argv;
    } catch {
      argv = undefined;
    }
    break;
  }
  if (!Array.isArray(argv) || !argv.every((a) => typeof a === 'string') || argv.length > 100) {
    send(conn, { err: 'svc: the server did not understand the command line it was sent' });
    send(conn, { exit: 2 });
    conn.end();
    return;
  }
  let code: number;
  try {
    code = await run(argv, { out: (s) => send(conn, { out: s }), err: (s) => send(conn, { err: s }) });
  } catch (err) {
    log.error({ err: { message: (err as Error).message } }, 'a CLI command run through the server failed');
    send(conn, { err: `svc: ${(err as Error).message}` });
    code = 1;
  }
  send(conn, { exit: code });
  conn.end();
}

/**
 * A CLI command run through the server holding the embedded database in `dataDir`, if one does and listens on its
 * control socket: its exit code, once its output has been written to `io`. Null when no server does (a CLI, a server
 * of an older version, none at all, or one that just stopped): the command then runs in the CLI's own process.
 */
export async function runThroughServer(dataDir: string, argv: string[], io: Out): Promise<number | null> {
  const holder = embeddedLockHolder(path.resolve(dataDir));
  if (!holder || process.platform === 'win32') return null;
  const socket = controlSocketPath(dataDir);
  const conn = await new Promise<net.Socket | null>((resolve) => {
    const c = net.connect(socket);
    c.once('connect', () => resolve(c));
    c.once('error', () => resolve(null));
  });
  if (!conn) return null;
  conn.write(`${JSON.stringify({ argv })}\n`);
  let exit: number | null = null;
  const lines = createInterface({ input: conn, crlfDelay: Infinity });
  try {
    for await (const line of lines) {
      let m: { out?: unknown; err?: unknown; exit?: unknown };
      try {
        m = JSON.parse(line);
      } catch {
        continue;
      }
      if (typeof m.out === 'string') io.out(m.out);
      else if (typeof m.err === 'string') io.err(m.err);
      else if (typeof m.exit === 'number') exit = m.exit;
    }
  } catch {
    // the connection broke: said below
  }
  conn.destroy();
  if (exit === null) {
    io.err(`svc: the server (pid ${holder.pid}) stopped before the command finished; it may or may not have been done`);
    return 1;
  }
  return exit;
}
