/**
 * @svc/client: a typed client of the svc subscription API, generated from the OpenAPI document the server serves
 * (`schema.ts`), with retries that reuse one Idempotency-Key, and a Standard Webhooks verifier.
 */
export {
  createSvcClient,
  type ActionOptions,
  type ContractAction,
  type ContractEvent,
  type ContractPage,
  type ContractStatus,
  type CurrentKey,
  type EventPage,
  type ListContractsQuery,
  type ListEventsQuery,
  type Permissions,
  type SubscriptionContract,
  type SvcClient,
  type SvcClientOptions,
} from './client.js';
export { SvcApiError, SvcConnectionError, type SvcErrorDetail } from './errors.js';
export type { RetryOptions } from './retry.js';
export { SvcWebhookVerificationError, verifyWebhook, type KeyLeakedWebhookEvent, type WebhookEvent, type WebhookHeaders } from './webhooks.js';
export type { components, operations, paths } from './schema.js';
