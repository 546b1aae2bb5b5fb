import { z } from 'zod';
import type { ApiKeyRow, ContractEventRow } from '../db/schema.js';
import { ATTEMPT_STATUSES, ATTEMPT_TRIGGERS, ERROR_CODES, type AttemptState } from './billing.js';
import { BillingInterval, ContractStatus, type ContractState } from './contract.js';
import { DecimalAmount, Money } from './money.js';

export { Money };
import { fingerprintOf } from './keys.js';
import { iso, isoString } from './time.js';

/** What clients see. Schemas document the API (OpenAPI) and type the mappers below. */
const Timestamp = z.string().meta({ format: 'date-time', example: '2026-12-01T00:00:00.000Z' });

const Policy = (what: string) =>
  z.object({ interval: BillingInterval, intervalCount: z.number().int() }).describe(`${what}: every intervalCount intervals.`);

export const Line = z
  .object({
    id: z.string().meta({ description: 'Stable for the line\'s life: edits name the line by it.' }),
    title: z.string(),
    variantId: z.string(),
    quantity: z.number().int(),
    price: Money.describe('The unit price.'),
  })
  .meta({ id: 'ContractLine' });

export const ShippingAddress = z
  .object({
    firstName: z.string(),
    lastName: z.string(),
    address1: z.string(),
    address2: z.string().nullable().optional(),
    city: z.string(),
    provinceCode: z.string().nullable().optional(),
    zip: z.string(),
    countryCode: z.string(),
    phone: z.string().nullable().optional(),
  })
  .meta({ id: 'ShippingAddressOut' });

export const Discount = z
  .object({
    id: z.string(),
    title: z.string(),
    code: z.string().nullable(),
    value: z.discriminatedUnion('type', [
      z.object({ type: z.literal('percentage'), percentage: z.number() }),
      z.object({ type: z.literal('fixed_amount'), amount: Money }),
    ]),
  })
  .meta({ id: 'ContractDiscount' });

export const Totals = z
  .object({ subtotal: DecimalAmount, discounts: DecimalAmount, shipping: DecimalAmount, total: DecimalAmount, currencyCode: z.string() })
  .describe('What one order of the contract costs: the lines\' subtotal, less the discounts, plus shipping.')
  .meta({ id: 'ContractTotals' });

/** A billing attempt as clients see it (renewals). */
export const BillingAttempt = z
  .object({
    id: z.string(),
    contractId: z.string(),
    cycleDate: Timestamp.describe('The cycle billed, named by the next billing date it was due at.'),
    attempt: z.number().int().describe('1 for the first attempt of the cycle, then one more per retry.'),
    trigger: z.enum(ATTEMPT_TRIGGERS).describe('schedule: the cycle came due; retry: dunning; bill_now: the bill_now action.'),
    status: z.enum(ATTEMPT_STATUSES),
    errorCode: z.enum(ERROR_CODES).nullable().describe('The failure, normalised (failed only).'),
    platformErrorCode: z.string().nullable().describe('The payment gateway\'s or platform\'s own code of the failure.'),
    errorMessage: z.string().nullable(),
    nextActionUrl: z.string().nullable().describe('action_required: where the customer authenticates, when known.'),
    order: z
      .object({ id: z.string(), name: z.string().meta({ example: '#1001' }), amount: DecimalAmount, currencyCode: z.string() })
      .nullable()
      .describe('The order the attempt made (succeeded only).'),
    amount: Money.describe('What the attempt bills: the contract\'s total when it was made.'),
    createdAt: Timestamp,
    completedAt: Timestamp.nullable(),
  })
  .meta({ id: 'BillingAttempt' });
export type BillingAttempt = z.infer<typeof BillingAttempt>;

export const ContractBilling = z
  .object({
    status: z.enum(['ok', 'retrying', 'action_required']).describe('ok, retrying (a failed payment will be retried) or action_required (the customer must authenticate).'),
    failedAttempts: z.number().int().describe('Failed attempts of the cycle being billed.'),
    nextAttemptAt: Timestamp.nullable().describe('When the next retry is made, if one is scheduled.'),
    lastAttempt: BillingAttempt.nullable(),
  })
  .meta({ id: 'ContractBilling' });

