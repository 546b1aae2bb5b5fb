import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, startTestApp, type TestApp } from './support/app.js';
import { adminAuth, API, keyFragments } from './support/fixtures.js';

/**
 * No key and no session token reaches a log line or an error message (docs/product.md §5), wherever the client puts it:
 * header, JSON body, query string, a body that causes an error, the path, a 500.
 */

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({
    extraRoutes: (app) => {
      // A route whose failure carries what the client sent, as a careless driver error might.
      app.post('/test/echo-error', async (req) => {
        throw new Error(`failed while handling ${JSON.stringify(req.body)} for ${req.headers.authorization}`);
      });
    },
  });
});
afterAll(() => t.close());

const KEY_LIKE = /svc_live_[0-9A-Za-z]{8,}/;

describe('logs and error bodies never carry a key', () => {
  it('after requests with a real key everywhere a client can put one', async () => {
    const { key, shopId, domain } = await t.shopWithKey();
    const [c] = await t.seed(shopId, 2);
    const url = `${API}/${c.id}/actions`;
    const admin = await adminAuth(t, domain);
    const session = admin.authorization.slice('Bearer '.length);
    const json = { ...bearer(key), 'content-type': 'application/json' };

    const responses = [
      await t.inject({ url: API, headers: bearer(key) }),
      await t.inject({ url: `${API}/${c.id}`, headers: bearer(key) }),
      // In JSON body fields, accepted and refused.
      await t.inject({ method: 'POST', url, headers: bearer(key), payload: { action: 'cancel', reason: `leaked ${key} here` } }),
      await t.inject({ method: 'POST', url, headers: bearer(key), payload: { action: key } }),
      await t.inject({ method: 'POST', url, headers: bearer(key), payload: { action: 'skip', [key]: true } }),
      await t.inject({ method: 'POST', url, headers: bearer(key), payload: { action: 'pause', resumeAt: key } }),
      await t.inject({ method: 'POST', url, headers: bearer(key), payload: { action: 'reschedule', nextBillingDate: [key] } }),
      await t.inject({ method: 'POST', url, headers: json, payload: `{"action": "${key}"` }),
      await t.inject({ method: 'POST', url, headers: { ...bearer(key), 'content-type': 'text/plain' }, payload: key }),
      await t.inject({ method: 'POST', url, headers: json, payload: JSON.stringify({ action: 'cancel', reason: key.repeat(400) }) }),
      // In the query string and the path.
      await t.inject({ url: `${API}?key=${key}`, headers: bearer(key) }),
      await t.inject({ url: `${API}?status=${key}` }),
      await t.inject({ url: `${API}/${key}/events` }),
      // A key that fails: bad checksum, revoked-like unknown, wrong place.
      await t.inject({ url: API, headers: bearer(key.slice(0, -1) + (key.endsWith('a') ? 'b' : 'a')) }),
      await t.inject({ url: API, headers: { authorization: `Basic ${key}` } }),
      await t.inject({ url: API, headers: { authorization: `Bearer ${key} ${key}` } }),
      await t.inject({ url: '/admin/api/keys', headers: bearer(key) }),
      await t.inject({ url: `/admin/api/contracts?cursor=${key}`, headers: admin }),
      // A 500 whose error text holds the key (from the body and from the header).
      await t.inject({ method: 'POST', url: '/test/echo-error', headers: json, payload: { note: `use ${key}` } }),
      // The session token on the API and the admin API.
      await t.inject({ url: API, headers: { authorization: `Bearer ${session}` } }),
      await t.inject({ url: '/admin/api/keys', headers: admin }),
    ];

    // The requests really happened and the sensitive ones were refused or accepted as expected.
    expect(responses[0].statusCode).toBe(200);
    expect(responses[2].statusCode).toBe(200);
    expect(responses[3].json().error.code).toBe('unsupported_action');
    expect(responses[10].json().error.code).toBe('key_in_url');
    expect(responses[18].statusCode).toBe(500);
    expect(t.logs.length).toBeGreaterThanOrEqual(responses.length);

    const logs = t.logs.join('\n');
    expect(logs).not.toMatch(KEY_LIKE);
    for (const piece of keyFragments(key)) expect(logs).not.toContain(piece);
    expect(logs).not.toContain(session);
    expect(logs).not.toContain(session.split('.')[2]);

    for (const res of responses) {
      if (res.statusCode < 400) continue;
      expect(res.body, res.body).not.toMatch(KEY_LIKE);
      for (const piece of keyFragments(key)) expect(res.body).not.toContain(piece);
      expect(res.body).not.toContain(session.split('.')[2]);
    }
  });
});

describe('log scrubbing of session tokens', () => {
  it('replaces a JWT anywhere in a line', async () => {
    const { scrubSecrets } = await import('../src/http/logging.js');
    const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlLXNpZ25hdHVyZQ';
    expect(scrubSecrets(`{"msg":"bad token ${jwt} seen"}`)).toBe('{"msg":"bad token [REDACTED JWT] seen"}');
  });
});

