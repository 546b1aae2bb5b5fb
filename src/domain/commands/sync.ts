import { need } from '../permissions.js';
import { z } from 'zod';
import { stateOf, type ContractState, type ContractStatus, type Line } from '../contract.js';
import { iso } from '../time.js';
import { defineCommand, type EventDraft } from './command.js';

/**
 * Platform sync: what the platform says a contract is now, as a change of the mirror (actor `platform`). The
 * platform owns everything of a contract but svc's own fields (pausedAt, resumeAt, the cancellation reason), so
 * those stay the mirror's; a contract paused on the platform is paused since then (and has no resumeAt), one resumed
 * there loses its resumeAt. A status change records the action's event (contract.paused, contract.resumed,
 * contract.cancelled) or contract.expired / contract.failed; a change of the next billing date, lines, policies,
 * address, discounts or customer records contract.updated naming what changed. `announce`: a contract svc has just
 * inserted from the platform, recorded as contract.created.
 */
export type PlatformState = Omit<ContractState, 'pausedAt' | 'resumeAt' | 'cancelledAt' | 'cancellationReason' | BillingField>;
/** Where billing stands is svc's own too: the platform's contract does not say. */
type BillingField = 'billingStatus' | 'billingFailedAttempts' | 'billingNextAttemptAt' | 'billingCycleDate' | 'billingLastAttempt';
export type SyncInput = { incoming: PlatformState; changedAt: Date; announce?: boolean };

const STATUS_EVENT: Record<ContractStatus, string> = {
  ACTIVE: 'contract.resumed',
  PAUSED: 'contract.paused',
  CANCELLED: 'contract.cancelled',
  EXPIRED: 'contract.expired',
  FAILED: 'contract.failed',
};

/** The mirrored fields a contract.updated names, compared as the platform holds them. */
const COMPARED: { name: string; same(a: ContractState, b: PlatformState): boolean }[] = [
  { name: 'nextBillingDate', same: (a, b) => a.nextBillingDate.getTime() === b.nextBillingDate.getTime() },
  { name: 'lines', same: (a, b) => sameLines(a.lines, b.lines) },
  { name: 'billingPolicy', same: (a, b) => a.billingInterval === b.billingInterval && a.billingIntervalCount === b.billingIntervalCount },
  { name: 'deliveryPolicy', same: (a, b) => a.deliveryInterval === b.deliveryInterval && a.deliveryIntervalCount === b.deliveryIntervalCount },
  { name: 'customer', same: (a, b) => a.customerId === b.customerId && a.customerEmail === b.customerEmail },
  { name: 'shippingAddress', same: (a, b) => sameJson(a.shippingAddress, b.shippingAddress) },
  { name: 'deliveryPrice', same: (a, b) => sameJson(a.deliveryPrice, b.deliveryPrice) },
  { name: 'discounts', same: (a, b) => sameJson(a.discounts, b.discounts) },
];

export const sync = defineCommand({
  name: 'sync',
  policy: { permission: need('contracts', 'write'), actors: ['platform'] },
  input: z.custom<SyncInput>(),
  allowedFrom: ['ACTIVE', 'PAUSED', 'CANCELLED', 'EXPIRED', 'FAILED'],
  allowedWhileBilling: true,
  events: ['contract.created', 'contract.updated', 'contract.paused', 'contract.resumed', 'contract.cancelled', 'contract.expired', 'contract.failed'],
  decide(current, { incoming, changedAt, announce }) {
    if (announce) return { contract: current, events: [{ type: 'contract.created', from: current.status, to: current.status, data: {} }] };
    const events: EventDraft[] = [];
    let state = current;
    if (incoming.status !== current.status) {
      const from = current.status;
      const to = incoming.status;
      const next: ContractState = { ...stateOf(state), status: to };
      if (to !== 'PAUSED') {
        next.pausedAt = null;
        next.resumeAt = null;
      } else if (from !== 'PAUSED') {
        next.pausedAt = changedAt;
        next.resumeAt = null;
      }
      if (to === 'CANCELLED') {
        next.cancelledAt = changedAt;
        next.cancellationReason = null;
      }
      state = next;
      const data: Record<string, unknown> = to === 'PAUSED' ? { resumeAt: null } : to === 'CANCELLED' ? { reason: null } : {};
      events.push({ type: STATUS_EVENT[to], from, to, data, after: state });
    }
    const changed = COMPARED.filter((c) => !c.same(current, incoming)).map((c) => c.name);
    // The platform's own fields as it has them, whatever changed: a line's new id with the same content, say.
    state = {
      ...incoming,
      pausedAt: state.pausedAt,
      resumeAt: state.resumeAt,
      cancelledAt: state.cancelledAt,
      cancellationReason: state.cancellationReason,
      status: state.status,
      billingStatus: state.billingStatus,
      billingFailedAttempts: state.billingFailedAttempts,
      billingNextAttemptAt: state.billingNextAttemptAt,
      billingCycleDate: state.billingCycleDate,
      billingLastAttempt: state.billingLastAttempt,
    };
    // With nothing else changed, the status event's contract is the platform's whole (a line's new id, say).
    if (events.length && !changed.length) events[0].after = state;
    if (changed.length) {
      const data: Record<string, unknown> = { changed };
      if (changed.includes('nextBillingDate')) {
        data.previousNextBillingDate = iso(current.nextBillingDate);
        data.nextBillingDate = iso(incoming.nextBillingDate);
      }
      events.push({ type: 'contract.updated', from: state.status, to: state.status, data, after: state });
    }
    return { contract: state, events };
  },
});

/** By content, field by field (jsonb keeps no key order; a line's id alone changing is not a change a merchant sees). */
function sameLines(a: Line[], b: Line[]): boolean {
  return (
    a.length === b.length &&
    a.every((l, i) => {
      const m = b[i];
      return l.title === m.title && l.variantId === m.variantId && l.quantity === m.quantity && l.price.amount === m.price.amount && l.price.currencyCode === m.price.currencyCode;
    })
  );
}

/** Deep equality of plain JSON values whatever their keys' order (jsonb does not keep it). */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return (a ?? null) === (b ?? null);
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a as object).filter((k) => (a as Record<string, unknown>)[k] !== undefined && (a as Record<string, unknown>)[k] !== null);
  const kb = Object.keys(b as object).filter((k) => (b as Record<string, unknown>)[k] !== undefined && (b as Record<string, unknown>)[k] !== null);
  return ka.length === kb.length && ka.every((k) => sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

/**
 * The mirror's one rule on the platform's history: a re-read is applied only when its revision is later than the
 * mirror's (UnsignedInt64 strings; null: nothing known yet). A late, repeated or out-of-order signal, and the echo
 * of svc's own change (whose revision the change recorded), change nothing.
 */
export function isNewerRevision(a: string, b: string | null | undefined): boolean {
  if (b === null || b === undefined) return true;
  return BigInt(a) > BigInt(b);
}
