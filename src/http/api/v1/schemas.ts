import { z } from 'zod';
import { ContractAction } from '../../../domain/actions.js';
import { EditBody, MAX_EDIT_OPERATIONS } from '../../../domain/commands/edit.js';
import { EditOperationSchema } from '../../../domain/commands/edits/index.js';
import { BILLING_STATUSES, ContractStatus } from '../../../domain/contract.js';
import { ContractFilter } from '../../../domain/contractFilter.js';
import { ContractId } from '../../../domain/contractId.js';
import { Cursor, PAGE_LIMIT_DESCRIPTION, PageLimitQuery } from '../../../domain/paging.js';
import { BillingAttempt, Contract, ContractEvent } from '../../../domain/resources.js';
import { ErrorEnvelope } from '../../errors.js';

/** Route schemas, built from the domain schemas so the OpenAPI document is the validator. */

export const ContractIdParams = z.strictObject({
  contract_id: ContractId.describe('The subscription contract id: 1 to 19 digits.'),
});

const PageQuery = {
  limit: PageLimitQuery.describe(PAGE_LIMIT_DESCRIPTION),
  cursor: Cursor.optional().describe('nextCursor from the previous page.'),
};

/** A query parameter that may repeat (`?status=ACTIVE&status=PAUSED`): one value or several, always a list. */
const repeated = <T extends z.ZodType>(item: T) => z.preprocess((v) => (typeof v === 'string' ? [v] : v), z.array(item).min(1).max(5));

/** The list's filter (domain/contractFilter.ts), as query parameters: the same fields a bulk job's selector takes. */
export const ListContractsQuery = z.strictObject({
  status: repeated(ContractStatus).optional().describe('Only contracts with this status; repeat it for several (status=ACTIVE&status=PAUSED).'),
  billingStatus: repeated(z.enum(BILLING_STATUSES))
    .optional()
    .describe(
      'Only contracts whose billing.status is this; repeat it for several. billingStatus=retrying&billingStatus=action_required ' +
        'lists every contract with payment trouble: in dunning, or FAILED with its cycle unpaid.',
    ),
  customerId: ContractFilter.shape.customerId,
  customerEmail: ContractFilter.shape.customerEmail,
  variantId: ContractFilter.shape.variantId,
  nextBillingDateFrom: ContractFilter.shape.nextBillingDateFrom,
  nextBillingDateTo: ContractFilter.shape.nextBillingDateTo,
  ...PageQuery,
});
export type ListContractsQuery = z.infer<typeof ListContractsQuery>;

export const ListEventsQuery = z.strictObject(PageQuery);

export const ContractActionBody = ContractAction;

/** The edit body as documented: each operation by its own schema (the service validates them one by one). */
export const ContractEditBody = EditBody.extend({ operations: z.array(EditOperationSchema).min(1).max(MAX_EDIT_OPERATIONS).describe(EditBody.shape.operations.description!) });
export const ContractEditResponse = z.object({ contract: Contract, preview: z.boolean().describe('true: nothing was changed; the contract is as it would be.') });

export const ContractResponse = z.object({ contract: Contract });
export const ContractActionResponse = z.object({
  contract: Contract,
  billingAttempt: BillingAttempt.optional().describe('bill_now only: the attempt as it stands (usually pending; its outcome arrives as an event).'),
});
export const ContractListResponse = z.object({ contracts: z.array(Contract), nextCursor: z.string().nullable() });
export const EventListResponse = z.object({ events: z.array(ContractEvent), nextCursor: z.string().nullable() });

const err = (description: string) => ErrorEnvelope.describe(description);

/** 403 on an operation that needs a permission (domain/operations.ts). */
const FORBIDDEN =
  'plan_required (the shop has no external API access: Enterprise plan), insufficient_scope (the key lacks the ' +
  'permission this operation needs: see x-svc-permissions; the message and details name it) or app_not_installed ' +
  '(platform mode: the shop uninstalled the app)';

/** The error responses of the one operation any key may call (GET /key): no permission, so no insufficient_scope. */
export const keyErrors = {
  400: err('invalid_request (bad input) or key_in_url (a key in the URL)'),
  401: err('unauthorized: missing, malformed, unknown or revoked API key'),
  403: err('plan_required (the shop has no external API access: Enterprise plan) or app_not_installed (platform mode: the shop uninstalled the app)'),
  429: err('rate_limited: too many requests; see Retry-After'),
  500: err('internal_error'),
  503: err('unavailable: the database cannot be reached'),
} as const;

/** The error responses the handler really returns, spread into every API route's schema. */
export const authErrors = {
  ...keyErrors,
  403: err(FORBIDDEN),
} as const;

export const readErrors = { ...authErrors, 404: err('not_found: no such contract in this shop') } as const;

export const actionErrors = {
  ...readErrors,
  400: err('invalid_request, unsupported_action or key_in_url'),
  408: err('request_timeout: the body did not arrive in full within REQUEST_BODY_TIMEOUT_MS; the connection is closed'),
  409: err(
    'invalid_state (the action is not allowed from the current status, here or on the platform), billing_in_progress (a billing attempt awaits its outcome), ' +
      'recently_billed (bill_now within 24 hours of a bill_now that succeeded, without "again": true) or idempotency_in_progress',
  ),
  413: err('payload_too_large: body over 16 KiB'),
  415: err('unsupported_media_type: the body must be application/json'),
  422: err('idempotency_key_reused (same Idempotency-Key, different request) or platform_rejected (platform mode: the platform refused the change; the message says why)'),
  503: err('unavailable (the database cannot be reached) or platform_unavailable (platform mode: the platform could not be reached, failed or throttled; nothing changed; see Retry-After)'),
} as const;

export const editErrors = {
  ...actionErrors,
  400: err('invalid_request (a malformed edit: an unknown op, a bad field; details name the operation) or key_in_url'),
  409: err('invalid_state (edits are allowed from ACTIVE and PAUSED), billing_in_progress or idempotency_in_progress'),
  422: err('invalid_edit (an operation cannot apply: details name its index and why), idempotency_key_reused or platform_rejected'),
} as const;

/** The error responses of a route that changes something other than a contract (webhook endpoints). */
export const changeErrors = {
  ...readErrors,
  408: err('request_timeout: the body did not arrive in full within REQUEST_BODY_TIMEOUT_MS; the connection is closed'),
  409: err('endpoint_limit_reached (10 endpoints already) or idempotency_in_progress'),
  415: err('unsupported_media_type: the body must be application/json'),
  422: err('idempotency_key_reused: same Idempotency-Key with a different request'),
} as const;
