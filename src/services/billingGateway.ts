import type { ContractRow } from '../db/schema.js';

/**
 * Where svc hands a billing attempt to be charged: the built-in test gateway in standalone mode
 * (services/testGateway.ts), the platform's billing attempts in platform mode. svc has already committed the attempt
 * (pending) when it calls; the outcome arrives later, asynchronously, through recordBillingOutcome, whichever source
 * tells it (the gateway's own callback, the platform's webhooks, a poll).
 */
export interface BillingGateway {
  /**
   * Starts charging one attempt. Idempotent on `idempotencyKey`: a second call with the same key (a retry after a
   * crash between the call and recording its answer) starts nothing new and answers the same reference. Throws when
   * the attempt could not be handed over; svc then tries again later with the same key.
   */
  createAttempt(req: BillingAttemptRequest): Promise<{ reference: string | null }>;
  /**
   * How long after a hand-over its outcome may still come; past that, the worker hands the attempt over again (same
   * key). Unset: ten minutes, as for the platform, which may take that long to settle an attempt.
   */
  readonly outcomeWithinMs?: number;
}

export type BillingAttemptRequest = {
  shopId: string;
  /** The contract as it was when the attempt was created. */
  contract: ContractRow;
  attemptId: string;
  /** The cycle billed, named by the next billing date it was due at. */
  cycleDate: Date;
  attemptNumber: number;
  idempotencyKey: string;
  /** Exact, as a decimal string in the currency's minor unit ("24.00"). */
  amount: string;
  currencyCode: string;
};
