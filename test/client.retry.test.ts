import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createSvcClient, SvcApiError, SvcConnectionError } from '../clients/typescript/src/index.js';
import { startTestApp, type TestApp } from './support/app.js';
import { eventRows, insertContract } from './support/fixtures.js';
import { listen } from './support/mcp.js';

/**
 * @svc/client's retries (docs/product.md §11): through a small HTTP server placed in front of the real app, which answers
 * each request as a test scripts it (503, 409 idempotency_in_progress, a dropped connection, an answer lost after the
 * app acted) and forwards the rest. It records every request it received, so a test sees each attempt's
 * Idempotency-Key.
 */

type Step =
  | { kind: 'status'; status: number; code: string; retryAfter?: string }
  | { kind: 'drop' } // closes the connection without an answer, the app never sees the request
  | { kind: 'lose-answer' }; // forwards to the app, then closes the connection instead of answering
type Seen = { method: string; path: string; idempotencyKey: string | undefined };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let t: TestApp;
let appUrl: string;
let shop: Awaited<ReturnType<TestApp['shopWithKey']>>;
let front: http.Server;
let frontUrl: string;
let script: Step[] = [];
let seen: Seen[] = [];

async function forward(req: http.IncomingMessage, body: Buffer): Promise<Response> {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined && !['host', 'connection', 'content-length'].includes(name)) headers.set(name, String(value));
  }
  return fetch(`${appUrl}${req.url}`, { method: req.method, headers, body: body.length ? body.toString('utf8') : undefined });
}

beforeAll(async () => {
  t = await startTestApp();
  appUrl = await listen(t);
  shop = await t.shopWithKey();
  front = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const header = req.headers['idempotency-key'];
    seen.push({ method: req.method!, path: req.url!.split('?')[0], idempotencyKey: Array.isArray(header) ? header.join() : header });
    const step = script.shift();
    if (step?.kind === 'drop') return req.socket.destroy();
    if (step?.kind === 'status') {
      const envelope = { error: { code: step.code, message: `scripted ${step.code}`, requestId: '00000000-0000-4000-8000-000000000000' } };
      res.writeHead(step.status, { 'content-type': 'application/json', ...(step.retryAfter && { 'retry-after': step.retryAfter }) });
      return res.end(JSON.stringify(envelope));
    }
    const answer = await forward(req, body);
    const text = await answer.text();
    if (step?.kind === 'lose-answer') return req.socket.destroy();
    res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' });
    res.end(text);
  });
  await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
  frontUrl = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
});
beforeEach(() => {
  script = [];
  seen = [];
});
afterAll(async () => {
  await new Promise((resolve) => front?.close(resolve));
  await t.close();
});

/** A client talking to the front server, with short backoffs (Retry-After still counts in full). */
const client = (retries = 3, maxDelayMs = 5_000) =>
  createSvcClient({ baseUrl: frontUrl, apiKey: shop.key, retries: { retries, baseDelayMs: 5, maxDelayMs } });

const actionKeys = () => seen.filter((s) => s.method === 'POST').map((s) => s.idempotencyKey);

