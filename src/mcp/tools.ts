import { z } from 'zod';
import { ACTION_BODIES } from '../domain/actions.js';
import { ACTION_NAMES, type ActionName } from '../domain/commands/registry.js';
import { EditOperationSchema } from '../domain/commands/edits/index.js';
import { EditBody, MAX_EDIT_OPERATIONS } from '../domain/commands/edit.js';
import { ContractId as ContractIdRule } from '../domain/contractId.js';
import { PAGE_LIMIT, PageLimit } from '../domain/paging.js';
import { BillingAttempt, Contract, ContractEvent, Line, Money } from '../domain/resources.js';
import { ContractStatus } from '../domain/contract.js';
import { ATTEMPT_STATUSES } from '../domain/billing.js';
import { UtcTimestamp } from '../domain/time.js';
import { ListContractsQuery, ListEventsQuery } from '../http/api/v1/schemas.js';
import { actionNeeds, needsOf, type OperationName } from '../domain/operations.js';
import type { Permission } from '../domain/permissions.js';
import type { ContractListQuery, ContractOperations } from './operations.js';
import { ContractFilter } from '../domain/contractFilter.js';
import { BULK_JOB_STATUSES, BulkChange, BulkJobResource, BulkJobResultResource, Selector } from '../domain/bulkJobs.js';

/**
 * The MCP tools, independent of the SDK and of the transport: each names its input (with descriptions written for a
 * model), its structured output, truthful annotations, and what it does with a ContractOperations. The HTTP server
 * runs them on the services, the stdio server on the HTTP API. Field rules come from the same schemas the API uses.
 */

const ContractId = ContractIdRule.describe('The subscription contract id: a string of 1 to 19 digits, e.g. "4242" (the "id" field of a contract).');

const Limit = (what: string) =>
  PageLimit.optional().describe(`How many ${what} to return, ${PAGE_LIMIT.min} to ${PAGE_LIMIT.max} (default ${PAGE_LIMIT.default}).`);
const Cursor = ListContractsQuery.shape.cursor.describe(
  'Omit for the first page; to get the next page pass the nextCursor returned by the previous call.',
);

const ContractResult = z.object({ contract: Contract });
const ContractListResult = z.object({ contracts: z.array(Contract), nextCursor: z.string().nullable() });
const EventListResult = z.object({ events: z.array(ContractEvent), nextCursor: z.string().nullable() });
const BillNowResult = z.object({ contract: Contract, billingAttempt: BillingAttempt });
const AttemptListResult = z.object({ billingAttempts: z.array(BillingAttempt), nextCursor: z.string().nullable() });
const UpcomingResult = z.object({
  upcoming: z.array(z.object({ date: z.string(), skipped: z.boolean(), lines: z.array(Line), total: Money })),
});

type Annotations = {
  title: string;
  readOnlyHint: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint: boolean;
};

export type ToolDefinition = {
  name: string;
  title: string;
  description: string;
  input: z.ZodObject;
  output: z.ZodObject;
  annotations: Annotations;
  /** What calling it needs: its operation's permissions (domain/operations.ts). */
  needs: readonly Permission[];
  /** Its first step reads the one contract named by contractId (so that read may resolve the caller: services/runner.ts). */
  readsContractFirst: boolean;
  run(ops: ContractOperations, args: Record<string, unknown>): Promise<Record<string, unknown>>;
  /**
   * The result as JSON text, when the operations can give it so (the /mcp endpoint's, reading the stored JSON as the
   * API's GET does); null otherwise, and `run` is used.
   */
  runJson?(ops: ContractOperations, args: Record<string, unknown>): Promise<string | null>;
};

// Every tool acts only on the shop's own data in this service's database: openWorldHint is false throughout.
const read = (title: string): Annotations => ({ title, readOnlyHint: true, openWorldHint: false });
const write = (title: string, opts: { destructive: boolean; idempotent: boolean }): Annotations => ({
  title,
  readOnlyHint: false,
  destructiveHint: opts.destructive,
  idempotentHint: opts.idempotent,
  openWorldHint: false,
});

const id = (args: Record<string, unknown>) => args.contractId as string;

/** A tool's needs: those of the API operation it is. */
const op = (name: OperationName) => needsOf(name, undefined);

