import type { StandInBilling } from './billing.js';
import type { BillingCycle } from './cycles.js';
import type { AppSubscription, AppSubscriptionStatus, BulkOperation, Contract, Shop, Store } from './store.js';
import type { ViewContext } from './views.js';

/** A userError a test asked the next matching mutation to answer with (nothing changes on the platform). */
export type InjectedUserError = { mutation: string; message: string; code?: string | null; field?: string[] | null };

/** What resolvers may ask of the stand-in around them: its settings and the side effects of a change. */
export type ResolverHooks = {
  appKey: string;
  scopes: string;
  apiVersion: string;
  /** Whether subscriptionContractSetNextBillingDate sends subscription_contracts/update (the platform may send none). */
  webhookOnSetNextBillingDate: boolean;
  contractEvent(shop: Shop, topic: string, contract: Contract): void;
  cycleEvent(shop: Shop, topic: string, cycle: BillingCycle): void;
  /** The merchant's confirmation page for a new app subscription. */
  confirmationUrl(shop: Shop, subscription: AppSubscription): string;
  /** Moves an app subscription to a status and sends app_subscriptions/update. */
  setAppSubscriptionStatus(shop: Shop, subscription: AppSubscription, status: AppSubscriptionStatus): void;
  startBulk(shop: Shop, operation: BulkOperation): void;
  takeUserError(shop: Shop, mutation: string): InjectedUserError | undefined;
  /** Billing attempts (billing.ts). */
  billing: StandInBilling;
};

/** A root field the document selected, with its arguments as coerced by the schema. */
export type RootCall = { field: string; args: Record<string, unknown> };

export type ResolverContext = ViewContext & { store: Store; shop: Shop; hooks: ResolverHooks; calls: RootCall[] };
