import type { ContractRow, LineItem } from '../../db/schema.js';
import { ContractStatus } from '../../domain/contract.js';
import type { Interval } from '../../domain/time.js';
import { MIRRORED_LINES } from './documents.js';

/** A contract as the Admin API answers it (documents.ts CONTRACT_FIELDS). */
export type PlatformContract = {
  id: string;
  status: string;
  nextBillingDate: string | null;
  createdAt: string;
  updatedAt: string;
  revisionId: string;
  customer: { id: string; defaultEmailAddress: { emailAddress: string | null } | null } | null;
  billingPolicy: { interval: string; intervalCount: number };
  lines: { nodes: PlatformLine[] } | PlatformLine[];
};
type PlatformLine = { title: string; variantId: string | null; quantity: number; currentPrice: { amount: string; currencyCode: string } };

/** What the mirror takes from the platform: everything of a contract row but svc's own fields. */
export type MirrorFields = Pick<
  ContractRow,
  'id' | 'status' | 'customerId' | 'customerEmail' | 'billingInterval' | 'billingIntervalCount' | 'nextBillingDate' | 'lines' | 'createdAt'
> & { platformRevision: string; platformUpdatedAt: Date };

const CONTRACT_GID = /^gid:\/\/shopify\/SubscriptionContract\/(\d{1,19})$/;

/** The numeric id svc serves (PRODUCT §9: the last segment of the platform's gid), or null. */
export function contractIdOf(gid: string): string | null {
  return CONTRACT_GID.exec(gid)?.[1] ?? null;
}
export const contractGid = (id: string) => `gid://shopify/SubscriptionContract/${id}`;
/** The last segment of any gid (customers, variants). */
export const lastSegment = (gid: string | null | undefined) => (gid ? (gid.split('/').pop() ?? '') : '');

const INTERVALS = new Set(['DAY', 'WEEK', 'MONTH', 'YEAR']);

/** The platform's contract as mirror fields; null when it is not something svc can serve (an unknown status). */
export function mirrorFields(c: PlatformContract): MirrorFields | null {
  const id = contractIdOf(c.id);
  const status = ContractStatus.safeParse(c.status);
  if (!id || !status.success || !INTERVALS.has(c.billingPolicy.interval)) return null;
  const lines = (Array.isArray(c.lines) ? c.lines : c.lines.nodes).slice(0, MIRRORED_LINES).map(
    (l): LineItem => ({ title: l.title, variantId: lastSegment(l.variantId), quantity: l.quantity, price: { amount: l.currentPrice.amount, currencyCode: l.currentPrice.currencyCode } }),
  );
  return {
    id,
    status: status.data,
    customerId: lastSegment(c.customer?.id),
    customerEmail: c.customer?.defaultEmailAddress?.emailAddress ?? '',
    billingInterval: c.billingPolicy.interval as Interval,
    billingIntervalCount: c.billingPolicy.intervalCount,
    // A contract without a next billing date (an expired one) keeps its creation date there: the column is required.
    nextBillingDate: new Date(c.nextBillingDate ?? c.createdAt),
    lines,
    createdAt: new Date(c.createdAt),
    platformRevision: c.revisionId,
    platformUpdatedAt: new Date(c.updatedAt),
  };
}

/** True when `a` is a later revision than `b` (UnsignedInt64 strings; null: nothing known yet). */
export function isNewerRevision(a: string, b: string | null | undefined): boolean {
  if (b === null || b === undefined) return true;
  return BigInt(a) > BigInt(b);
}