const TIMESTAMP_RULE =
  'an ISO 8601 timestamp in UTC ending in Z, e.g. "2027-01-05T00:00:00Z" (fractional seconds allowed; offsets like ' +
  '+02:00 and date-only values are refused), strictly in the future and at most 5 years ahead';

/**
 * How each action of the command registry is offered as a tool: its name, words for a model, the words for each of
 * its fields, and annotations that tell the truth. Typed by the registry: an action without a tool does not compile.
 */
const ACTION_TOOLS: { [N in ActionName]: { name: string; title: string; description: string; fields: Record<string, string>; annotations: Annotations } } = {
  pause: {
    name: 'pause_subscription_contract',
    title: 'Pause a subscription contract',
    description:
      'Pause an ACTIVE or PAUSED contract: no orders are placed while it is paused. With resumeAt it becomes ACTIVE ' +
      'by itself at that moment; without it, it stays paused until resumed. Pausing a paused contract replaces its ' +
      'resumeAt (and clears it when resumeAt is omitted). Returns the contract after the change.',
    fields: { resumeAt: `Optional. When the contract resumes by itself: ${TIMESTAMP_RULE}. Omit to pause until resumed.` },
    // Not idempotent: repeating the same pause leaves the state as it was but records another event
    // (contract.pause_updated) in the history a client can read.
    annotations: write('Pause a subscription contract', { destructive: false, idempotent: false }),
  },
  resume: {
    name: 'resume_subscription_contract',
    title: 'Resume a subscription contract',
    description:
      'Resume a PAUSED or FAILED contract now: it becomes ACTIVE and its scheduled resume is cleared. A FAILED contract ' +
      'whose payments failed (billing.status retrying or action_required) is billed for its unpaid cycle at once: tell ' +
      'the user the customer is charged now. Otherwise, if its next billing date has passed, it moves forward by whole ' +
      'billing intervals to the first one after now. Returns the contract after the change.',
    fields: {},
    // A second resume finds the contract ACTIVE and is refused (invalid_state): no further effect.
    annotations: write('Resume a subscription contract', { destructive: false, idempotent: true }),
  },
  cancel: {
    name: 'cancel_subscription_contract',
    title: 'Cancel a subscription contract',
    description:
      'Cancel an ACTIVE, PAUSED or FAILED contract. This is final: a cancelled contract can never be resumed and no ' +
      'further orders are placed. Confirm with the user before calling. Returns the contract after the change.',
    fields: { reason: 'Optional. Why the contract is cancelled, in plain words, up to 500 characters.' },
    // Final, so destructive; a second cancel is refused (invalid_state) and changes nothing.
    annotations: write('Cancel a subscription contract', { destructive: true, idempotent: true }),
  },
  skip: {
    name: 'skip_next_order',
    title: 'Skip the next order',
    description:
      'Skip the next order of an ACTIVE contract: its next billing date moves one billing interval forward. Each call ' +
      'skips one more order, so call it once per order to skip. Returns the contract after the change.',
    fields: {},
    // Not idempotent: every call moves the date one more interval.
    annotations: write('Skip the next order', { destructive: false, idempotent: false }),
  },
  reschedule: {
    name: 'reschedule_subscription_contract',
    title: 'Reschedule the next order',
    description:
      'Set the next billing date (when the next order is placed) of an ACTIVE or PAUSED contract. Returns the ' +
      'contract after the change.',
    fields: { nextBillingDate: `The new next billing date: ${TIMESTAMP_RULE}.` },
    // Not idempotent: the same date again leaves the state as it was but records another contract.rescheduled event.
    annotations: write('Reschedule the next order', { destructive: false, idempotent: false }),
  },
  bill_now: {
    name: 'bill_now',
    title: 'Bill a subscription contract now',
    description:
      'Bill an ACTIVE contract now for its current cycle (the customer is charged the contract\'s total and an order ' +
      'is made), instead of waiting for its next billing date; the schedule then restarts from now (the next billing ' +
      'date becomes now plus one billing interval). Returns the contract and the billing attempt as it stands, usually ' +
      'pending: its outcome comes later (list_billing_attempts). Refused with billing_in_progress while an attempt is ' +
      'pending, and with recently_billed within 24 hours of a bill_now that succeeded (the message says when): never ' +
      'retry with again: true unless the user asked to charge the customer a second time. Confirm with the user before ' +
      'calling: it charges the customer.',
    fields: {
      again:
        'Optional. true bills even though a bill_now of this contract succeeded less than 24 hours ago (the customer is ' +
        'charged again); only when the user explicitly asked for a second charge. Omit otherwise.',
    },
    // Charges the customer: not reversible by svc; every call bills again.
    annotations: write('Bill a subscription contract now', { destructive: true, idempotent: false }),
  },
};

