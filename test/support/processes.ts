import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { onTestFailed } from 'vitest';
import type { Database } from '../../src/db/client.js';
import type { AppCredentials } from '../../src/services/sessionTokens.js';

/**
 * Real server processes (`node --import tsx src/main.ts`) for the tests that need more than one instance, a
 * SIGKILL or a SIGTERM. Each child gets PORT=0 and reports the address it bound in its start log line. Every child
 * started here is tracked and killed by stopAllServers() (call it in afterAll) or, at the latest, when the test
 * process exits.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export const PROCESS_CREDENTIALS: AppCredentials = { apiKey: 'proc-app-key', secret: 'proc-app-secret-0123456789abcdef' };

export type ServerProcess = {
  /** http://127.0.0.1:<port> */
  url: string;
  port: number;
  pid: number;
  /** Every line the process wrote (stdout and stderr), in order. */
  lines: string[];
  /** Parsed JSON log lines. */
  logs(): Record<string, unknown>[];
  /** Resolves when the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  alive(): boolean;
  kill(signal: NodeJS.Signals): void;
  /** Resolves with the first log line `match` accepts, seen or yet to come. */
  waitForLog(match: (log: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
};

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export type StartServerOptions = {
  databaseUrl: string;
  /** Extra environment (SCHEDULER_INTERVAL_MS, SHUTDOWN_TIMEOUT_MS, …). */
  env?: Record<string, string>;
  /**
   * A bound on the wait for the start, when the caller wants one. By default the wait ends on an event only: the
   * process says it listens, or it exits; a start that hangs is ended by the test's own timeout.
   */
  startTimeoutMs?: number;
  /**
   * What to run: the TypeScript sources through tsx (default), the compiled `dist/main.js`, or `npm start`'s own
   * script (scripts/start.mjs: compiles src/ when it changed, then runs dist/main.js in the same process).
   */
  entry?: 'source' | 'built' | 'start';
  /**
   * Run the server in a process group of its own under a parent that never reaps it (`sh`, which `exec`s into
   * `sleep`): once killed, it stays a zombie, as under a container's init that does not reap. `pid` is then the
   * server's (its group's) and `kill` signals that group; stopAllServers ends the parent.
   */
  underParentThatNeverReaps?: boolean;
};

/** Starts a server process on a free port and resolves once it listens. */
export async function startServer(opts: StartServerOptions): Promise<ServerProcess> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_URL: opts.databaseUrl,
    LOG_LEVEL: 'info',
    SCHEDULER_INTERVAL_MS: '1000',
    SHOPIFY_API_KEY: PROCESS_CREDENTIALS.apiKey,
    SHOPIFY_API_SECRET: PROCESS_CREDENTIALS.secret,
    API_ACCESS_FREE_UNTIL: '',
    REDIS_URL: '',
    PUBLIC_URL: '',
    // These processes prove other things than the rate limit: load tests must not be cut short by it.
    RATE_LIMIT_PER_MINUTE: '1000000',
    ...opts.env,
  };
  delete env.TEST_DATABASE_URL;
  const args =
    opts.entry === 'built'
      ? [...startNodeArgs(), 'dist/main.js']
      : opts.entry === 'start'
        ? [...startNodeArgs(), 'scripts/start.mjs']
        : ['--import', 'tsx', 'src/main.ts'];
  const child = opts.underParentThatNeverReaps
    ? spawn('sh', ['-c', 'setsid "$@" & echo "svc-server-pid $!"; exec sleep 3600', 'sh', process.execPath, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);

  const lines: string[] = [];
  const parsed: Record<string, unknown>[] = [];
  // Under a parent that never reaps it, the server's own exit is not the child's: a start it refuses is seen by its
  // last words instead (`svc: …` on stderr).
  let refusedStart: (line: string) => void = () => {};
  const startRefused = new Promise<never>((_, reject) => {
    refusedStart = (line) => reject(new Error(`server refused to start: ${line}\nOutput:\n${lines.join('\n')}`));
  });
  startRefused.catch(() => undefined);
  const waiters = new Set<{ match: (l: Record<string, unknown>) => boolean; resolve: (l: Record<string, unknown>) => void }>();
  const onLine = (line: string) => {
    lines.push(line);
    if (opts.underParentThatNeverReaps && line.startsWith('svc: ') && !line.startsWith('svc: compiling')) refusedStart(line);
    let obj: Record<string, unknown>;
    try {
      obj = JSON.parse(line);
    } catch {
      return;
    }
    parsed.push(obj);
    for (const w of waiters) {
      if (w.match(obj)) {
        waiters.delete(w);
        w.resolve(obj);
      }
    }
  };
  for (const stream of [child.stdout!, child.stderr!]) {
    let buf = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      buf += chunk;
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        onLine(buf.slice(0, i));
        buf = buf.slice(i + 1);
      }
    });
    stream.on('end', () => buf && onLine(buf));
  }

  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    });
  });

  const waitForLog = (match: (l: Record<string, unknown>) => boolean, timeoutMs: number | null = 10_000) => {
    const seen = parsed.find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise<Record<string, unknown>>((resolve, reject) => {
      const w = { match, resolve: (l: Record<string, unknown>) => (clearTimeout(timer), resolve(l)) };
      const timer =
        timeoutMs === null
          ? undefined
          : setTimeout(() => {
              waiters.delete(w);
              reject(new Error(`server ${child.pid}: expected log line not seen within ${timeoutMs} ms. Output:\n${lines.join('\n')}`));
            }, timeoutMs);
      waiters.add(w);
    });
  };

  // Started inside a test: when that test fails (a start that never ends included), show what the process said
  // (its request lines left out).
  try {
    onTestFailed(() => {
      console.log(`--- server ${child.pid} output ---\n${lines.filter((l) => !l.includes('"msg":"request"')).slice(-60).join('\n')}`);
    });
  } catch {
    // started in a hook, outside any one test
  }
  const listening = waitForLog((l) => typeof l.address === 'string' && String(l.msg).startsWith('svc listening'), opts.startTimeoutMs ?? null);
  const address = await Promise.race([
    listening.then((l) => String(l.address)),
    startRefused,
    exited.then(({ code, signal }) => {
      throw new Error(`server exited before listening (code ${code}, signal ${signal}). Output:\n${lines.join('\n')}`);
    }),
  ]).catch((err) => {
    child.kill('SIGKILL');
    throw err;
  });
  const port = Number(new URL(address).port);
  const serverPid = opts.underParentThatNeverReaps ? Number(/^svc-server-pid (\d+)$/m.exec(lines.join('\n'))![1]) : child.pid!;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    pid: serverPid,
    lines,
    logs: () => parsed,
    exited,
    alive: () => child.exitCode === null && child.signalCode === null,
    kill: (signal) => (opts.underParentThatNeverReaps ? process.kill(-serverPid, signal) : child.kill(signal)),
    waitForLog,
  };
}

