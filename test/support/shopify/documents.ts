/**
 * GraphQL documents the stand-in's own tests send: each is valid against the real Admin schema (2026-10), so they
 * double as a reference for the exact argument names and payload shapes svc's platform adapter will use.
 */
export const CONTRACTS_PAGE = `query Contracts($first: Int!, $after: String, $query: String) {
  subscriptionContracts(first: $first, after: $after, query: $query) {
    edges { cursor node { id status updatedAt revisionId } }
    pageInfo { hasNextPage endCursor }
  }
}`;

export const CONTRACT = `query Contract($id: ID!) {
  subscriptionContract(id: $id) {
    id status nextBillingDate createdAt updatedAt revisionId currencyCode lastPaymentStatus
    customer { id defaultEmailAddress { emailAddress } }
    billingPolicy { interval intervalCount }
    deliveryPolicy { interval intervalCount }
    lines(first: 50) { nodes { title variantId quantity currentPrice { amount currencyCode } } }
  }
}`;

/** subscriptionContractPause / Activate / Cancel take `subscriptionContractId`; their userErrors have a `code`. */
export const statusMutation = (name: 'Pause' | 'Activate' | 'Cancel') => `mutation ${name}($id: ID!) {
  subscriptionContract${name}(subscriptionContractId: $id) {
    contract { id status updatedAt revisionId }
    userErrors { field message code }
  }
}`;

/** Note the argument names: `contractId` and `date` (not subscriptionContractId). */
export const SET_NEXT_BILLING_DATE = `mutation SetNextBillingDate($id: ID!, $date: DateTime!) {
  subscriptionContractSetNextBillingDate(contractId: $id, date: $date) {
    contract { id nextBillingDate updatedAt revisionId }
    userErrors { field message code }
  }
}`;

export const SKIP_CYCLE = `mutation Skip($input: SubscriptionBillingCycleInput!) {
  subscriptionBillingCycleSkip(billingCycleInput: $input) {
    billingCycle { cycleIndex skipped billingAttemptExpectedDate cycleEndAt }
    userErrors { field message code }
  }
}`;

/** 2026-10 takes `uri` (callbackUrl is deprecated) inside `webhookSubscription`. */
export const SUBSCRIBE = `mutation Subscribe($topic: WebhookSubscriptionTopic!, $uri: String!) {
  webhookSubscriptionCreate(topic: $topic, webhookSubscription: { uri: $uri, format: JSON }) {
    webhookSubscription { id topic uri }
    userErrors { field message }
  }
}`;

export const CREATE_APP_SUBSCRIPTION = `mutation CreateAppSubscription($name: String!, $returnUrl: URL!, $test: Boolean, $items: [AppSubscriptionLineItemInput!]!) {
  appSubscriptionCreate(name: $name, returnUrl: $returnUrl, test: $test, lineItems: $items) {
    appSubscription { id status }
    confirmationUrl
    userErrors { field message }
  }
}`;

export const ACTIVE_APP_SUBSCRIPTIONS = `query ActiveAppSubscriptions {
  currentAppInstallation {
    activeSubscriptions {
      id name status test
      lineItems { plan { pricingDetails { __typename ... on AppRecurringPricing { price { amount currencyCode } interval } } } }
    }
  }
}`;

export const RUN_BULK_QUERY = `mutation RunBulkQuery($query: String!) {
  bulkOperationRunQuery(query: $query) {
    bulkOperation { id status }
    userErrors { field message code }
  }
}`;

/** currentBulkOperation is deprecated in 2026-10: read the operation by id. */
export const BULK_OPERATION = `query BulkOperation($id: ID!) {
  bulkOperation(id: $id) { id status errorCode url objectCount rootObjectCount }
}`;
