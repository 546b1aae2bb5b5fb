import createClient, { type Client } from 'openapi-fetch';
import { apiError, SvcConnectionError } from './errors.js';
import { retryingFetch, type RetryOptions } from './retry.js';
import type { components, operations, paths } from './schema.js';

export type SubscriptionContract = components['schemas']['SubscriptionContract'];
export type ContractEvent = components['schemas']['ContractEvent'];
export type ContractStatus = SubscriptionContract['status'];
/** The body of an action: `{ action: 'pause', resumeAt? }`, `{ action: 'cancel', reason? }`… */
export type ContractAction = operations['actOnSubscriptionContract']['requestBody']['content']['application/json'];
export type ContractEdit = operations['editSubscriptionContract']['requestBody']['content']['application/json'];
export type EditOperation = ContractEdit['operations'][number];
export type EditResult = { contract: SubscriptionContract; preview: boolean };
export type ListContractsQuery = NonNullable<operations['listSubscriptionContracts']['parameters']['query']>;
export type ListEventsQuery = NonNullable<operations['listContractEvents']['parameters']['query']>;
export type ContractPage = { contracts: SubscriptionContract[]; nextCursor: string | null };
export type EventPage = { events: ContractEvent[]; nextCursor: string | null };
/** The calling key: id, name, fingerprint, permissions (and the preset they equal, or custom), shop. */
export type CurrentKey = components['schemas']['CurrentKey'];
export type Permissions = components['schemas']['Permissions'];

/** Per action call: the Idempotency-Key to send (default: a new UUID for this call, reused by its retries). */
export type ActionOptions = { idempotencyKey?: string };

type ActionFields<A extends ContractAction['action']> = Omit<Extract<ContractAction, { action: A }>, 'action'>;

export type SvcClientOptions = {
  /** Where svc runs, e.g. `https://svc.example.com` (the API is under `/api/v1`). */
  baseUrl: string;
  /** An API key (`svc_live_…`), from a server-side secret store: never in a browser or in source control. */
  apiKey: string;
  /** A fetch to use instead of the global one (a proxy agent, instrumentation, tests). */
  fetch?: typeof fetch;
  /** Retries on no answer, 503 and 409 idempotency_in_progress: a count (default 3, 0 for none) or the details. */
  retries?: number | RetryOptions;
};

export type SvcClient = ReturnType<typeof createSvcClient>;

/**
 * A typed client of the svc API. Methods return the resource or throw: `SvcApiError` when the API refused
 * (its envelope: status, code, message, requestId, details), `SvcConnectionError` when no answer came after the
 * retries. `api` is the underlying openapi-fetch client, typed by the OpenAPI document, for anything else.
 */
export function createSvcClient(options: SvcClientOptions) {
  const retry = typeof options.retries === 'number' ? { retries: options.retries } : options.retries;
  const baseFetch = options.fetch ?? globalThis.fetch;
  const api: Client<paths> = createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: { authorization: `Bearer ${options.apiKey}`, accept: 'application/json' },
    fetch: retryingFetch((request, init) => baseFetch(request, init), retry),
  });

  /** Runs one call: its data, or the error it amounts to. */
  async function call<T>(send: () => Promise<{ data?: T; error?: unknown; response: Response }>, idempotencyKey?: string): Promise<T> {
    let result;
    try {
      result = await send();
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      const why = cause?.code ?? cause?.message ?? (err as Error).message;
      throw new SvcConnectionError(`No answer from svc at ${options.baseUrl} (${why}).`, { cause: err, idempotencyKey });
    }
    if (result.error !== undefined || !result.response.ok) throw apiError(result.response, result.error, idempotencyKey);
    return result.data as T;
  }

  const act = (contractId: string, body: ContractAction, opts: ActionOptions = {}): Promise<SubscriptionContract> => {
    const idempotencyKey = opts.idempotencyKey ?? crypto.randomUUID();
    return call(
      () =>
        api.POST('/api/v1/subscription-contracts/{contract_id}/actions', {
          params: { path: { contract_id: contractId }, header: { 'idempotency-key': idempotencyKey } },
          body,
        }),
      idempotencyKey,
    ).then((r) => r.contract);
  };

  return {
    api,
    /** What the key is and what it may do (any key may ask): a cheap check that the key works. */
    getCurrentKey: async (): Promise<CurrentKey> => (await call(() => api.GET('/api/v1/key'))).key,
    /** A page of the shop's contracts, in id order (`status`, `limit` 1–100, `cursor` = the previous `nextCursor`). */
    listSubscriptionContracts: (query: ListContractsQuery = {}): Promise<ContractPage> =>
      call(() => api.GET('/api/v1/subscription-contracts', { params: { query } })),
    /** One contract. */
    getSubscriptionContract: async (contractId: string): Promise<SubscriptionContract> =>
      (await call(() => api.GET('/api/v1/subscription-contracts/{contract_id}', { params: { path: { contract_id: contractId } } }))).contract,
    /** A page of a contract's events, newest first. */
    listContractEvents: (contractId: string, query: ListEventsQuery = {}): Promise<EventPage> =>
      call(() => api.GET('/api/v1/subscription-contracts/{contract_id}/events', { params: { path: { contract_id: contractId }, query } })),
    /** Any action, by its body; returns the contract after it. */
    actOnSubscriptionContract: act,
    /** Pause; with `resumeAt` (ISO 8601 UTC) it resumes by itself then. */
    pause: (contractId: string, fields: ActionFields<'pause'> = {}, opts?: ActionOptions) => act(contractId, { action: 'pause', ...fields }, opts),
    resume: (contractId: string, opts?: ActionOptions) => act(contractId, { action: 'resume' }, opts),
    /** Cancel, final; `reason` up to 500 characters. */
    cancel: (contractId: string, fields: ActionFields<'cancel'> = {}, opts?: ActionOptions) => act(contractId, { action: 'cancel', ...fields }, opts),
    /** Skip the next order: the next billing date moves one interval forward. */
    skip: (contractId: string, opts?: ActionOptions) => act(contractId, { action: 'skip' }, opts),
    reschedule: (contractId: string, fields: ActionFields<'reschedule'>, opts?: ActionOptions) =>
      act(contractId, { action: 'reschedule', ...fields }, opts),
    /**
     * Edits (lines, frequency, address, discounts), applied in order, all or nothing. With `preview: true` the contract
     * comes back as it would be, totals included, and nothing changes.
     */
    editSubscriptionContract: (contractId: string, edit: ContractEdit, opts: ActionOptions = {}): Promise<EditResult> => {
      const idempotencyKey = opts.idempotencyKey ?? crypto.randomUUID();
      return call<EditResult>(
        () =>
          api.POST('/api/v1/subscription-contracts/{contract_id}/edits', {
            params: { path: { contract_id: contractId }, header: { 'idempotency-key': idempotencyKey } },
            body: edit,
          }) as Promise<{ data?: EditResult; error?: unknown; response: Response }>,
        idempotencyKey,
      );
    },
  };
}