/** The tool of one action: the contract id and the action's own fields, run as the API's action. */
function actionTool(action: ActionName): ToolDefinition {
  const t = ACTION_TOOLS[action];
  const { action: _a, ...fields } = ACTION_BODIES[action].shape as Record<string, z.ZodType>;
  const described = Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, v.describe(t.fields[k] ?? v.description ?? k)]));
  return {
    name: t.name,
    title: t.title,
    description: t.description,
    input: z.strictObject({ contractId: ContractId, ...described }),
    output: action === 'bill_now' ? BillNowResult : ContractResult,
    annotations: t.annotations,
    needs: actionNeeds({ action }),
    readsContractFirst: true,
    run: async (ops, args) => {
      const { contractId, ...rest } = args;
      const body = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined));
      const contract = await ops.actOnContract(contractId as string, { action, ...body });
      // bill_now's attempt is the contract's latest.
      return action === 'bill_now' ? { contract, billingAttempt: contract.billing.lastAttempt } : { contract };
    },
  };
}

const editTool: ToolDefinition = {
  name: 'edit_subscription_contract',
  title: 'Edit a subscription contract',
  description:
    'Change what an ACTIVE or PAUSED contract delivers and how often: set a line\'s quantity, swap a line\'s variant, ' +
    'add or remove a line, set the billing and delivery frequency, set the shipping address, apply a discount code or ' +
    'remove a discount. Operations apply in order, all or nothing; line and discount ids are those of the contract ' +
    '(get_subscription_contract). With preview: true nothing changes and the contract is returned exactly as it would ' +
    'be, with its totals: show it to the user before committing. Returns the contract and whether it was a preview.',
  input: z.strictObject({
    contractId: ContractId,
    operations: z.array(EditOperationSchema).min(1).max(MAX_EDIT_OPERATIONS).describe(EditBody.shape.operations.description!),
    preview: EditBody.shape.preview,
  }),
  output: z.object({ contract: Contract, preview: z.boolean() }),
  // Not idempotent (a quantity set twice records two events); destructive: a removed line or discount is gone.
  annotations: write('Edit a subscription contract', { destructive: true, idempotent: false }),
  needs: op('editSubscriptionContract'),
  readsContractFirst: true,
  run: (ops, args) => ops.editContract(args.contractId as string, { operations: args.operations, ...(args.preview !== undefined && { preview: args.preview }) }),
};

/** How long preview_bulk_change waits for its preview to be decided, and how often it looks. */
const PREVIEW_WAIT_MS = 20_000;
const PREVIEW_POLL_MS = 250;
const BulkJobId = z.string().max(36).describe('The bulk job id (the "id" of a bulk job).');
const BulkJobResult = z.object({ bulkJob: BulkJobResource });

