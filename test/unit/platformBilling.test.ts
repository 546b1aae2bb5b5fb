import { GraphQLEnumType } from 'graphql';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src/domain/billing.js';
import { KNOWN_PLATFORM_CODES, normaliseErrorCode, outcomeOf, type PlatformAttempt } from '../../src/platform/shopify/billingAttempts.js';
import { BILLING_ATTEMPTS, CREATE_BILLING_ATTEMPT, FAIL, PAUSE, CANCEL, SKIP_CYCLE, SET_NEXT_BILLING_DATE } from '../../src/platform/shopify/documents.js';
import { BILLING_ATTEMPT_TOPICS, checkWebhookBody } from '../../src/platform/shopify/webhookChecks.js';
import { adminSchema, validateAgainstAdminSchema } from '../support/shopify/schema.js';

const enumValues = (name: string) => (adminSchema().getType(name) as GraphQLEnumType).getValues().map((v) => v.name);

describe('platform billing documents', () => {
  it('are valid against the platform’s Admin schema (2026-10) and use no deprecated field', () => {
    for (const [name, document] of Object.entries({ CREATE_BILLING_ATTEMPT, BILLING_ATTEMPTS, FAIL, PAUSE, CANCEL, SKIP_CYCLE, SET_NEXT_BILLING_DATE })) {
      expect(validateAgainstAdminSchema(document, { noDeprecated: true }), name).toEqual([]);
    }
  });

  it('the deprecated fields of an attempt are refused by the same check (it can fail)', () => {
    const deprecated = 'query { subscriptionBillingAttempt(id: "gid://shopify/SubscriptionBillingAttempt/1") { ready errorCode } }';
    expect(validateAgainstAdminSchema(deprecated, { noDeprecated: true }).length).toBeGreaterThan(0);
  });
});

describe('platform failure codes', () => {
  it('every code of the schema’s enums is mapped on purpose to one of svc’s codes', () => {
    const schemaCodes = new Set([
      ...enumValues('SubscriptionBillingAttemptErrorCode'),
      ...enumValues('SubscriptionBillingAttemptPaymentErrorCode'),
      ...enumValues('SubscriptionBillingAttemptInventoryErrorCode'),
      ...enumValues('SubscriptionBillingAttemptGeneralErrorCode'),
    ]);
    expect([...schemaCodes].filter((c) => !KNOWN_PLATFORM_CODES.includes(c))).toEqual([]);
    expect(KNOWN_PLATFORM_CODES.filter((c) => !schemaCodes.has(c))).toEqual([]);
    for (const code of schemaCodes) expect(ERROR_CODES).toContain(normaliseErrorCode(code));
  });

  it('groups codes by what dunning should do with them; the webhook’s lowercase code reads the same', () => {
    expect(normaliseErrorCode('INSUFFICIENT_FUNDS')).toBe('insufficient_funds');
    expect(normaliseErrorCode('insufficient_funds')).toBe('insufficient_funds');
    expect(normaliseErrorCode('DO_NOT_HONOR')).toBe('card_declined');
    expect(normaliseErrorCode('AUTHENTICATION_REQUIRED')).toBe('authentication_failed');
    expect(normaliseErrorCode('EXPIRED_PAYMENT_METHOD')).toBe('expired_card');
    expect(normaliseErrorCode('PAYMENT_METHOD_NOT_FOUND')).toBe('payment_method_revoked');
    expect(normaliseErrorCode('FRAUD_SUSPECTED')).toBe('fraud');
    expect(normaliseErrorCode('INSUFFICIENT_INVENTORY')).toBe('out_of_stock');
    expect(normaliseErrorCode('SOMETHING_NEW')).toBe('processing_error');
  });
});

describe('an attempt’s state union', () => {
  const attempt = (state: unknown) => ({ id: 'gid://shopify/SubscriptionBillingAttempt/9', idempotencyKey: 'k', createdAt: '', completedAt: null, subscriptionContract: null, state }) as PlatformAttempt;

  it('pending is no outcome yet; success gives the order; action required the challenge’s URL', () => {
    expect(outcomeOf(attempt({ __typename: 'SubscriptionBillingAttemptPendingState', processing: true }))).toBeNull();
    expect(
      outcomeOf(attempt({ __typename: 'SubscriptionBillingAttemptSuccessState', order: { id: 'gid://shopify/Order/77', name: '#1001', totalPriceSet: { presentmentMoney: { amount: '25.00', currencyCode: 'EUR' } } } })),
    ).toEqual({ kind: 'succeeded', order: { id: '77', name: '#1001', amount: '25.00', currencyCode: 'EUR' } });
    expect(
      outcomeOf(attempt({ __typename: 'SubscriptionBillingAttemptActionRequiredState', action: { __typename: 'SubscriptionBillingAttemptPaymentChallenge', nextActionUrl: 'https://x.test/3ds', status: 'OFF_SESSION_REJECTED' } })),
    ).toEqual({ kind: 'action_required', nextActionUrl: 'https://x.test/3ds' });
  });

  it('a failure of each error type keeps the platform’s code beside svc’s', () => {
    const failed = (error: unknown) => outcomeOf(attempt({ __typename: 'SubscriptionBillingAttemptFailedState', error }));
    expect(failed({ __typename: 'SubscriptionBillingAttemptPaymentError', paymentCode: 'CARD_DECLINED' })).toMatchObject({ kind: 'failed', errorCode: 'card_declined', platformErrorCode: 'CARD_DECLINED' });
    expect(failed({ __typename: 'SubscriptionBillingAttemptInventoryError', inventoryCode: 'INSUFFICIENT_INVENTORY' })).toMatchObject({ errorCode: 'out_of_stock', platformErrorCode: 'INSUFFICIENT_INVENTORY' });
    expect(failed({ __typename: 'SubscriptionBillingAttemptGeneralError', generalCode: 'PAYMENT_METHOD_NOT_FOUND' })).toMatchObject({ errorCode: 'payment_method_revoked' });
    expect(failed({ __typename: 'SubscriptionBillingAttemptUnexpectedError', message: 'boom' })).toMatchObject({ errorCode: 'processing_error', platformErrorCode: 'UNEXPECTED_ERROR', message: 'boom' });
  });

  it('a state or an error type the platform adds later is not guessed', () => {
    expect(outcomeOf(attempt({ __typename: 'SubscriptionBillingAttemptFutureState' }))).toBeNull();
    expect(outcomeOf(attempt({ __typename: 'SubscriptionBillingAttemptFailedState', error: { __typename: 'SubscriptionBillingAttemptNewError' } }))).toMatchObject({
      kind: 'failed',
      errorCode: 'processing_error',
    });
  });
});

describe('billing attempt webhooks at receipt', () => {
  const body = {
    id: 9,
    admin_graphql_api_id: 'gid://shopify/SubscriptionBillingAttempt/9',
    idempotency_key: 'svc-1-2-1',
    order_id: null,
    admin_graphql_api_order_id: null,
    subscription_contract_id: 1,
    admin_graphql_api_subscription_contract_id: 'gid://shopify/SubscriptionContract/1',
    ready: true,
    error_message: null,
    error_code: null,
  };
  it('the three topics take the documented body, and refuse another topic’s', () => {
    for (const topic of BILLING_ATTEMPT_TOPICS) expect(checkWebhookBody(topic, 'a.myshopify.com', body), topic).toBeNull();
    expect(checkWebhookBody('subscription_billing_attempts/success', 'a.myshopify.com', { admin_graphql_api_id: 'gid://shopify/SubscriptionContract/1', id: 1, revision_id: '5' })).not.toBeNull();
  });
});
