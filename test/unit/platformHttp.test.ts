import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CallFailed, postToPlatform } from '../../src/platform/shopify/platformHttp.js';

// svc's calls to the platform (GraphQL and the token endpoint): what they send, and what they answer.
describe('postToPlatform', () => {
  let server: http.Server;
  let base: string;
  const seen: { method?: string; headers: http.IncomingHttpHeaders; body: string }[] = [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        seen.push({ method: req.method, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        if (req.url === '/json') res.writeHead(201, { 'content-type': 'application/json', 'x-request-id': 'abc' }).end('{"ok":true,"n":"é"}');
        else if (req.url === '/redirect') res.writeHead(302, { location: '/json' }).end();
        else if (req.url === '/empty') res.writeHead(204).end();
        else if (req.url === '/error') res.writeHead(503, 'Service Unavailable', { 'retry-after': '2' }).end('down');
        // /slow never answers
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const post = (path: string, opts: { headers?: Record<string, string>; body?: string; timeoutMs?: number } = {}) =>
    postToPlatform(`${base}${path}`, { headers: opts.headers ?? {}, body: opts.body ?? '{}', timeoutMs: opts.timeoutMs ?? 5000 });

  it('POSTs the headers and the body, and answers the status, the headers and the body as text', async () => {
    const res = await post('/json', { headers: { 'content-type': 'application/json', 'X-Shopify-Access-Token': 'tok' }, body: '{"q":"ü"}' });
    expect(res.status).toBe(201);
    expect(res.headers['x-request-id']).toBe('abc');
    expect(JSON.parse(res.body)).toEqual({ ok: true, n: 'é' });
    const req = seen.at(-1)!;
    expect(req.method).toBe('POST');
    expect(req.headers['x-shopify-access-token']).toBe('tok');
    expect(req.headers['content-length']).toBe(String(Buffer.byteLength('{"q":"ü"}')));
    expect(req.body).toBe('{"q":"ü"}');
  });

  it('answers an error status, not a failure', async () => {
    const res = await post('/error');
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('2');
    expect(res.body).toBe('down');
  });

  it('answers a 204 with an empty body', async () => {
    expect(await post('/empty')).toMatchObject({ status: 204, body: '' });
  });

  it('never follows a redirect: it is a failure', async () => {
    const before = seen.length;
    await expect(post('/redirect')).rejects.toMatchObject({ timedOut: false, message: 'the connection failed' });
    await expect(post('/redirect')).rejects.toBeInstanceOf(CallFailed);
    expect(seen.length).toBe(before + 2);
  });

  it('gives up at its time limit, and says so', async () => {
    const started = Date.now();
    await expect(post('/slow', { timeoutMs: 100 })).rejects.toMatchObject({ timedOut: true, message: 'no answer in time' });
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('fails, not timed out, when nothing listens', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/`;
    await new Promise((r) => closed.close(r));
    await expect(postToPlatform(url, { headers: {}, body: '{}', timeoutMs: 5000 })).rejects.toMatchObject({ timedOut: false, message: 'the connection failed' });
  });

  it('fails on an address it cannot call', async () => {
    await expect(postToPlatform('ftp://example.com/', { headers: {}, body: '{}', timeoutMs: 5000 })).rejects.toBeInstanceOf(CallFailed);
    await expect(postToPlatform('not a url', { headers: {}, body: '{}', timeoutMs: 5000 })).rejects.toBeInstanceOf(CallFailed);
  });
});