export const Contract = z
  .object({
    id: z.string().meta({ example: '4242' }),
    status: ContractStatus,
    customer: z.object({ id: z.string(), email: z.string() }),
    billingPolicy: Policy('How often the contract bills'),
    deliveryPolicy: Policy('How often the contract delivers'),
    nextBillingDate: Timestamp,
    lines: z.array(Line),
    shippingAddress: ShippingAddress.nullable(),
    discounts: z.array(Discount),
    totals: Totals,
    pausedAt: Timestamp.nullable(),
    resumeAt: Timestamp.nullable(),
    cancelledAt: Timestamp.nullable(),
    cancellationReason: z.string().nullable(),
    billing: ContractBilling,
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'SubscriptionContract' });
export type Contract = z.infer<typeof Contract>;

export const ActorType = z.enum(['api_key', 'mcp', 'admin', 'scheduler', 'platform', 'billing', 'bulk_job', 'oauth']);
export type ActorType = z.infer<typeof ActorType>;
export const Actor = z.object({
  type: ActorType,
  keyFingerprint: z.string().optional().describe('api_key and mcp: the key\'s fingerprint.'),
  id: z.string().optional().describe('bulk_job: the job\'s id; oauth: the connection\'s id.'),
});
export type Actor = z.infer<typeof Actor>;

export const ContractEvent = z
  .object({
    id: z.string(),
    type: z.string().meta({ example: 'contract.paused' }),
    at: Timestamp,
    actor: Actor,
    from: ContractStatus,
    to: ContractStatus,
    data: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'ContractEvent' });
export type ContractEvent = z.infer<typeof ContractEvent>;

/** What a key may do, chosen at generation and fixed for its life (docs/product.md, "API keys"). */
export const KeyAccess = z.enum(['read_write', 'read_only']).meta({
  description: 'read_write: read and change contracts. read_only: read contracts and events only; changes get 403 insufficient_scope.',
});
export type KeyAccess = z.infer<typeof KeyAccess>;

export const ApiKey = z
  .object({
    id: z.string(),
    name: z.string().nullable(),
    fingerprint: z.string().meta({ description: 'First 12 hex characters of the SHA-256 digest of the key.' }),
    access: KeyAccess,
    status: z.enum(['active', 'revoked']),
    createdAt: Timestamp,
    lastUsedAt: Timestamp.nullable(),
    revokedAt: Timestamp.nullable(),
    revokedReason: z
      .enum(['revoked', 'leaked'])
      .nullable()
      .meta({ description: 'Why it was revoked: by hand, or reported found in public by a secret scanner (null while active).' }),
    leakedAt: Timestamp.nullable().meta({ description: 'A leaked key: when the report came in.' }),
    leakedUrl: z.string().nullable().meta({ description: 'A leaked key: where it was found, as the report said (null when it did not say).' }),
  })
  .meta({ id: 'ApiKey' });
export type ApiKey = z.infer<typeof ApiKey>;

/** What a contract is beyond its state: its id and its times (a row, say). */
type ContractMeta = { id: string; createdAt: Date; updatedAt: Date };

/**
 * The contract as clients see it: the row, with `state` for the state when given (the contract right after one of a
 * change's events, before the row is written).
 */
export function toContract(row: ContractMeta & ContractState, state: ContractState = row): Contract {
  return {
    id: row.id,
    status: state.status,
    customer: { id: state.customerId, email: state.customerEmail },
    billingPolicy: { interval: state.billingInterval, intervalCount: state.billingIntervalCount },
    deliveryPolicy: { interval: state.deliveryInterval, intervalCount: state.deliveryIntervalCount },
    nextBillingDate: isoString(state.nextBillingDate),
    lines: state.lines,
    shippingAddress: state.shippingAddress,
    discounts: state.discounts,
    totals: state.totals,
    pausedAt: iso(state.pausedAt),
    resumeAt: iso(state.resumeAt),
    cancelledAt: iso(state.cancelledAt),
    cancellationReason: state.cancellationReason,
    billing: {
      status: state.billingStatus,
      failedAttempts: state.billingFailedAttempts,
      nextAttemptAt: iso(state.billingNextAttemptAt),
      lastAttempt: state.billingLastAttempt ? toBillingAttempt(row.id, state.billingLastAttempt) : null,
    },
    createdAt: isoString(row.createdAt),
    updatedAt: isoString(row.updatedAt),
  };
}

/** The parts of a contract's state that are JSON (json columns; the last attempt jsonb). */
export type JsonStateKey = 'lines' | 'shippingAddress' | 'deliveryPrice' | 'discounts' | 'totals' | 'billingLastAttempt';
const JSON_STATE_KEYS: readonly JsonStateKey[] = ['lines', 'shippingAddress', 'deliveryPrice', 'discounts', 'totals', 'billingLastAttempt'];
/** A contract (a row, say) whose JSON parts are still JSON text, as the database wrote them (null: SQL NULL). */
export type WithJsonText<T> = Omit<T, JsonStateKey> & { [K in JsonStateKey]: string | null };

