import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { postToPlatform } from '../../src/platform/shopify/platformHttp.js';
import { systemResolve } from '../../src/webhooks/addressGuard.js';
import { postWebhook } from '../../src/webhooks/send.js';

/**
 * svc's calls out keep their connections alive, and close an idle one themselves before the server's announced
 * keep-alive time runs out: were the server to close it first, a request sent on it at that moment would be cut.
 * Answers who closed the connection of one call made to a server announcing `Keep-Alive: timeout=2`.
 */
async function whoClosesTheConnection(call: (url: string) => Promise<void>): Promise<'svc' | 'server'> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.end('ok'));
  });
  server.keepAliveTimeout = 2_000;
  const closedBy = new Promise<'svc' | 'server'>((resolve) => {
    server.on('connection', (socket) => {
      let ended = false;
      socket.on('end', () => (ended = true));
      socket.on('close', () => resolve(ended ? 'svc' : 'server'));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    await call(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    return await closedBy;
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
}

describe('kept-alive connections out', () => {
  it('a call to the platform: svc closes the idle connection first', async () => {
    const closer = await whoClosesTheConnection(async (url) => {
      const res = await postToPlatform(url, { headers: {}, body: '{}', timeoutMs: 5000 });
      expect(res.headers['keep-alive']).toBe('timeout=2');
      expect(res.body).toBe('ok');
    });
    expect(closer).toBe('svc');
  });

  it('a webhook delivery: svc closes the idle connection first', async () => {
    const closer = await whoClosesTheConnection(async (url) => {
      const result = await postWebhook(url, {}, '{}', { allowPrivate: true, resolve: systemResolve });
      expect(result).toMatchObject({ statusCode: 200, error: null });
    });
    expect(closer).toBe('svc');
  });
});
