import pino, { type Logger } from 'pino';
import { redactSecrets } from '../domain/secrets.js';

// A failed query's parameters as the query builder writes them into its error's message and stack ("Failed query: …
// \nparams: …"): the values a statement was given, which may be a webhook secret, an email, a customer's data. The
// statement's text stays, and so do a stack's frames: the values end where the frames begin (`\n    at `), or at the end
// of the text (in a JSON line: of the string, where the newline is written `\n`).
const QUERY_PARAMS_IN_JSON = /(\\nparams: )(?:(?!\\n {4}at )(?:[^"\\]|\\.))*/g;
const QUERY_PARAMS_IN_TEXT = /(\nparams: )[\s\S]*?(?=\n {4}at |$)/g;

/**
 * What every log line and every text of the request log goes through: each secret a client may send (keys, session
 * tokens, webhook signing secrets, however percent-encoded: domain/secrets.ts), and a failed query's parameters.
 */
export function scrubSecrets(text: string): string {
  let out = redactSecrets(text);
  if (out.includes('params: ')) out = out.replace(QUERY_PARAMS_IN_JSON, '$1[omitted]').replace(QUERY_PARAMS_IN_TEXT, '$1[omitted]');
  return out;
}

/**
 * An error as pino writes it, without the parameters of a failed query: the query builder's error carries them as a
 * property (`params`) besides its message (which scrubSecrets cleans).
 */
function loggableError(err: unknown): unknown {
  const out = pino.stdSerializers.err(err as Error) as unknown;
  if (!out || typeof out !== 'object' || !('params' in out)) return out;
  const { params: _params, ...rest } = out as Record<string, unknown>;
  return rest;
}

export type LineSink = { write(line: string): unknown };

/**
 * Lines gathered into blocks of about 4 KiB before they reach the destination, which gets one write per block, at
 * least once a second. (Given line by line, sonic-boom measures the text it holds on every write: at a few thousand
 * requests a second, copying up to 16 KiB per access line, a few per cent of a request.)
 */
class Blocks {
  private lines: string[] = [];
  private size = 0;
  constructor(
    private readonly out: LineSink & { flushSync(): void },
    private readonly blockSize = 4096,
  ) {
    setInterval(() => this.flush(), 1000).unref();
  }
  write(line: string): void {
    this.lines.push(line);
    this.size += line.length;
    if (this.size >= this.blockSize) this.flush();
  }
  private flush(): void {
    if (!this.lines.length) return;
    const block = this.lines.length === 1 ? this.lines[0] : this.lines.join('');
    this.lines = [];
    this.size = 0;
    this.out.write(block);
  }
  /** Everything gathered, written now. */
  flushSync(): void {
    this.flush();
    this.out.flushSync();
  }
}

/**
 * JSON logs whose every line passes through scrubSecrets (API keys and session tokens), with any `authorization`
 * value censored as well (pino's redact: at the top level or one level down, `headers.authorization` included).
 * Nothing a client sends can put a key into a log line. (The access line, the one on every request, is written
 * without pino: accessLogWriter.)
 *
 * Standard output is written in blocks of up to 4 KiB, at least once a second, and on exit (a line per write would
 * be a system call per request); warnings and errors are written at once. A crash can lose the last second of info
 * lines, never a secret.
 */
export function createLogger(opts: { level: string; sink?: LineSink }): Logger {
  let sink: LineSink & { flushSync?(): void } | undefined = opts.sink;
  if (!sink) {
    // Each block is written synchronously: an asynchronous write still in flight when the process exits is lost (it
    // lost a block of lines at exit now and then on Node 24), and a block is one system call for tens of lines.
    const stdout = new Blocks(pino.destination({ dest: 1, sync: true }));
    process.on('exit', () => {
      try {
        stdout.flushSync();
      } catch {
        // stdout already gone: nothing left to write to
      }
    });
    sink = stdout;
  }
  const out = sink;
  return pino(
    {
      level: opts.level,
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: ['authorization', '*.authorization', 'headers.authorization', '*.headers.authorization'], censor: '[REDACTED]' },
      serializers: { err: loggableError },
    },
    {
      write: (line: string) => {
        out.write(scrubSecrets(line));
        // Warnings and errors (`{"level":40` and up) go out at once; info lines wait for their block.
        if (line.charCodeAt(9) >= 52) out.flushSync?.();
      },
      // A line built by svc from text already scrubbed (the access line: accessLogWriter), buffered as it is.
      writeScrubbed: (line: string) => out.write(line),
      // logger.flush() (shutdown): what is buffered goes out now.
      flush: (cb?: (err?: Error) => void) => {
        try {
          out.flushSync?.();
          cb?.();
        } catch (err) {
          cb?.(err as Error);
        }
      },
    } as pino.DestinationStream,
  );
}

export type AccessEntry = { requestId: string; method: string; url: string; statusCode: number; ms: number };

/**
 * The access log: one line per response, by far the most frequent line. It is written straight to the logger's own
 * stream (buffered like every line) in the shape pino gives a line, `{"level":30,"time":…,
 * "requestId","method","url","statusCode","ms","msg":"request"}`, without pino's per-call work (a fifth of what a
 * refused request costs). Nothing when the logger's level is above info. `url` must already be scrubbed
 * (scrubSecrets): the rest of the line is svc's own, so the line is not scrubbed again.
 */
export function accessLogWriter(logger: Logger): (entry: AccessEntry) => void {
  if (!logger.isLevelEnabled('info')) return () => {};
  const stream = (logger as unknown as Record<symbol, pino.DestinationStream & { writeScrubbed?: (line: string) => void }>)[pino.symbols.streamSym];
  // Every field of the line is svc's own but the URL, scrubbed by the caller: not scrubbed a second time.
  const write = stream.writeScrubbed ? stream.writeScrubbed.bind(stream) : stream.write.bind(stream);
  let lastMs = 0;
  let time = '';
  return (e) => {
    const now = Date.now();
    if (now !== lastMs) {
      lastMs = now;
      time = new Date(now).toISOString();
    }
    // requestId is our own UUID and method an HTTP token: neither needs escaping; the URL does.
    write(
      `{"level":30,"time":"${time}","requestId":"${e.requestId}","method":"${e.method}","url":${JSON.stringify(e.url)},` +
        `"statusCode":${e.statusCode},"ms":${Math.round(e.ms * 10) / 10},"msg":"request"}\n`,
    );
  };
}

type LogMethod = (...args: unknown[]) => void;

/**
 * A request's logger (req.log, bound to its requestId), made only when something logs through it: most requests log
 * nothing but their access line (written apart, above), and a pino child made for every request would cost each of
 * them that much more for nothing.
 */
class RequestLogger {
  private made: Logger | null = null;
  constructor(
    private readonly parent: Logger,
    private readonly bindings: pino.Bindings,
    private readonly opts: pino.ChildLoggerOptions,
  ) {}
  private get log(): Logger {
    return (this.made ??= this.parent.child(this.bindings, this.opts));
  }
  get level(): string {
    return this.made ? this.made.level : (this.opts.level ?? this.parent.level);
  }
  set level(level: string) {
    this.log.level = level;
  }
  child(bindings: pino.Bindings, opts?: pino.ChildLoggerOptions): Logger {
    return this.log.child(bindings, opts);
  }
  fatal(...a: unknown[]): void {
    (this.log.fatal as LogMethod)(...a);
  }
  error(...a: unknown[]): void {
    (this.log.error as LogMethod)(...a);
  }
  warn(...a: unknown[]): void {
    (this.log.warn as LogMethod)(...a);
  }
  info(...a: unknown[]): void {
    (this.log.info as LogMethod)(...a);
  }
  debug(...a: unknown[]): void {
    (this.log.debug as LogMethod)(...a);
  }
  trace(...a: unknown[]): void {
    (this.log.trace as LogMethod)(...a);
  }
  silent(): void {}
}

/** Fastify's childLoggerFactory for svc: req.log is made on first use (RequestLogger). */
export function requestLoggerFactory(logger: Logger, bindings: pino.Bindings, opts: pino.ChildLoggerOptions): Logger {
  return new RequestLogger(logger, bindings, opts) as unknown as Logger;
}