/** The JSON parts parsed: the contract as a read that parses them would have given it. */
export function parseJsonParts<T extends ContractState>(row: WithJsonText<T>): T {
  const out = { ...row } as Record<string, unknown>;
  for (const k of JSON_STATE_KEYS) out[k] = row[k] === null ? null : JSON.parse(row[k]);
  return out as T;
}

const str = JSON.stringify;
const isoOrNull = (d: Date | null) => (d === null ? 'null' : `"${isoString(d)}"`);

/**
 * JSON.stringify(toContract(row)), written from a row whose JSON parts are still text: those go in as they are (json
 * columns keep the compact text svc wrote, migration 0021). Byte for byte the same text as toContract's
 * (test/contractJson.test.ts holds the two together); it spares a GET parsing the lines, address, discounts
 * and totals into objects only to write them back out.
 */
export function contractJsonOf(row: WithJsonText<ContractMeta & ContractState>): string {
  const lastAttempt = row.billingLastAttempt === null ? 'null' : str(toBillingAttempt(row.id, JSON.parse(row.billingLastAttempt) as AttemptState));
  return (
    `{"id":${str(row.id)},"status":${str(row.status)},"customer":{"id":${str(row.customerId)},"email":${str(row.customerEmail)}}` +
    `,"billingPolicy":{"interval":${str(row.billingInterval)},"intervalCount":${row.billingIntervalCount}}` +
    `,"deliveryPolicy":{"interval":${str(row.deliveryInterval)},"intervalCount":${row.deliveryIntervalCount}}` +
    `,"nextBillingDate":"${isoString(row.nextBillingDate)}","lines":${row.lines ?? 'null'}` +
    `,"shippingAddress":${row.shippingAddress ?? 'null'},"discounts":${row.discounts ?? 'null'},"totals":${row.totals ?? 'null'}` +
    `,"pausedAt":${isoOrNull(row.pausedAt)},"resumeAt":${isoOrNull(row.resumeAt)},"cancelledAt":${isoOrNull(row.cancelledAt)}` +
    `,"cancellationReason":${row.cancellationReason === null ? 'null' : str(row.cancellationReason)}` +
    `,"billing":{"status":${str(row.billingStatus)},"failedAttempts":${row.billingFailedAttempts},"nextAttemptAt":${isoOrNull(row.billingNextAttemptAt)},"lastAttempt":${lastAttempt}}` +
    `,"createdAt":"${isoString(row.createdAt)}","updatedAt":"${isoString(row.updatedAt)}"}`
  );
}

/** An attempt as clients see it: as the contract keeps it, with the contract's id. */
export function toBillingAttempt(contractId: string, a: AttemptState): BillingAttempt {
  return {
    id: a.id,
    contractId,
    cycleDate: a.cycleDate,
    attempt: a.attempt,
    trigger: a.trigger,
    status: a.status,
    errorCode: a.errorCode,
    platformErrorCode: a.platformErrorCode,
    errorMessage: a.errorMessage,
    nextActionUrl: a.nextActionUrl,
    order: a.order,
    amount: a.amount,
    createdAt: a.createdAt,
    completedAt: a.completedAt,
  };
}

export function toContractEvent(row: ContractEventRow): ContractEvent {
  const actor: Actor = { type: row.actorType as ActorType };
  if (row.actorKeyFingerprint) actor.keyFingerprint = row.actorKeyFingerprint;
  if (row.actorId) actor.id = row.actorId;
  return {
    id: row.id,
    type: row.type,
    at: isoString(row.at),
    actor,
    from: row.fromStatus as ContractEvent['from'],
    to: row.toStatus as ContractEvent['to'],
    data: row.data,
  };
}

export function toApiKey(row: ApiKeyRow): ApiKey {
  return {
    id: row.id,
    name: row.name,
    fingerprint: fingerprintOf(row.digest),
    access: row.access,
    status: row.revokedAt ? 'revoked' : 'active',
    createdAt: row.createdAt.toISOString(),
    lastUsedAt: iso(row.lastUsedAt),
    revokedAt: iso(row.revokedAt),
    // A key revoked without a recorded reason was revoked by hand (the only way before leaks were reported).
    revokedReason: row.revokedAt ? (row.revokedReason ?? 'revoked') : null,
    leakedAt: iso(row.leakedAt),
    leakedUrl: row.leakedUrl,
  };
}
