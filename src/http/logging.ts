import pino, { type Logger } from 'pino';

const KEY_ANYWHERE = /svc_live_[0-9A-Za-z]*/g;

/** Replaces anything that looks like an API key; the last line of defence for every log line. */
export function scrubKeys(text: string): string {
  return text.includes('svc_live_') ? text.replace(KEY_ANYWHERE, 'svc_live_[REDACTED]') : text;
}

export type LineSink = { write(line: string): unknown };

/**
 * JSON logs whose every line passes through scrubKeys, with the Authorization header (API key or session token)
 * redacted by path as well. Nothing a client sends can put a key into a log line.
 */
export function createLogger(opts: { level: string; sink?: LineSink }): Logger {
  const sink = opts.sink ?? pino.destination({ dest: 1, sync: false });
  return pino(
    {
      level: opts.level,
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: {
        paths: ['req.headers.authorization', 'headers.authorization', 'authorization', '*.authorization'],
        censor: '[REDACTED]',
      },
    },
    { write: (line: string) => sink.write(scrubKeys(line)) },
  );
}
