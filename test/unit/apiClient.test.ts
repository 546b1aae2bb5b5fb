import { describe, expect, it } from 'vitest';
import { ApiError, httpOperations } from '../../src/mcp/apiClient.js';

/** The HTTP client behind `svc mcp-stdio`, against a scripted fetch: what it sends, and when it tries again. */

type Sent = { method: string; url: string; headers: Record<string, string>; body?: string };
type Step = Response | Error | (() => Response);

function scripted(steps: Step[]) {
  const sent: Sent[] = [];
  const fetchImpl = (async (url: string, init: RequestInit) => {
    sent.push({ method: String(init.method), url, headers: init.headers as Record<string, string>, body: init.body as string | undefined });
    const step = steps.shift();
    if (!step) throw new Error('no more scripted answers');
    if (step instanceof Error) throw step;
    return typeof step === 'function' ? step() : step;
  }) as unknown as typeof fetch;
  return { sent, fetchImpl };
}

const KEY = 'svc_live_' + '0'.repeat(49);
const contract = { id: '42', status: 'PAUSED' };
const ok = (body: unknown) => new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json' } });
const envelope = (status: number, code: string, requestId = 'req-1') =>
  new Response(JSON.stringify({ error: { code, message: `${code}!`, requestId } }), { status });
const refused = Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } });

describe('httpOperations (the stdio server\'s client of the API)', () => {
  it('sends the key only in Authorization, and an action with an Idempotency-Key', async () => {
    const { sent, fetchImpl } = scripted([ok({ contract })]);
    const ops = httpOperations('http://svc.test/', KEY, fetchImpl, { retryDelayMs: 1 });
    expect(await ops.actOnContract('42', { action: 'pause' })).toEqual(contract);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ method: 'POST', url: 'http://svc.test/api/v1/subscription-contracts/42/actions', body: '{"action":"pause"}' });
    expect(sent[0].headers.authorization).toBe(`Bearer ${KEY}`);
    expect(sent[0].headers['user-agent']).toBe('svc-mcp-stdio/1');
    expect(sent[0].headers['idempotency-key']).toMatch(/^[0-9a-f-]{36}$/);
    expect(sent[0].url).not.toContain('svc_live_');
  });

  it('an action whose answer was lost is sent again with the same Idempotency-Key (the API replays it)', async () => {
    const { sent, fetchImpl } = scripted([refused, () => envelope(503, 'unavailable'), ok({ contract })]);
    const ops = httpOperations('http://svc.test', KEY, fetchImpl, { retryDelayMs: 1 });
    expect(await ops.actOnContract('42', { action: 'skip' })).toEqual(contract);
    expect(sent).toHaveLength(3);
    expect(new Set(sent.map((s) => s.headers['idempotency-key'])).size).toBe(1);
    // Each tool call has a key of its own.
    const again = scripted([ok({ contract })]);
    await httpOperations('http://svc.test', KEY, again.fetchImpl).actOnContract('42', { action: 'skip' });
    expect(again.sent[0].headers['idempotency-key']).not.toBe(sent[0].headers['idempotency-key']);
  });

  it('waits out 409 idempotency_in_progress, then answers with the outcome', async () => {
    const { sent, fetchImpl } = scripted([envelope(409, 'idempotency_in_progress'), ok({ contract })]);
    expect(await httpOperations('http://svc.test', KEY, fetchImpl, { retryDelayMs: 1 }).actOnContract('42', { action: 'skip' })).toEqual(contract);
    expect(sent).toHaveLength(2);
  });

  it('gives up after three attempts: unavailable, naming the address', async () => {
    const { sent, fetchImpl } = scripted([refused, refused, refused]);
    const err = await httpOperations('http://svc.test', KEY, fetchImpl, { retryDelayMs: 1 }).getContract('42').catch((e) => e);
    expect(err).toMatchObject({ code: 'unavailable' });
    expect(err.message).toContain('http://svc.test');
    expect(err.message).toContain('ECONNREFUSED');
    expect(sent).toHaveLength(3);
    expect(sent.every((s) => s.headers['idempotency-key'] === undefined)).toBe(true);
  });

  it('a body cut off while it arrives counts as no answer (unavailable, retried), not as an unexpected error', async () => {
    const cut = () => {
      const stream = new ReadableStream({
        start(c) {
          c.enqueue(new TextEncoder().encode('{"contr'));
          c.error(new Error('terminated'));
        },
      });
      return new Response(stream, { status: 200 });
    };
    const { sent, fetchImpl } = scripted([cut, ok({ contract })]);
    expect(await httpOperations('http://svc.test', KEY, fetchImpl, { retryDelayMs: 1 }).getContract('42')).toEqual(contract);
    expect(sent).toHaveLength(2);
  });

  it('a refusal is not retried: it comes back as the API said it, with the API\'s request id', async () => {
    const { sent, fetchImpl } = scripted([envelope(409, 'invalid_state', 'api-req-7')]);
    const err = await httpOperations('http://svc.test', KEY, fetchImpl, { retryDelayMs: 1 }).actOnContract('42', { action: 'skip' }).catch((e) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ code: 'invalid_state', message: 'invalid_state!', requestId: 'api-req-7' });
    expect(sent).toHaveLength(1);
  });

  it('an answer that is not the API\'s is internal_error, saying SVC_BASE_URL may be wrong', async () => {
    const { fetchImpl } = scripted([new Response('<html>hi</html>', { status: 404 })]);
    const err = await httpOperations('http://svc.test', KEY, fetchImpl).getContract('42').catch((e) => e);
    expect(err).toMatchObject({ code: 'internal_error' });
    expect(err.message).toContain('SVC_BASE_URL');
  });
});
