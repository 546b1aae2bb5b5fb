import { isWellFormedKey, KEY_PREFIX, percentDecoded } from './keys.js';
import { WEBHOOK_SECRET_ANYWHERE } from './webhooks.js';

/**
 * The one scrubber of secrets for everything svc keeps of what a client sent (the access log, every log line, the
 * request log): API keys (`svc_live_…`, whole or cut short, and a key's 49 characters without the prefix, which its
 * checksum recognises), platform session tokens (JWTs), webhook signing secrets (`whsec_…`) and OAuth codes and
 * tokens (`svc_oac_…`, `svc_oat_…`, `svc_ort_…`, domain/oauth.ts), written out or
 * percent-encoded in any way (`%65yJ…`, `whsec%5F…`, `svc%255flive_…`, or every character escaped), each replaced.
 *
 * Percent-encoded text is judged by what it decodes to, again and again until nothing changes (keys.ts
 * percentDecoded), word by word (runs between spaces and quotes), each word by the runs between a URL's delimiters
 * (a path segment, a query value: the rest of a URL stays readable), a secret whose written-out `/`, `=` or `&` split it
 * across runs taking the rest of its word with it (redactWord). A secret's own characters are never spaces, quotes or
 * backslashes, and decoding never turns an escape into a literal delimiter of the text, so each secret lies within one
 * word, however it is written: nothing of one is left.
 */

// A signed JWT (a platform session token): three base64url parts, the first one a JSON header ("eyJ").
const JWT_ANYWHERE = /eyJ[0-9A-Za-z_-]{8,}\.[0-9A-Za-z_-]{8,}\.[0-9A-Za-z_-]{8,}/g;
const JWT = /eyJ[0-9A-Za-z_-]{8,}\.[0-9A-Za-z_-]{8,}\.[0-9A-Za-z_-]{8,}/;
const WEBHOOK_SECRET = new RegExp(WEBHOOK_SECRET_ANYWHERE.source);
const KEY_MENTION = /svc_live_/i;
const OAUTH_MENTION = /svc_o(?:ac|at|rt)_/i;
const OAUTH_ANYWHERE = /(svc_o(?:ac|at|rt)_)[0-9A-Za-z_-]*/gi;
const KEY_ANYWHERE = /svc_live_[0-9A-Za-z]*/gi;
// 49 base62 characters standing alone: a key's body (random part and checksum) when its checksum says so.
const KEY_BODY_ANYWHERE = /(?<![0-9A-Za-z])[0-9A-Za-z]{49}(?![0-9A-Za-z])/g;

/** A path segment, a query parameter's name or value, a word: text between a URL's delimiters, spaces and quotes. */
const URL_RUN = /[^\s"'\\<>/?&=#]+/g;
/** Text between spaces and quotes (a JSON string's content, a header's word). */
const WORD_RUN = /[^\s"'\\<>]+/g;

const isKeyBody = (text: string): boolean => isWellFormedKey(KEY_PREFIX + text);

/**
 * Whether the text has 49 base62 characters in a row: a loop over its characters, where KEY_BODY_ANYWHERE's
 * lookbehind tried a match at every position of every log line (most have no such run: ids are UUIDs).
 */
function hasBase62Run(text: string): boolean {
  let run = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122)) {
      if (++run >= 49) return true;
    } else run = 0;
  }
  return false;
}

function hasKeyBody(text: string): boolean {
  if (!hasBase62Run(text)) return false;
  for (const m of text.matchAll(KEY_BODY_ANYWHERE)) if (isKeyBody(m[0])) return true;
  return false;
}

/** True when the text, as it is written, holds a secret of any kind svc knows. */
function holdsSecret(text: string): boolean {
  return KEY_MENTION.test(text) || OAUTH_MENTION.test(text) || JWT.test(text) || WEBHOOK_SECRET.test(text) || hasKeyBody(text);
}

/** Does the run hold a secret, as written or as it decodes? (Text that never stops decoding does.) */
function runHoldsSecret(run: string): boolean {
  if (!run.includes('%')) return holdsSecret(run);
  const decoded = percentDecoded(run);
  return decoded === null || holdsSecret(decoded);
}

/**
 * A word (text between spaces and quotes) with a percent-escape: each URL run that holds a secret replaced, so the rest
 * of a URL stays readable. When the word as a whole decodes to a secret, the runs that follow a replaced one across a
 * `/` or `=` go with it (a webhook secret's `/` written out splits it into runs: its tail alone is no recognisable
 * secret; no secret holds `&`, `?` or `#`), and a word none of whose runs holds one is replaced whole.
 */
function redactWord(word: string): string {
  const holds = runHoldsSecret(word);
  let out = '';
  let last = 0;
  let any = false;
  let swallowing = false;
  for (const m of word.matchAll(URL_RUN)) {
    const between = word.slice(last, m.index);
    if (swallowing && /^[/=]+$/.test(between)) {
      last = m.index + m[0].length;
      continue;
    }
    swallowing = false;
    if (!runHoldsSecret(m[0])) continue;
    out += `${word.slice(last, m.index)}[REDACTED]`;
    last = m.index + m[0].length;
    any = true;
    swallowing = holds;
  }
  if (holds && !any) return '[REDACTED]';
  const rest = word.slice(last);
  return out + (swallowing && /^=+$/.test(rest) ? '' : rest);
}

/** The text with every secret in it replaced, however it is percent-encoded. */
export function redactSecrets(text: string): string {
  let out = text;
  if (out.includes('%')) out = out.replace(WORD_RUN, (word) => (word.includes('%') ? redactWord(word) : word));
  if (KEY_MENTION.test(out)) out = out.replace(KEY_ANYWHERE, 'svc_live_[REDACTED]');
  if (OAUTH_MENTION.test(out)) out = out.replace(OAUTH_ANYWHERE, '$1[REDACTED]');
  if (out.includes('eyJ')) out = out.replace(JWT_ANYWHERE, '[REDACTED JWT]');
  if (out.includes('whsec_')) out = out.replace(WEBHOOK_SECRET_ANYWHERE, '[REDACTED WEBHOOK SECRET]');
  if (hasBase62Run(out)) out = out.replace(KEY_BODY_ANYWHERE, (body) => (isKeyBody(body) ? '[REDACTED]' : body));
  return out;
}
