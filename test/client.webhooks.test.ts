import { randomBytes, randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { SvcWebhookVerificationError, verifyWebhook } from '../clients/typescript/src/index.js';

/**
 * @svc/client's webhook verifier (docs/product.md §10, §11) against signatures made by the reference library
 * (`standardwebhooks`' own Webhook.sign): `v1,<base64>` over `id.timestamp.body`, secret `whsec_` + base64.
 */

const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;
const body = JSON.stringify({
  type: 'contract.paused',
  timestamp: '2026-11-22T10:00:00.000Z',
  data: { event: { id: '7', type: 'contract.paused' }, contract: { id: '4242', status: 'PAUSED' } },
});

/** The headers svc sends with `payload`, signed at `at` with each of `secrets` (two during a rotation). */
function signed(payload: string, secrets: string[], at = new Date(), id = `msg_${randomUUID()}`): Record<string, string> {
  const signatures = secrets.map((s) => new Webhook(s).sign(id, at, payload));
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signatures.join(' '),
  };
}

function refused(fn: () => unknown): SvcWebhookVerificationError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(SvcWebhookVerificationError);
    return err as SvcWebhookVerificationError;
  }
  return expect.fail('expected the webhook to be refused');
}

describe('verifyWebhook', () => {
  it('accepts a correctly signed webhook and returns its parsed body', () => {
    const secret = newSecret();
    const event = verifyWebhook(body, signed(body, [secret]), secret);
    expect(event).toEqual(JSON.parse(body));
    expect(event.type).toBe('contract.paused');
  });

  it('takes a fetch Headers object and header names in any case', () => {
    const secret = newSecret();
    const h = signed(body, [secret]);
    expect(verifyWebhook(body, new Headers(h), secret)).toEqual(JSON.parse(body));
    const shouted = Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toUpperCase(), v]));
    expect(verifyWebhook(body, shouted, secret)).toEqual(JSON.parse(body));
  });

  it('refuses a tampered body', () => {
    const secret = newSecret();
    const headers = signed(body, [secret]);
    const err = refused(() => verifyWebhook(body.replace('PAUSED', 'ACTIVE'), headers, secret));
    expect(err.message).toMatch(/signature/i);
    // Re-serialised JSON is a different body too: verification needs the raw bytes as received.
    refused(() => verifyWebhook(JSON.stringify(JSON.parse(body), null, 1), headers, secret));
  });

  it('refuses another secret\'s signature and a changed webhook-id', () => {
    const secret = newSecret();
    const headers = signed(body, [secret]);
    refused(() => verifyWebhook(body, headers, newSecret()));
    refused(() => verifyWebhook(body, { ...headers, 'webhook-id': 'msg_other' }, secret));
  });

  it('refuses a stale timestamp (a replayed request) and one from the future, even correctly signed', () => {
    const secret = newSecret();
    const old = signed(body, [secret], new Date(Date.now() - 10 * 60_000));
    expect(refused(() => verifyWebhook(body, old, secret)).message).toMatch(/too old/);
    const ahead = signed(body, [secret], new Date(Date.now() + 10 * 60_000));
    expect(refused(() => verifyWebhook(body, ahead, secret)).message).toMatch(/too new/);
    // Within the five minutes' tolerance it is accepted.
    expect(verifyWebhook(body, signed(body, [secret], new Date(Date.now() - 60_000)), secret)).toBeTruthy();
  });

  it('refuses missing headers and signatures of an unknown version', () => {
    const secret = newSecret();
    const headers = signed(body, [secret]);
    const { 'webhook-signature': _dropped, ...unsigned } = headers;
    refused(() => verifyWebhook(body, unsigned, secret));
    refused(() => verifyWebhook(body, { ...headers, 'webhook-signature': headers['webhook-signature'].replace('v1,', 'v2,') }, secret));
  });

  it('during a secret rotation (two signatures, space-separated) either secret verifies', () => {
    const oldSecret = newSecret();
    const newSecretValue = newSecret();
    const headers = signed(body, [oldSecret, newSecretValue]);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(verifyWebhook(body, headers, oldSecret)).toEqual(JSON.parse(body));
    expect(verifyWebhook(body, headers, newSecretValue)).toEqual(JSON.parse(body));
    refused(() => verifyWebhook(body, headers, newSecret()));
  });

  it('a receiver switching secrets may pass both: a webhook signed with either is accepted', () => {
    const oldSecret = newSecret();
    const newSecretValue = newSecret();
    expect(verifyWebhook(body, signed(body, [oldSecret]), [newSecretValue, oldSecret])).toEqual(JSON.parse(body));
    expect(verifyWebhook(body, signed(body, [newSecretValue]), [newSecretValue, oldSecret])).toEqual(JSON.parse(body));
    refused(() => verifyWebhook(body, signed(body, [newSecret()]), [newSecretValue, oldSecret]));
    refused(() => verifyWebhook(body, signed(body, [oldSecret]), []));
  });
});
