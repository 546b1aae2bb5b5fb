import pino, { type Logger } from 'pino';

const KEY_ANYWHERE = /svc_live_[0-9A-Za-z]*/g;

/** Replaces anything that looks like an API key; the last line of defence for every log line. */
export function scrubKeys(text: string): string {
  return text.includes('svc_live_') ? text.replace(KEY_ANYWHERE, 'svc_live_[REDACTED]') : text;
}

// A signed JWT (a platform session token): three base64url parts, the first one a JSON header ("eyJ").
const JWT_ANYWHERE = /eyJ[0-9A-Za-z_-]{8,}\.[0-9A-Za-z_-]{8,}\.[0-9A-Za-z_-]{8,}/g;

/** scrubKeys, plus session tokens: what every log line goes through. */
export function scrubSecrets(text: string): string {
  const noKeys = scrubKeys(text);
  return noKeys.includes('eyJ') ? noKeys.replace(JWT_ANYWHERE, '[REDACTED JWT]') : noKeys;
}

export type LineSink = { write(line: string): unknown };

/**
 * JSON logs whose every line passes through scrubSecrets (API keys and session tokens), with the Authorization header (API key or session token)
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
    { write: (line: string) => sink.write(scrubSecrets(line)) },
  );
}