describe('webhook signing secrets and a failed query\'s values stay out of the logs', () => {
  it('scrubSecrets replaces a signing secret, and the values of a failed query but not its statement or stack frames', async () => {
    const { scrubSecrets } = await import('../src/http/logging.js');
    const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    expect(scrubSecrets(`{"msg":"sent with ${secret}."}`)).toBe('{"msg":"sent with [REDACTED WEBHOOK SECRET]."}');
    const json = JSON.stringify({ message: 'Failed query: update t set a = $1\nparams: x@example.com,"q"\n    at f (a.js:1:1)' });
    expect(scrubSecrets(json)).toBe(JSON.stringify({ message: 'Failed query: update t set a = $1\nparams: [omitted]\n    at f (a.js:1:1)' }));
    expect(scrubSecrets('could not start: Failed query: select $1\nparams: x@example.com')).toBe('could not start: Failed query: select $1\nparams: [omitted]');
  });

  it('a database failure while rotating a signing secret: 500 in the envelope, neither secret nor any value in a log line', async () => {
    const { key } = await t.shopWithKey();
    const auth = { ...bearer(key), 'content-type': 'application/json' };
    const created = await t.inject({ method: 'POST', url: '/api/v1/webhook-endpoints', headers: auth, payload: { url: 'http://127.0.0.1:9/svc' } });
    expect(created.statusCode).toBe(201);
    const { secret, endpoint } = created.json() as { secret: string; endpoint: { id: string } };
    expect(secret).toMatch(/^whsec_/);
    // Any failure the driver reports with the statement's values (a constraint, a timeout, a serialization failure).
    await t.database.db.withSession((run) =>
      run(
        `CREATE FUNCTION test_refuse_update() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by a test'; END $$;
         CREATE TRIGGER test_refuse_update BEFORE UPDATE ON webhook_endpoints FOR EACH ROW EXECUTE FUNCTION test_refuse_update();`,
        [],
        { multi: true },
      ),
    );
    const before = t.logs.length;
    try {
      const res = await t.inject({ method: 'POST', url: `/api/v1/webhook-endpoints/${endpoint.id}/rotate-secret`, headers: bearer(key) });
      expect(res.statusCode).toBe(500);
      expect(res.json().error.code).toBe('internal_error');
    } finally {
      await t.database.db.withSession((run) =>
        run('DROP TRIGGER test_refuse_update ON webhook_endpoints; DROP FUNCTION test_refuse_update();', [], { multi: true }),
      );
    }
    const lines = t.logs.slice(before).join('\n');
    expect(lines).toContain('refused by a test'); // the failure itself is logged
    expect(lines).toContain('Failed query'); // with its statement
    expect(lines).not.toContain(secret.slice(6));
    expect(lines).not.toMatch(/whsec_[0-9A-Za-z+/]{8}/);
    expect(lines).not.toContain('"params"'); // the values as the query builder's error carries them
  });
});

describe('an authorization value is censored wherever a log call puts it', () => {
  it('top level, one level down, and in headers one level down; the rest untouched', async () => {
    const { createLogger } = await import('../src/http/logging.js');
    const lines: string[] = [];
    const log = createLogger({ level: 'info', sink: { write: (l) => lines.push(l) } });
    const secret = 'Basic c2VjcmV0OnBhc3N3b3Jk';
    log.info({ authorization: secret, keep: 1 }, 'a');
    log.info({ req: { headers: { authorization: secret, host: 'h' }, method: 'GET' } }, 'b');
    log.info({ headers: { authorization: secret } }, 'c');
    log.info({ upstream: { authorization: secret, status: 200 } }, 'd');
    const parsed = lines.map((l) => JSON.parse(l));
    expect(lines.join('\n')).not.toContain('c2VjcmV0');
    expect(parsed[0]).toMatchObject({ authorization: '[REDACTED]', keep: 1 });
    expect(parsed[1].req).toEqual({ headers: { authorization: '[REDACTED]', host: 'h' }, method: 'GET' });
    expect(parsed[2].headers).toEqual({ authorization: '[REDACTED]' });
    expect(parsed[3].upstream).toEqual({ authorization: '[REDACTED]', status: 200 });
  });
});

describe('the access log', () => {
  it('one JSON line per response, in pino\'s shape, with the request id, method, URL (escaped), status and time', async () => {
    const before = t.logs.length;
    const res = await t.inject({ url: `${API}/1?q="quoted"&u=%C3%A9\\x` });
    const lines = t.logs.slice(before).map((l) => JSON.parse(l));
    const access = lines.filter((l) => l.msg === 'request');
    expect(access).toHaveLength(1);
    expect(access[0]).toEqual({
      level: 30,
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      requestId: res.headers['x-request-id'],
      method: 'GET',
      url: `${API}/1?q=%22quoted%22&u=%C3%A9\\x`, // the backslash needs escaping in JSON
      statusCode: 401,
      ms: expect.any(Number),
      msg: 'request',
    });
  });

  it('is not written when the level is above info', async () => {
    const { createLogger, accessLogWriter } = await import('../src/http/logging.js');
    const lines: string[] = [];
    const write = accessLogWriter(createLogger({ level: 'warn', sink: { write: (l) => lines.push(l) } }));
    write({ requestId: 'r', method: 'GET', url: '/', statusCode: 200, ms: 1 });
    expect(lines).toEqual([]);
  });
});
