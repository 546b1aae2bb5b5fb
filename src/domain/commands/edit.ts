import { need } from '../permissions.js';
import { z } from 'zod';
import { totalsOf, type ContractState } from '../contract.js';
import type { ErrorDetail } from '../errors.js';
import { invalidInput, issuesToDetails, parseInput, ServiceError } from '../errors.js';
import { currencyDigits, fromUnits, maxAmountUnits, toUnits } from '../money.js';
import { defineCommand, SHOP_ACTORS } from './command.js';
import { futureTimestamps } from './dates.js';
import { EDIT_OPERATION_NAMES, editOperationNamed, type EditOperation, type EditOperations } from './edits/index.js';
import { EditRejected, type Catalog, type EditContext } from './edits/operation.js';

/** At most this many operations in one edit. */
export const MAX_EDIT_OPERATIONS = 20;

export const EditBody = z
  .strictObject({
    operations: z
      .array(z.looseObject({ op: z.string() }))
      .min(1)
      .max(MAX_EDIT_OPERATIONS)
      .describe(`What to change, applied in order, all or nothing (1 to ${MAX_EDIT_OPERATIONS} operations).`),
    preview: z.boolean().optional().describe('true: answer the contract exactly as it would be, and change nothing anywhere.'),
  })
  .meta({ id: 'ContractEdit' });

/**
 * The edit as decide takes it: the operations (each validated by its own schema, see parseEdit), whether it is a
 * preview, and what the service resolved for it (the shop's catalog; null in platform mode) with fresh ids for the
 * lines and discounts it adds.
 */
export type EditInput = { operations: EditOperation[]; preview?: boolean; catalog: Catalog | null; newIds: string[] };

/** Each operation by its own schema: unknown `op` or bad fields are 400 invalid_request naming the operation. */
export function parseOperations(raw: { op: string }[]): EditOperation[] {
  const details: ErrorDetail[] = [];
  const out: EditOperation[] = [];
  raw.forEach((o, i) => {
    const def = editOperationNamed(o.op);
    if (!def) {
      details.push({ path: `operations.${i}.op`, message: `unknown operation "${String(o.op).slice(0, 40)}"; one of ${EDIT_OPERATION_NAMES.join(', ')}` });
      return;
    }
    const parsed = def.input.safeParse(o);
    if (!parsed.success) details.push(...issuesToDetails(parsed.error.issues, ['operations', i]));
    else out.push(parsed.data as EditOperation);
  });
  if (details.length) throw invalidInput(details);
  return out;
}

export const edit = defineCommand({
  name: 'edit',
  policy: { permission: need('contracts', 'write'), actors: SHOP_ACTORS, needs: ['catalog'] },
  input: z.custom<EditInput>(),
  fromClient(raw) {
    const body = parseInput(EditBody, raw);
    // The catalog and the new lines' ids are the runner's to fill in (the policy's needs).
    return { operations: parseOperations(body.operations), preview: body.preview === true, catalog: null, newIds: [] };
  },
  allowedFrom: ['ACTIVE', 'PAUSED'],
  events: ['contract.updated'],
  check: (input, now) =>
    input.operations.flatMap((o, i) => (o.op === 'set_frequency' ? futureTimestamps(o, ['nextBillingDate'], now).map((d) => ({ ...d, path: `operations.${i}.${d.path}` })) : [])),
  decide(contract, input) {
    const ids = input.newIds.slice();
    const context: EditContext = { catalog: input.catalog, newId: () => ids.shift() ?? `new-${ids.length}` };
    let state: ContractState = contract;
    const changes: Record<string, unknown>[] = [];
    const details: ErrorDetail[] = [];
    input.operations.forEach((operation, i) => {
      try {
        const apply = editOperationNamed(operation.op)!.apply as (c: ContractState, o: EditOperation, x: EditContext) => ReturnType<EditOperations['set_quantity']['apply']>;
        const applied = apply(state, operation, context);
        assertBillable(state, applied.contract);
        state = applied.contract;
        changes.push(applied.change);
      } catch (err) {
        if (!(err instanceof EditRejected)) throw err;
        details.push({ path: `operations.${i}`, message: err.message });
      }
    });
    if (details.length) throw editRejected(details);
    state = { ...state, totals: totalsOf(state) };
    return { contract: state, events: [{ type: 'contract.updated', from: contract.status, to: state.status, data: { changes } }] };
  },
});

/**
 * An order svc would bill: its subtotal (what its lines come to) within the amounts svc documents and answers, at
 * most 13 integer digits (DecimalAmount). A contract past it could be neither shown nor billed as the API describes
 * amounts, so the operation that would make one is refused rather than its total rounded or cut. (One that only
 * lowers an amount already past it, of a contract made before this rule or on the platform, is let through.)
 */
function assertBillable(before: ContractState, contract: ContractState): void {
  const was = totalsOf(before);
  const { subtotal, total, currencyCode } = totalsOf(contract);
  const scale = currencyDigits(currencyCode);
  const max = maxAmountUnits(scale);
  for (const [name, amount, previous] of [['subtotal', subtotal, was.subtotal], ['total', total, was.total]] as const) {
    const units = toUnits(amount, scale);
    if (units > max && units > toUnits(previous, scale)) {
      throw new EditRejected(`the contract's ${name} would be ${amount} ${currencyCode}, more than the largest amount an order can have (${fromUnits(max, scale)} ${currencyCode})`);
    }
  }
}

/** 422 invalid_edit naming each operation that cannot apply and why. */
export function editRejected(details: ErrorDetail[]): ServiceError {
  const first = details[0];
  const more = details.length > 1 ? ` (and ${details.length - 1} more)` : '';
  return new ServiceError('invalid_edit', `The edit cannot apply: ${first.path} ${first.message}${more}. Nothing was changed.`, { details });
}
