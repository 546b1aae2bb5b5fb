import type { BillingErrorCode, BillingOutcome } from '../../domain/billing.js';
import { unreachable } from '../../domain/unreachable.js';

/**
 * A billing attempt as the platform answers it (documents.ts ATTEMPT_FIELDS), and what svc makes of it: the outcome
 * its `state` union says, with the platform's error code normalised to svc's own (the platform's kept beside it).
 */
export type PlatformAttempt = {
  id: string;
  idempotencyKey: string;
  createdAt: string;
  completedAt: string | null;
  subscriptionContract: { id: string } | null;
  state: AttemptStateAnswer;
};

type Money = { amount: string; currencyCode: string };
type AttemptStateAnswer =
  | { __typename: 'SubscriptionBillingAttemptPendingState'; processing: boolean }
  | { __typename: 'SubscriptionBillingAttemptSuccessState'; order: { id: string; name: string; totalPriceSet: { presentmentMoney: Money } } | null }
  | { __typename: 'SubscriptionBillingAttemptFailedState'; error: AttemptErrorAnswer }
  | { __typename: 'SubscriptionBillingAttemptActionRequiredState'; action: { __typename: string; nextActionUrl?: string; status?: string } };
type AttemptErrorAnswer =
  | { __typename: 'SubscriptionBillingAttemptPaymentError'; paymentCode: string }
  | { __typename: 'SubscriptionBillingAttemptInventoryError'; inventoryCode: string }
  | { __typename: 'SubscriptionBillingAttemptGeneralError'; generalCode: string }
  | { __typename: 'SubscriptionBillingAttemptUnexpectedError'; message: string };

/**
 * The platform's failure codes (the schema's SubscriptionBillingAttemptErrorCode and the per-type enums of the
 * state union, https://shopify.dev/docs/api/admin-graphql/latest/enums/SubscriptionBillingAttemptErrorCode) by svc's
 * code. What decides the group is what dunning should do: retry a payment that may go through later
 * (insufficient_funds, card_declined, authentication_failed, processing_error), give up early on one no retry can fix
 * (expired_card, payment_method_revoked, fraud), or wait for stock (out_of_stock). A code the platform adds later is
 * a processing_error until it is listed here.
 */
const BY_PRODUCT_CODE: Record<BillingErrorCode, readonly string[]> = {
  insufficient_funds: ['INSUFFICIENT_FUNDS'],
  card_declined: [
    'CARD_DECLINED',
    'DO_NOT_HONOR',
    'CALL_ISSUER',
    'PAYMENT_METHOD_DECLINED',
    'RETRY_DECLINED',
    'TRANSACTION_LIMIT_EXCEEDED',
    'AMOUNT_TOO_LARGE',
    'AMOUNT_TOO_SMALL',
    'INVALID_AMOUNT',
    'INCORRECT_CVC',
    'INVALID_CVC',
    'INCORRECT_ZIP',
    'INCORRECT_ADDRESS',
    'INCORRECT_PIN',
    'MERCHANT_RULE',
    'CANCELLED_PAYMENT',
  ],
  authentication_failed: ['AUTHENTICATION_ERROR', 'AUTHENTICATION_FAILED', 'AUTHENTICATION_REQUIRED', 'EXPIRED_BUYER_ACTION', 'CONFIRMATION_REJECTED', 'OFF_SESSION_REJECTED'],
  processing_error: [
    'PROCESSING_ERROR',
    'PAYMENT_PROVIDER_ERROR',
    'TRANSIENT_ERROR',
    'GENERIC_ERROR',
    'PAYPAL_ERROR_GENERAL',
    'UNEXPECTED_ERROR',
    'INVALID_REQUEST',
    'INVALID_CURRENCY',
    'INVOICE_ALREADY_PAID',
    'TEST_MODE',
    'MERCHANT_ACCOUNT_ERROR',
    'NON_TEST_ORDER_LIMIT_REACHED',
    'PAYMENT_PROVIDER_IS_NOT_ENABLED',
    'PAYMENT_METHOD_INCOMPATIBLE_WITH_GATEWAY_CONFIG',
    'FREE_GIFT_CARD_NOT_ALLOWED',
    'INVALID_BILLING_ADDRESS',
    'INVALID_SHIPPING_ADDRESS',
  ],
  expired_card: ['EXPIRED_CARD', 'EXPIRED_PAYMENT_METHOD', 'INVALID_EXPIRY_DATE'],
  payment_method_revoked: [
    'BUYER_CANCELED_PAYMENT_METHOD',
    'PAYMENT_METHOD_NOT_FOUND',
    'PAYMENT_METHOD_NOT_SPECIFIED',
    'PAYMENT_METHOD_UNSUPPORTED',
    'INVALID_PAYMENT_METHOD',
    'INVALID_CUSTOMER_BILLING_AGREEMENT',
    'INVALID_PURCHASE_TYPE',
    'PURCHASE_TYPE_NOT_SUPPORTED',
    'CARD_NUMBER_INCORRECT',
    'INCORRECT_NUMBER',
    'INVALID_NUMBER',
    'CUSTOMER_INVALID',
    'CUSTOMER_NOT_FOUND',
  ],
  fraud: ['FRAUD_SUSPECTED'],
  out_of_stock: ['INSUFFICIENT_INVENTORY', 'INVENTORY_ALLOCATIONS_NOT_FOUND'],
};

