import type { z } from 'zod';
import type { ContractState, Discount } from '../../contract.js';
import { currencyDigits, exactAmount, type Money } from '../../money.js';

/**
 * One kind of contract edit (set_quantity, add_line …), defined once: its schema and a pure `apply` that answers the
 * contract after it and what changed (before/after), or throws EditRejected with the reason. The edit command
 * (edit.ts) applies a list of them in order, all or nothing; the platform port implements each (platform mode: a
 * draft mutation), and its switch over `op` does not compile without every one.
 */
export type EditOperationDefinition<Op extends string, Input> = {
  readonly op: Op;
  readonly input: z.ZodType<Input>;
  apply(contract: ContractState, input: Input, context: EditContext): Applied;
};

export type Applied = { contract: ContractState; change: Record<string, unknown> };

/** What a variant costs and is called, as the shop sells it. */
export type CatalogVariant = { title: string; price: Money };

/**
 * What edits look up, resolved by the service before deciding (decide stays pure): the shop's variants and discount
 * codes. `null` in platform mode, where the platform prices lines and applies codes itself (its draft); the edit then
 * checks what it can (lines, quantities, the last line) and the platform's answer is the contract.
 */
export type Catalog = {
  variant(id: string): CatalogVariant | undefined;
  /** The discount a code gives, without an id yet; undefined: no such code, or not applicable. */
  discount(code: string): Omit<Discount, 'id'> | undefined;
};

export type EditContext = { catalog: Catalog | null; newId(): string };

/** An operation that cannot apply: 422 invalid_edit, its details naming the operation's index and this reason. */
export class EditRejected extends Error {}

export const defineEditOperation = <const Op extends string, Input>(def: EditOperationDefinition<Op, Input>) => def;

/** A unit price a client gave, in the contract's currency exactly (EditRejected when it has more decimals). */
export function clientPrice(amount: string, currencyCode: string): string {
  const exact = exactAmount(amount, currencyCode);
  if (exact === null) throw new EditRejected(`the price "${amount}" has more decimals than ${currencyCode} has (${currencyDigits(currencyCode)})`);
  return exact;
}

/** The line with this id, or EditRejected. */
export function lineIndex(contract: ContractState, lineId: string): number {
  const i = contract.lines.findIndex((l) => l.id === lineId);
  if (i < 0) throw new EditRejected(`no line with id "${lineId.slice(0, 64)}" in this contract`);
  return i;
}
