import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newRawKey, percentDecoded } from '../src/domain/keys.js';
import { newWebhookSecret } from '../src/domain/webhooks.js';
import { signSessionToken } from '../src/services/sessionTokens.js';
import { bearer, startTestApp, TEST_CREDENTIALS, type TestApp } from './support/app.js';
import { API, insertContract, sql } from './support/fixtures.js';
import { recorded, written } from './support/requestLog.js';

/**
 * The README's promise for the request log and the access log: anything that looks like a key, a session token or a
 * webhook secret is replaced, however it is percent-encoded. Every form a client can send, through real requests,
 * and both logs read back: the access log (every line the app wrote) and the request log's rows.
 */

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

/** Every character percent-encoded, as `%XX`. */
const everyChar = (text: string) => [...Buffer.from(text)].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');

/** 10-character windows of a secret: none may be found in a log, as written or decoded. */
const windows = (secret: string) => Array.from({ length: secret.length - 9 }, (_, i) => secret.slice(i, i + 10));

function expectNoneOf(secret: string, text: string, label: string): void {
  const decoded = percentDecoded(text) ?? text;
  for (const w of windows(secret)) {
    if (text.includes(w) || decoded.includes(w)) throw new Error(`${label}: a piece of the secret ("${w}") is in the log:\n${text.slice(0, 2000)}`);
  }
}

describe('secrets percent-encoded in a URL or a header', () => {
  it('are in neither the access log nor the request log, in any of their forms', async () => {
    const s = await t.shopWithKey();
    const c = await insertContract(t, s.shopId);
    const whsec = newWebhookSecret();
    const jwt = await signSessionToken(TEST_CREDENTIALS, s.domain, { now: t.clock.now() });
    const otherKey = newRawKey();
    const keyBody = otherKey.slice('svc_live_'.length);
    // What makes each a secret: a webhook secret's key, a session token's signature (its header and claims are
    // readable by design), a key's random part and checksum.
    // One of a shape a random secret only sometimes has: a `+` escaped, a `/` written out, then an `=` escaped (its
    // tail alone, "y1afTqrk=", is no recognisable secret).
    const slashed = 'whsec_Qk9PTV9z+ZWNyZXQrY3Vy/y1afTqrk=';
    const secrets = [whsec.slice('whsec_'.length), jwt.split('.')[2], keyBody, slashed.slice('whsec_'.length)];

    const forms: [label: string, url: string, headers?: Record<string, string>][] = [
      ['a webhook secret, encodeURIComponent', `${API}?cursor=${encodeURIComponent(whsec)}`],
      ['a webhook secret, its _ escaped', `${API}?cursor=whsec%5F${encodeURIComponent(whsec.slice(6))}`],
      ['a webhook secret, encoded twice', `${API}?cursor=${encodeURIComponent(encodeURIComponent(whsec))}`],
      ['a webhook secret, every character', `${API}/${c.id}/events?cursor=${everyChar(whsec)}`],
      ['a webhook secret, its / written out', `${API}?cursor=${whsec.replace(/[+=]/g, (ch) => encodeURIComponent(ch))}`],
      ['a webhook secret, a / written out and an = escaped after it', `${API}?cursor=${slashed.replace(/[+=]/g, (ch) => encodeURIComponent(ch))}`],
      ['a session token, %65 for its first e', `${API}?token=%65${jwt.slice(1)}`],
      ['a session token, %2E for its dots', `${API}?token=${jwt.replaceAll('.', '%2E')}`],
      ['a session token, every character', `${API}?token=${everyChar(jwt)}`],
      ['a key without its prefix, in the query', `${API}?q=${keyBody}`],
      ['a key without its prefix, partly encoded', `${API}?q=%${keyBody.charCodeAt(0).toString(16)}${keyBody.slice(1)}`],
      ['a key without its prefix, in the User-Agent', API, { 'user-agent': `sync-bot/2 ${keyBody}` }],
      ['a webhook secret in the Idempotency-Key', `${API}/${c.id}/actions`, { 'idempotency-key': `retry-${encodeURIComponent(whsec)}` }],
      ['a webhook secret in the Idempotency-Key, every character', `${API}/${c.id}/actions`, { 'idempotency-key': everyChar(whsec) }],
      ['a key without its prefix in the Idempotency-Key', `${API}/${c.id}/actions`, { 'idempotency-key': keyBody }],
    ];
    const start = recorded(t);
    for (const [, url, headers] of forms) {
      const post = url.endsWith('/actions');
      const res = await t.inject({ method: post ? 'POST' : 'GET', url, headers: { ...bearer(s.key), ...headers }, ...(post && { payload: { action: 'pause' } }) });
      expect(res.statusCode).toBeLessThan(500);
    }
    // The admin API is in the access log only: a session token in its URL, every way.
    for (const url of [`/admin/api/shop?token=%65${jwt.slice(1)}`, `/admin/api/shop?token=${everyChar(jwt)}`, `/admin/api/keys?x=${jwt.replaceAll('.', '%2E')}`]) {
      await t.inject({ url, headers: { authorization: `Bearer ${jwt}` } });
    }
    await written(t, start + forms.length);

    const access = t.logs.join('');
    const rows = await sql<Record<string, unknown>>(t, 'SELECT path, idempotency_key, user_agent FROM request_log WHERE shop_id = $1', [s.shopId]);
    expect(rows).toHaveLength(forms.length);
    for (const secret of secrets) {
      expectNoneOf(secret, access, 'access log');
      for (const row of rows) expectNoneOf(secret, JSON.stringify(row), 'request log');
    }
    // What was replaced leaves the rest readable.
    const paths = rows.map((r) => r.path as string);
    expect(paths).toContain(`${API}?cursor=[REDACTED]`);
    expect(paths).toContain(`${API}?q=[REDACTED]`);
    expect(rows.map((r) => r.user_agent)).toContain('sync-bot/2 [REDACTED]');
    expect(rows.map((r) => r.idempotency_key)).toContain('[REDACTED]');
  });
});
