/**
 * Every GraphQL document svc sends to the platform's Admin API (2026-10). A unit test validates each against the
 * platform's own schema (test/platform.documents.test.ts), deprecated fields included, so a typo or a renamed
 * argument fails the suite and not a merchant's request. Argument names differ between mutations: the status
 * mutations take `subscriptionContractId`, setNextBillingDate takes `contractId` and `date`, the cycle mutations a
 * `billingCycleInput`.
 */

/**
 * What the mirror holds of a contract (mirrorFields in contracts.ts maps it): its first MIRRORED_LINES lines and
 * MIRRORED_DISCOUNTS discounts. The platform's query cost counts a connection's page size, and a page of contracts
 * must stay under its 1,000-point limit: 8 contracts × (9 + 40 lines × 2 + 5 discounts × 3) ≈ 850.
 */
export const MIRRORED_LINES = 40;
/** Discounts of a contract the mirror reads: a contract has a handful at most. */
export const MIRRORED_DISCOUNTS = 5;
export const CONTRACTS_PER_PAGE = 8;
const ADDRESS_FIELDS = 'firstName lastName address1 address2 city provinceCode zip countryCodeV2 phone';
const DISCOUNT_FIELDS = `id title type value {
      ... on SubscriptionDiscountPercentageValue { percentage }
      ... on SubscriptionDiscountFixedAmountValue { amount { amount currencyCode } appliesOnEachItem }
    }`;
/** A contract's fields besides its lines and discounts (the bulk query nests those differently). */
const CONTRACT_SCALARS = `id status nextBillingDate createdAt updatedAt revisionId currencyCode
  customer { id defaultEmailAddress { emailAddress } }
  billingPolicy { interval intervalCount }
  deliveryPolicy { interval intervalCount }
  deliveryPrice { amount currencyCode }
  deliveryMethod { ... on SubscriptionDeliveryMethodShipping { address { ${ADDRESS_FIELDS} } } }`;
const LINE_FIELDS = 'id title variantId quantity currentPrice { amount currencyCode }';
const CONTRACT_FIELDS = `
  ${CONTRACT_SCALARS}
  lines(first: ${MIRRORED_LINES}) { nodes { ${LINE_FIELDS} } }
  discounts(first: ${MIRRORED_DISCOUNTS}) { nodes { ${DISCOUNT_FIELDS} } }`;

export const CONTRACT = `query SvcContract($id: ID!) {
  subscriptionContract(id: $id) {${CONTRACT_FIELDS}
  }
}`;

/** Up to CONTRACTS_PER_PAGE contracts by id (the inbox's re-read); one the platform no longer has is null. */
export const CONTRACTS_BY_ID = `query SvcContractsById($ids: [ID!]!) {
  nodes(ids: $ids) {
    ... on SubscriptionContract {${CONTRACT_FIELDS}
    }
  }
}`;

export const CONTRACTS_PAGE = `query SvcContractsPage($first: Int!, $after: String, $query: String) {
  subscriptionContracts(first: $first, after: $after, query: $query, sortKey: UPDATED_AT) {
    nodes {${CONTRACT_FIELDS}
    }
    pageInfo { hasNextPage endCursor }
  }
}`;

/** The bulk import's inner query: the same fields, every line (a nested connection becomes lines with __parentId). */
export const BULK_CONTRACTS_QUERY = `{
  subscriptionContracts {
    edges {
      node {
        ${CONTRACT_SCALARS}
        lines { edges { node { ${LINE_FIELDS} } } }
        discounts { edges { node { ${DISCOUNT_FIELDS} } } }
      }
    }
  }
}`;

// A mutation answers the whole contract: whatever else changed on the platform meanwhile reaches the mirror with it.
const CONTRACT_ANSWER = `contract {${CONTRACT_FIELDS} }`;

export const PAUSE = `mutation SvcPause($id: ID!) {
  subscriptionContractPause(subscriptionContractId: $id) { ${CONTRACT_ANSWER} userErrors { field message code } }
}`;
export const ACTIVATE = `mutation SvcActivate($id: ID!) {
  subscriptionContractActivate(subscriptionContractId: $id) { ${CONTRACT_ANSWER} userErrors { field message code } }
}`;
export const CANCEL = `mutation SvcCancel($id: ID!) {
  subscriptionContractCancel(subscriptionContractId: $id) { ${CONTRACT_ANSWER} userErrors { field message code } }
}`;
export const SET_NEXT_BILLING_DATE = `mutation SvcSetNextBillingDate($id: ID!, $date: DateTime!) {
  subscriptionContractSetNextBillingDate(contractId: $id, date: $date) { ${CONTRACT_ANSWER} userErrors { field message code } }
}`;
export const SKIP_CYCLE = `mutation SvcSkipCycle($input: SubscriptionBillingCycleInput!) {
  subscriptionBillingCycleSkip(billingCycleInput: $input) {
    billingCycle { cycleIndex skipped billingAttemptExpectedDate cycleEndAt }
    userErrors { field message code }
  }
}`;
export const UNSKIP_CYCLE = `mutation SvcUnskipCycle($input: SubscriptionBillingCycleInput!) {
  subscriptionBillingCycleUnskip(billingCycleInput: $input) {
    billingCycle { cycleIndex skipped }
    userErrors { field message code }
  }
}`;
export const BILLING_CYCLE = `query SvcBillingCycle($input: SubscriptionBillingCycleInput!) {
  subscriptionBillingCycle(billingCycleInput: $input) { cycleIndex billingAttemptExpectedDate skipped }
}`;

export const FAIL = `mutation SvcFail($id: ID!) {
  subscriptionContractFail(subscriptionContractId: $id) { ${CONTRACT_ANSWER} userErrors { field message code } }
}`;

