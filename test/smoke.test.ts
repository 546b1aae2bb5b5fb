import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, startTestApp, type TestApp } from './support/app.js';

describe('smoke: a key pauses a contract', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('pauses with resumeAt and records the event', async () => {
    const { shopId, key, fingerprint } = await t.shopWithKey();
    const [c] = await t.seed(shopId, 1);
    const res = await t.inject({
      method: 'POST',
      url: `/api/v1/subscription-contracts/${c.id}/actions`,
      headers: bearer(key),
      payload: { action: 'pause', resumeAt: '2027-01-05T00:00:00Z' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().contract).toMatchObject({ id: c.id, status: 'PAUSED', resumeAt: '2027-01-05T00:00:00.000Z' });
    const ev = await t.inject({ url: `/api/v1/subscription-contracts/${c.id}/events`, headers: bearer(key) });
    expect(ev.json().events[0]).toMatchObject({ type: 'contract.paused', actor: { type: 'api_key', keyFingerprint: fingerprint } });
    expect(t.logs.join('\n')).not.toContain(key);
  });
});
