import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import type { ContractEvent, SubscriptionContract } from './client.js';

/** What svc sends (docs/product.md §10): a contract event and the contract after it. */
export type WebhookEvent = {
  type: string;
  timestamp: string;
  data: { event: ContractEvent; contract: SubscriptionContract };
};

/**
 * `api_key.leaked`: a key of the shop was found in public (GitHub secret scanning) and revoked at once. Its `data`
 * names the key (never the key itself) and where it was found. Check `type` first, then
 * `verifyWebhook<KeyLeakedWebhookEvent>(…)` or a cast gives it this shape.
 */
export type KeyLeakedWebhookEvent = {
  type: 'api_key.leaked';
  timestamp: string;
  data: { key: { id: string; name: string | null; fingerprint: string }; url: string | null; source: string | null };
};

/** Request headers as fetch (`Headers`), Node's `req.headers` or most frameworks hand them over. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

/** The webhook is not from svc, was altered, or is too old to trust (a replay): answer 4xx and ignore it. */
export class SvcWebhookVerificationError extends Error {
  override readonly name = 'SvcWebhookVerificationError';
}

const SIGNED_HEADERS = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;

/**
 * Verifies a webhook from svc and returns its parsed body, following the Standard Webhooks spec (the
 * `standardwebhooks` package does the checking): the `webhook-signature` header holds one or more space-separated
 * `v1,<base64>` HMAC-SHA256 signatures of `<webhook-id>.<webhook-timestamp>.<body>` under the endpoint's secret
 * (`whsec_` + base64), and the timestamp must be within 5 minutes of now, so a captured request cannot be replayed
 * later. During a secret rotation svc signs with the old and the new secret side by side, so either verifies; pass
 * both secrets while you switch over.
 *
 * `payload` must be the raw body exactly as received (not re-serialised JSON: any byte changed breaks the signature).
 * Deduplicate on `webhook-id`: it is the same on every retry of one event.
 */
export function verifyWebhook<T = WebhookEvent>(payload: string, headers: WebhookHeaders, secret: string | string[]): T {
  const picked: Record<string, string> = {};
  for (const name of SIGNED_HEADERS) {
    const value = headers instanceof Headers ? headers.get(name) : headerValue(headers, name);
    if (value) picked[name] = value;
  }
  const secrets = Array.isArray(secret) ? secret : [secret];
  if (secrets.length === 0) throw new SvcWebhookVerificationError('No webhook secret given.');
  let failure: unknown;
  for (const s of secrets) {
    try {
      return new Webhook(s).verify(payload, picked) as T;
    } catch (err) {
      failure = err;
      // Only a signature mismatch is worth trying the next secret for; missing headers or a stale timestamp are not.
      if (!(err instanceof WebhookVerificationError) || err.message !== 'No matching signature found') break;
    }
  }
  const message = failure instanceof Error ? failure.message : String(failure);
  throw new SvcWebhookVerificationError(`Webhook verification failed: ${message}.`, { cause: failure });
}

/** A header from a plain object, whatever the case of its name; a repeated header's values joined by spaces. */
function headerValue(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== name) continue;
    return Array.isArray(value) ? value.join(' ') : value;
  }
  return undefined;
}