/**
 * Where a billing attempt stands, read from its `state` union (the attempt's older fields, `ready`, `errorCode`,
 * `order`, `nextActionUrl`, are deprecated in its favour:
 * https://shopify.dev/docs/api/admin-graphql/latest/objects/SubscriptionBillingAttempt). A failure is one of four
 * error types; only the unexpected one has a message, the others a code, each of its own enum (so each under its own alias;
 * billingAttempts.ts reads them).
 */
const ATTEMPT_FIELDS = `id idempotencyKey createdAt completedAt
  subscriptionContract { id }
  state {
    __typename
    ... on SubscriptionBillingAttemptPendingState { processing }
    ... on SubscriptionBillingAttemptSuccessState { order { id name totalPriceSet { presentmentMoney { amount currencyCode } } } }
    ... on SubscriptionBillingAttemptFailedState {
      error {
        __typename
        ... on SubscriptionBillingAttemptPaymentError { paymentCode: code }
        ... on SubscriptionBillingAttemptInventoryError { inventoryCode: code }
        ... on SubscriptionBillingAttemptGeneralError { generalCode: code }
        ... on SubscriptionBillingAttemptUnexpectedError { message }
      }
    }
    ... on SubscriptionBillingAttemptActionRequiredState {
      action { __typename ... on SubscriptionBillingAttemptPaymentChallenge { nextActionUrl status } }
    }
  }`;

/**
 * Bills one cycle of a contract. `idempotencyKey`: the platform creates at most one attempt per key, so a retry after
 * a lost answer or a throttled call finds the first one instead of charging twice
 * (https://shopify.dev/docs/api/usage/idempotent-requests). The cycle is selected by its date, and `originTime` is
 * the cycle date too, so an attempt that completes late does not push the fulfilment schedule to the next anchor
 * (https://shopify.dev/docs/api/admin-graphql/latest/input-objects/SubscriptionBillingAttemptInput).
 */
export const CREATE_BILLING_ATTEMPT = `mutation SvcCreateBillingAttempt($contractId: ID!, $input: SubscriptionBillingAttemptInput!) {
  subscriptionBillingAttemptCreate(subscriptionContractId: $contractId, subscriptionBillingAttemptInput: $input) {
    subscriptionBillingAttempt { ${ATTEMPT_FIELDS} }
    userErrors { field message code }
  }
}`;

/** How many pending attempts one read asks about (each costs a few points: the state is a small union). */
export const ATTEMPTS_PER_READ = 25;
/** Billing attempts by id (the poller's read of attempts still pending); one the platform does not have is null. */
export const BILLING_ATTEMPTS = `query SvcBillingAttempts($ids: [ID!]!) {
  nodes(ids: $ids) {
    ... on SubscriptionBillingAttempt { ${ATTEMPT_FIELDS} }
  }
}`;

export const WEBHOOK_SUBSCRIPTIONS = `query SvcWebhookSubscriptions($after: String) {
  webhookSubscriptions(first: 100, after: $after) {
    nodes { id topic uri }
    pageInfo { hasNextPage endCursor }
  }
}`;
export const SUBSCRIBE = `mutation SvcSubscribe($topic: WebhookSubscriptionTopic!, $uri: String!) {
  webhookSubscriptionCreate(topic: $topic, webhookSubscription: { uri: $uri, format: JSON }) {
    webhookSubscription { id topic uri }
    userErrors { field message }
  }
}`;

export const APP_SUBSCRIPTIONS = `query SvcAppSubscriptions {
  currentAppInstallation { activeSubscriptions { id name status test } }
}`;
/**
 * The cheapest question svc can ask with a shop's token (cost 1): answered, the app is installed on the shop; a 401
 * (and a refused refresh) says it is not. Confirms an uninstall before svc acts on one (uninstallConfirmation.ts).
 */
export const APP_INSTALLATION = `query SvcAppInstallation {
  currentAppInstallation { id }
}`;
export const CREATE_APP_SUBSCRIPTION = `mutation SvcCreateAppSubscription($name: String!, $returnUrl: URL!, $test: Boolean, $items: [AppSubscriptionLineItemInput!]!) {
  appSubscriptionCreate(name: $name, returnUrl: $returnUrl, test: $test, lineItems: $items) {
    appSubscription { id status }
    confirmationUrl
    userErrors { field message }
  }
}`;

/** One app subscription by id: the charge the merchant comes back from (`?charge_id=` on the return URL). */
export const APP_SUBSCRIPTION = `query SvcAppSubscription($id: ID!) {
  node(id: $id) { ... on AppSubscription { id name status } }
}`;

export const RUN_BULK_QUERY = `mutation SvcRunBulkQuery($query: String!) {
  bulkOperationRunQuery(query: $query) {
    bulkOperation { id status }
    userErrors { field message code }
  }
}`;
export const BULK_OPERATION = `query SvcBulkOperation($id: ID!) {
  bulkOperation(id: $id) { id status errorCode url objectCount rootObjectCount }
}`;
export const ALL_DOCUMENTS = {
  CONTRACT,
  CONTRACTS_BY_ID,
  CONTRACTS_PAGE,
  PAUSE,
  ACTIVATE,
  CANCEL,
  SET_NEXT_BILLING_DATE,
  SKIP_CYCLE,
  UNSKIP_CYCLE,
  BILLING_CYCLE,
  FAIL,
  CREATE_BILLING_ATTEMPT,
  BILLING_ATTEMPTS,
  WEBHOOK_SUBSCRIPTIONS,
  SUBSCRIBE,
  APP_SUBSCRIPTIONS,
  APP_INSTALLATION,
  CREATE_APP_SUBSCRIPTION,
  APP_SUBSCRIPTION,
  RUN_BULK_QUERY,
  BULK_OPERATION,
};