const bulkTools: ToolDefinition[] = [
  {
    name: 'preview_bulk_change',
    title: 'Preview a change across many contracts',
    description:
      'Preview one change across many contracts of the shop (up to 100,000): an action (pause, resume, cancel, skip, ' +
      'reschedule; not bill_now) or edit operations whose lines are named by variant (set_quantity, swap_variant with ' +
      'fromVariantId, set_price, remove_variant, add_line, set_frequency, set_shipping_address, apply_discount_code). ' +
      'Nothing changes: every contract is decided and the answer gives the counts (would succeed, failed, skipped), the ' +
      'next order totals before and after per currency, and the first problems. Waits up to 20 s for the preview; if it ' +
      'is still previewing, call get_bulk_job later. Show the preview to the user; only start_bulk_job changes anything.',
    input: z.strictObject({
      selector: Selector.describe('Which contracts: { "contractIds": [...] } or { "filter": { status, billingStatus, customerId, customerEmail, variantId, nextBillingDateFrom, nextBillingDateTo } } ({} is every contract).'),
      change: BulkChange.describe('The change: an action body such as { "action": "pause", "resumeAt": "…" }, or { "operations": [ … ] } naming lines by variantId.'),
    }),
    output: z.object({
      bulkJob: BulkJobResource,
      problems: z.array(BulkJobResultResource).describe('The first contracts that would fail or be skipped, with why.'),
    }),
    // It changes nothing but makes a preview job (which expires by itself): not read-only in the protocol's sense.
    annotations: write('Preview a change across many contracts', { destructive: false, idempotent: false }),
    // Every change a job can make writes contracts (a job never bills): what making one needs, whatever the change.
    needs: op('createBulkJob'),
    readsContractFirst: false,
    run: async (ops, args) => {
      let job = await ops.createBulkPreview({ selector: args.selector, change: args.change });
      const until = Date.now() + PREVIEW_WAIT_MS;
      while (job.status === 'previewing' && Date.now() < until) {
        await new Promise((r) => setTimeout(r, PREVIEW_POLL_MS));
        job = await ops.getBulkJob(job.id);
      }
      const failed = (await ops.listBulkJobResults(job.id, { status: 'failed', limit: 10 })).results;
      const skipped = failed.length < 10 ? (await ops.listBulkJobResults(job.id, { status: 'skipped', limit: 10 - failed.length })).results : [];
      return { bulkJob: job, problems: [...failed, ...skipped] };
    },
  },
  {
    name: 'start_bulk_job',
    title: 'Start a previewed bulk job',
    description:
      'Run a previewed bulk job (status previewed): the same change on the same contracts, each decided again at its turn. ' +
      'This changes the contracts; confirm with the user after showing the preview. Returns the job (queued; follow it with get_bulk_job).',
    input: z.strictObject({ jobId: BulkJobId }),
    output: BulkJobResult,
    annotations: write('Start a previewed bulk job', { destructive: true, idempotent: false }),
    needs: op('startBulkJob'),
    readsContractFirst: false,
    run: async (ops, args) => ({ bulkJob: await ops.startBulkJob(args.jobId as string) }),
  },
  {
    name: 'get_bulk_job',
    title: 'Get a bulk job',
    description: 'A bulk job: its status, counts (pending, succeeded, failed, skipped: they add up to matched) and totals before and after.',
    input: z.strictObject({ jobId: BulkJobId }),
    output: BulkJobResult,
    annotations: read('Get a bulk job'),
    needs: op('getBulkJob'),
    readsContractFirst: false,
    run: async (ops, args) => ({ bulkJob: await ops.getBulkJob(args.jobId as string) }),
  },
  {
    name: 'list_bulk_jobs',
    title: 'List bulk jobs',
    description: 'The shop\'s bulk jobs, newest first, optionally of one status. Paged: pass nextCursor back as cursor.',
    input: z.strictObject({ status: z.enum(BULK_JOB_STATUSES).optional().describe('Only jobs with this status.'), limit: Limit('jobs'), cursor: Cursor }),
    output: z.object({ bulkJobs: z.array(BulkJobResource), nextCursor: z.string().nullable() }),
    annotations: read('List bulk jobs'),
    needs: op('listBulkJobs'),
    readsContractFirst: false,
    run: (ops, args) => ops.listBulkJobs(args as { status?: string; limit?: number; cursor?: string }),
  },
];