describe('an action is retried with one Idempotency-Key', () => {
  it('503 then success: two attempts, the same generated key, one action', async () => {
    const c = await insertContract(t, shop.shopId);
    script = [{ kind: 'status', status: 503, code: 'unavailable', retryAfter: '0' }];
    const contract = await client().pause(c.id, { resumeAt: '2027-01-05T00:00:00Z' });
    expect(contract).toMatchObject({ id: c.id, status: 'PAUSED' });
    const keys = actionKeys();
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(UUID);
    expect(keys[1]).toBe(keys[0]);
    expect(await eventRows(t, c.id)).toHaveLength(1);
  });

  it('an answer lost after the app acted: the retry gets the first outcome, the action runs once', async () => {
    const c = await insertContract(t, shop.shopId);
    script = [{ kind: 'lose-answer' }];
    const contract = await client().skip(c.id);
    const keys = actionKeys();
    expect(keys).toHaveLength(2);
    expect(keys[1]).toBe(keys[0]);
    const events = await eventRows(t, c.id);
    expect(events.map((e) => e.type)).toEqual(['contract.skipped']);
    expect(contract.nextBillingDate).toBe('2027-01-01T00:00:00.000Z');
  });

  it('409 idempotency_in_progress: waits the Retry-After, then retries with the same key', async () => {
    const c = await insertContract(t, shop.shopId);
    script = [{ kind: 'status', status: 409, code: 'idempotency_in_progress', retryAfter: '1' }];
    const started = Date.now();
    await client().resume(c.id).catch(() => undefined); // ACTIVE: the real answer is 409 invalid_state
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    const keys = actionKeys();
    expect(keys).toHaveLength(2);
    expect(keys[1]).toBe(keys[0]);
  });

  it('the caller\'s own key is the one sent on every attempt', async () => {
    const c = await insertContract(t, shop.shopId);
    script = [{ kind: 'drop' }, { kind: 'status', status: 503, code: 'unavailable' }];
    await client().cancel(c.id, { reason: 'test' }, { idempotencyKey: 'cancel-order-77' });
    expect(actionKeys()).toEqual(['cancel-order-77', 'cancel-order-77', 'cancel-order-77']);
    expect(await eventRows(t, c.id)).toHaveLength(1);
  });

  it('each action call has its own key', async () => {
    const c = await insertContract(t, shop.shopId);
    const svc = client();
    await svc.skip(c.id);
    await svc.skip(c.id);
    const keys = actionKeys();
    expect(keys).toHaveLength(2);
    expect(keys[1]).not.toBe(keys[0]);
  });
});

describe('when retrying stops', () => {
  it('a read is retried after a dropped connection', async () => {
    const c = await insertContract(t, shop.shopId);
    script = [{ kind: 'drop' }];
    expect((await client().getSubscriptionContract(c.id)).id).toBe(c.id);
    expect(seen).toHaveLength(2);
    expect(seen[0].idempotencyKey).toBeUndefined();
  });

  it('503 every time: retries+1 attempts, then the SvcApiError with the key to retry later', async () => {
    const c = await insertContract(t, shop.shopId);
    script = Array.from({ length: 3 }, () => ({ kind: 'status', status: 503, code: 'unavailable', retryAfter: '0' }) as Step);
    const err = (await client(2).pause(c.id).catch((e: unknown) => e)) as SvcApiError;
    expect(err).toBeInstanceOf(SvcApiError);
    expect(err).toMatchObject({ status: 503, code: 'unavailable', retryAfterSeconds: 0 });
    const keys = actionKeys();
    expect(keys).toHaveLength(3);
    expect(new Set(keys)).toEqual(new Set([err.idempotencyKey]));
    expect(await eventRows(t, c.id)).toHaveLength(0);
  });

  it('a Retry-After longer than the cap is not waited for: the caller gets it at once', async () => {
    const c = await insertContract(t, shop.shopId);
    script = [{ kind: 'status', status: 503, code: 'unavailable', retryAfter: '120' }];
    const started = Date.now();
    const err = (await client(3, 2_000).skip(c.id).catch((e: unknown) => e)) as SvcApiError;
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(err).toMatchObject({ status: 503, retryAfterSeconds: 120 });
    expect(seen).toHaveLength(1);
  });

  it('a refusal (409 invalid_state, 429) is not retried', async () => {
    const c = await insertContract(t, shop.shopId, { status: 'PAUSED' });
    const err = (await client().skip(c.id).catch((e: unknown) => e)) as SvcApiError;
    expect(err).toMatchObject({ status: 409, code: 'invalid_state' });
    script = [{ kind: 'status', status: 429, code: 'rate_limited', retryAfter: '1' }];
    const limited = (await client().getSubscriptionContract(c.id).catch((e: unknown) => e)) as SvcApiError;
    expect(limited).toMatchObject({ status: 429, code: 'rate_limited', retryAfterSeconds: 1 });
    expect(seen).toHaveLength(2);
  });

  it('no answer at all: SvcConnectionError carrying the action\'s key', async () => {
    const c = await insertContract(t, shop.shopId);
    script = Array.from({ length: 2 }, () => ({ kind: 'drop' }) as Step);
    const err = (await client(1).resume(c.id).catch((e: unknown) => e)) as SvcConnectionError;
    expect(err).toBeInstanceOf(SvcConnectionError);
    expect(err.idempotencyKey).toMatch(UUID);
    expect(actionKeys()).toEqual([err.idempotencyKey, err.idempotencyKey]);
  });
});
