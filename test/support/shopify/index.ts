/**
 * The stand-in: a local fake of the platform (Shopify) built on its real Admin GraphQL schema, for svc's platform
 * mode and its tests. See README.md beside this file.
 */
export { startStandIn, type RunningStandIn } from './server.js';
export { StandIn } from './standIn.js';
export type { LoggedRequest, StandInOptions } from './options.js';
export { adminSchema, validateAgainstAdminSchema, ADMIN_API_VERSION, type PlatformError } from './schema.js';
export { signSessionToken, verifySessionToken } from './oauth.js';
export { signWebhook, type Delivery, type WebhookFault, type WebhookFaultScope } from './webhooks.js';
export type { HttpFault, HttpFaultScope } from './faults.js';
export type { InjectedUserError, RootCall } from './resolverContext.js';
export type { Clock, Contract, ContractInit, ContractLine, ContractStatus, Shop } from './store.js';
export { toJsonl } from './bulk.js';
export type { PaymentOutcome, StandInAttempt } from './billing.js';