const PRODUCT_CODE = new Map<string, BillingErrorCode>(
  (Object.entries(BY_PRODUCT_CODE) as [BillingErrorCode, readonly string[]][]).flatMap(([mine, theirs]) => theirs.map((c) => [c, mine] as const)),
);

/** svc's code for a platform failure code (as the state union has it, or lowercase as in the failure webhook). */
export function normaliseErrorCode(platformCode: string): BillingErrorCode {
  return PRODUCT_CODE.get(platformCode.toUpperCase()) ?? 'processing_error';
}

/** Every platform code svc knows (tests go through them all). */
export const KNOWN_PLATFORM_CODES: readonly string[] = [...PRODUCT_CODE.keys()];

/** What the attempt's state says became of it; null while it is pending. */
export function outcomeOf(attempt: PlatformAttempt): BillingOutcome | null {
  const s = attempt.state;
  // A state the platform adds to the union later: left pending (the poller reads it again) rather than guessed.
  if (!STATES.has(s.__typename)) return null;
  switch (s.__typename) {
    case 'SubscriptionBillingAttemptPendingState':
      return null;
    case 'SubscriptionBillingAttemptSuccessState': {
      // The order may be null when it was deleted since (the schema says so); the attempt succeeded all the same.
      const o = s.order;
      const money = o?.totalPriceSet.presentmentMoney;
      return { kind: 'succeeded', order: { id: o ? numericId(o.id) : '', name: o?.name ?? '', amount: money?.amount ?? '0', currencyCode: money?.currencyCode ?? 'XXX' } };
    }
    case 'SubscriptionBillingAttemptActionRequiredState':
      return { kind: 'action_required', nextActionUrl: s.action.nextActionUrl ?? null };
    case 'SubscriptionBillingAttemptFailedState': {
      const e = s.error;
      if (!ERRORS.has(e.__typename)) return { kind: 'failed', errorCode: 'processing_error', platformErrorCode: e.__typename, message: 'the platform reported a failure of a kind svc does not know' };
      switch (e.__typename) {
        case 'SubscriptionBillingAttemptPaymentError':
          return failed(e.paymentCode);
        case 'SubscriptionBillingAttemptInventoryError':
          return failed(e.inventoryCode);
        case 'SubscriptionBillingAttemptGeneralError':
          return failed(e.generalCode);
        case 'SubscriptionBillingAttemptUnexpectedError':
          return { kind: 'failed', errorCode: 'processing_error', platformErrorCode: 'UNEXPECTED_ERROR', message: e.message.slice(0, 500) };
        default:
          return unreachable(e);
      }
    }
    default:
      return unreachable(s);
  }
}

const STATES = new Set<string>([
  'SubscriptionBillingAttemptPendingState',
  'SubscriptionBillingAttemptSuccessState',
  'SubscriptionBillingAttemptActionRequiredState',
  'SubscriptionBillingAttemptFailedState',
] satisfies AttemptStateAnswer['__typename'][]);
const ERRORS = new Set<string>([
  'SubscriptionBillingAttemptPaymentError',
  'SubscriptionBillingAttemptInventoryError',
  'SubscriptionBillingAttemptGeneralError',
  'SubscriptionBillingAttemptUnexpectedError',
] satisfies AttemptErrorAnswer['__typename'][]);

function failed(code: string): BillingOutcome {
  // The state union carries a code and no message: the message is the code in words.
  return { kind: 'failed', errorCode: normaliseErrorCode(code), platformErrorCode: code, message: code.toLowerCase().replaceAll('_', ' ') };
}

/** `gid://shopify/Order/123` → `123`. */
const numericId = (gid: string) => /(\d+)$/.exec(gid)?.[1] ?? gid;
