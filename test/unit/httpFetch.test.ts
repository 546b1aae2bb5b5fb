import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpFetch } from '../../src/platform/shopify/httpFetch.js';

// The fetch svc gives the platform's GraphQL client: it must answer as fetch does for what svc uses of it.
describe('httpFetch', () => {
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

  it('sends the method, headers and body, and answers a Response with the status, headers and body', async () => {
    const res = await httpFetch(`${base}/json`, { method: 'POST', headers: { 'content-type': 'application/json', 'X-Shopify-Access-Token': 'tok' }, body: '{"q":"ü"}' });
    expect(res.status).toBe(201);
    expect(res.ok).toBe(true);
    expect(res.headers.get('x-request-id')).toBe('abc');
    expect(await res.json()).toEqual({ ok: true, n: 'é' });
    const req = seen.at(-1)!;
    expect(req.method).toBe('POST');
    expect(req.headers['x-shopify-access-token']).toBe('tok');
    expect(req.headers['content-length']).toBe(String(Buffer.byteLength('{"q":"ü"}')));
    expect(req.body).toBe('{"q":"ü"}');
  });

  it('answers an error status as a Response, not a rejection', async () => {
    const res = await httpFetch(`${base}/error`, { method: 'POST', body: '{}' });
    expect(res.status).toBe(503);
    expect(res.ok).toBe(false);
    expect(res.statusText).toBe('Service Unavailable');
    expect(res.headers.get('retry-after')).toBe('2');
    expect(await res.text()).toBe('down');
  });

  it('answers a 204 with no body', async () => {
    const res = await httpFetch(`${base}/empty`);
    expect(res.status).toBe(204);
    expect(res.body).toBeNull();
  });

  it('never follows a redirect: it is a failure', async () => {
    const before = seen.length;
    await expect(httpFetch(`${base}/redirect`, { method: 'POST', body: '{}', redirect: 'error' })).rejects.toThrow(TypeError);
    expect(seen.length).toBe(before + 1);
  });

  it('gives up when its signal aborts, with the signal’s reason', async () => {
    const controller = new AbortController();
    const pending = httpFetch(`${base}/slow`, { method: 'POST', body: '{}', signal: controller.signal });
    setTimeout(() => controller.abort(new DOMException('The operation timed out.', 'TimeoutError')), 50);
    await expect(pending).rejects.toMatchObject({ name: 'TimeoutError' });
    const aborted = new AbortController();
    aborted.abort(new Error('already'));
    await expect(httpFetch(`${base}/json`, { signal: aborted.signal })).rejects.toThrow('already');
  });

  it('rejects with a TypeError when nothing listens', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/`;
    await new Promise((r) => closed.close(r));
    await expect(httpFetch(url)).rejects.toThrow(TypeError);
  });
});