export const TOOLS: readonly ToolDefinition[] = [
  {
    name: 'get_subscription_contract',
    title: 'Get a subscription contract',
    description:
      'Get one subscription contract of the shop: status (ACTIVE, PAUSED, CANCELLED, EXPIRED, FAILED), customer, ' +
      'billing interval, next billing date, order lines, and pause, scheduled-resume and cancellation details.',
    input: z.strictObject({ contractId: ContractId }),
    output: ContractResult,
    annotations: read('Get a subscription contract'),
    needs: op('getSubscriptionContract'),
    readsContractFirst: true,
    run: async (ops, args) => ({ contract: await ops.getContract(id(args)) }),
    runJson: async (ops, args) => (ops.getContractJson ? `{"contract":${await ops.getContractJson(id(args))}}` : null),
  },
  {
    name: 'list_subscription_contracts',
    title: 'List subscription contracts',
    description:
      'List the shop\'s subscription contracts in id order, optionally only those a filter matches (statuses, payment ' +
      'trouble, one customer by id or email, a variant, a window of next billing dates; the filters AND together, as a ' +
      'bulk job\'s). Returns a page of contracts and nextCursor: pass it back as cursor for the next page; it is null ' +
      'on the last page.',
    input: z.strictObject({
      status: z
        .union([ContractStatus, z.array(ContractStatus).min(1).max(5)])
        .optional()
        .describe('Only contracts with this status, or one of these statuses; omit for all.'),
      billingStatus: ContractFilter.shape.billingStatus,
      customerId: ContractFilter.shape.customerId,
      customerEmail: ContractFilter.shape.customerEmail,
      variantId: ContractFilter.shape.variantId,
      nextBillingDateFrom: ContractFilter.shape.nextBillingDateFrom,
      nextBillingDateTo: ContractFilter.shape.nextBillingDateTo,
      limit: Limit('contracts'),
      cursor: Cursor,
    }),
    output: ContractListResult,
    annotations: read('List subscription contracts'),
    needs: op('listSubscriptionContracts'),
    readsContractFirst: false,
    run: (ops, args) => ops.listContracts(args as ContractListQuery),
  },
  ...ACTION_NAMES.map(actionTool),
  editTool,
  {
    name: 'list_billing_attempts',
    title: 'List billing attempts',
    description:
      'Billing attempts (renewal charges), newest first: of one contract when contractId is given, else of the whole ' +
      'shop, optionally only one status (pending, succeeded, failed, action_required) or those created since a moment. ' +
      'Each has its cycle date, attempt number, trigger (schedule, retry, bill_now), status and outcome: the order ' +
      '(id, name, amount) on success, the error code and message on failure, a URL where the customer authenticates ' +
      'when action is required. Paged: pass nextCursor back as cursor.',
    input: z.strictObject({
      contractId: ContractId.optional().describe('Only this contract\'s attempts (a string of 1 to 19 digits); omit for the whole shop.'),
      status: z.enum(ATTEMPT_STATUSES).optional().describe('Only attempts with this status (ignored with contractId).'),
      since: UtcTimestamp.optional().describe('Only attempts created at or after this moment, e.g. "2026-11-01T00:00:00Z" (ignored with contractId).'),
      limit: Limit('attempts'),
      cursor: Cursor,
    }),
    output: AttemptListResult,
    annotations: read('List billing attempts'),
    needs: op('listBillingAttempts'),
    readsContractFirst: false,
    run: (ops, args) => ops.listBillingAttempts(args as Parameters<typeof ops.listBillingAttempts>[0]),
  },
  {
    name: 'get_upcoming_renewals',
    title: 'Get upcoming renewals',
    description:
      'The next renewals of one contract as they will be billed: each one\'s date, lines and total. Takes a pause with ' +
      'a resume date into account; none for a cancelled, expired or failed contract, or one paused until resumed.',
    input: z.strictObject({ contractId: ContractId, count: z.number().int().min(1).max(24).optional().describe('How many renewals, 1 to 24 (default 6).') }),
    output: UpcomingResult,
    annotations: read('Get upcoming renewals'),
    needs: op('getUpcomingRenewals'),
    readsContractFirst: true,
    run: (ops, args) => ops.getUpcomingRenewals(id(args), args.count as number | undefined),
  },
  {
    name: 'list_contract_events',
    title: 'List a contract\'s history',
    description:
      'The history of one contract, newest first: each event has its type (contract.paused, contract.resumed, ' +
      'contract.cancelled, contract.skipped, contract.rescheduled, contract.pause_updated), when it happened, who did ' +
      'it (actor type api_key, mcp, admin or scheduler, with the API key fingerprint when a key was used), and the ' +
      'status before and after.',
    input: z.strictObject({ contractId: ContractId, limit: Limit('events'), cursor: ListEventsQuery.shape.cursor.describe(Cursor.description!) }),
    output: EventListResult,
    annotations: read('List a contract\'s history'),
    needs: op('listContractEvents'),
    readsContractFirst: true,
    run: (ops, args) => ops.listContractEvents(id(args), args as { limit?: number; cursor?: string }),
  },
  ...bulkTools,
];