/** Kills every server this test process started and waits until they are gone. */
export async function stopAllServers(): Promise<void> {
  const children = [...running];
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.kill('SIGKILL');
        }),
    ),
  );
}

/** Resolves true when a new TCP connection to the port is refused (nobody listens), false when it is accepted. */
export function connectionRefused(port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNREFUSED' ? resolve(true) : reject(err)));
  });
}

/** Prints one line and tells the caller to skip when the test needs PostgreSQL but runs on PGlite. */
export function needsPostgres(what: string): boolean {
  if (process.env.TEST_DATABASE_URL) return false;
  console.log(`[svc tests] skipped ${what}: it starts real server processes that share the test's database, which needs PostgreSQL (set TEST_DATABASE_URL); PGlite is single-process by design.`);
  return true;
}

export type HttpResult = { status: number; body: any; headers: Headers };

/** One HTTP request to a server process, JSON in and out. `auth` is an API key or a session token. */
export async function call(
  baseUrl: string,
  pathname: string,
  /** raw: the body is sent as it is (a string), not as its JSON. */
  opts: { method?: string; auth?: string; body?: unknown; raw?: boolean } = {},
): Promise<HttpResult> {
  const res = await fetch(baseUrl + pathname, {
    method: opts.method ?? (opts.body === undefined ? 'GET' : 'POST'),
    headers: {
      ...(opts.auth ? { authorization: `Bearer ${opts.auth}` } : {}),
      ...(opts.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: opts.body === undefined ? undefined : opts.raw ? String(opts.body) : JSON.stringify(opts.body),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: keep the text for the assertion message
  }
  return { status: res.status, body, headers: res.headers };
}

/**
 * Another writer: locks a contract row in an open transaction on a connection of the test's own, as a slow action
 * would. Resolves, once the row is locked, to the function that commits and frees it.
 */
export async function holdRowLock(db: Database, id: string): Promise<() => Promise<void>> {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let locked!: () => void;
  const isLocked = new Promise<void>((r) => (locked = r));
  const done = db.withSession(async (run) => {
    await run('BEGIN');
    await run('SELECT id FROM subscription_contracts WHERE id = $1 FOR UPDATE', [id]);
    locked();
    await released;
    await run('COMMIT');
  });
  await Promise.race([isLocked, done]);
  return async () => {
    release();
    await done;
  };
}

/** The node options `npm start` runs dist/main.js with (package.json config.node_args). */
function startNodeArgs(): string[] {
  return (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).config.node_args as string).split(' ');
}
