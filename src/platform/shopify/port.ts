import { eq } from 'drizzle-orm';
import { shops } from '../../db/schema.js';
import type { Decision } from '../../domain/commands/command.js';
import { unreachable } from '../../domain/unreachable.js';
import { ServiceError } from '../../domain/errors.js';
import { iso } from '../../domain/time.js';
import type { Database } from '../../db/client.js';
import type { Executed, Execution, PlatformPort } from '../../services/platform.js';
import { TokenNeeded, type ShopifyAdmin, type ShopRef } from './admin.js';
import { contractGid, mirrorFields, type PlatformContract } from './contracts.js';
import { ShopifyEdits } from './edits.js';
import * as doc from './documents.js';

type UserError = { field: string[] | null; message: string; code: string | null };
type ContractAnswer = PlatformContract;
type MutationAnswer = { contract: ContractAnswer | null; userErrors: UserError[] };

const STATUS_MUTATIONS = {
  PAUSED: { document: doc.PAUSE, field: 'subscriptionContractPause', verb: 'pause' },
  ACTIVE: { document: doc.ACTIVATE, field: 'subscriptionContractActivate', verb: 'resume' },
  CANCELLED: { document: doc.CANCEL, field: 'subscriptionContractCancel', verb: 'cancel' },
  FAILED: { document: doc.FAIL, field: 'subscriptionContractFail', verb: 'fail' },
} as const;

/** A shop's domain by id (fixed for a shop's life, so kept once read). */
export class ShopDirectory {
  private readonly domains = new Map<string, string>();
  constructor(private readonly db: Database) {}
  /** Without the database: only what `get` already read (inside a transaction). */
  known(shopId: string): ShopRef | null {
    const domain = this.domains.get(shopId);
    return domain ? { id: shopId, domain } : null;
  }
  async get(shopId: string): Promise<ShopRef> {
    let domain = this.domains.get(shopId);
    if (!domain) {
      const [row] = await this.db.orm.select({ domain: shops.domain }).from(shops).where(eq(shops.id, shopId));
      if (!row) throw new ServiceError('not_found', 'Shop not found.');
      domain = row.domain;
      this.domains.set(shopId, domain);
    }
    return { id: shopId, domain };
  }
}

/**
 * Platform mode's port (docs/product.md, "Platform mode"): each planned step is made true on the platform before svc
 * commits it, the contract leased meanwhile (callsOut). pause → subscriptionContractPause, resume →
 * subscriptionContractActivate, cancel → subscriptionContractCancel (the reason is svc's), skip →
 * subscriptionBillingCycleSkip of the cycle of the current next billing date, then the next billing date moves to the
 * following cycle's, reschedule → subscriptionContractSetNextBillingDate. resumeAt is svc's own: a pause that only
 * changes it calls nothing.
 */
export class ShopifyPlatform implements PlatformPort {
  readonly name = 'shopify' as const;
  readonly callsOut = true;

  private readonly edits: ShopifyEdits;

  constructor(
    readonly admin: ShopifyAdmin,
    readonly shops: ShopDirectory,
  ) {
    this.edits = new ShopifyEdits(admin);
  }

  /** The shop's domain and a fresh access token in memory, before the change; a refused token is refreshed. */
  async prepare(shopId: string, failure?: unknown): Promise<{ retry: boolean }> {
    const shop = await this.shops.get(shopId);
    if (failure === undefined) {
      await this.admin.accessToken(shop.id);
      return { retry: false };
    }
    if (!(failure instanceof TokenNeeded)) return { retry: false };
    await this.admin.accessToken(shop.id, { stale: failure.stale });
    return { retry: true };
  }

  async execute({ shopId, contract, before, step, preview }: Execution): Promise<Executed> {
    // No database here (prepare loaded the shop and the token).
    const shop = this.shops.known(shopId);
    if (!shop) throw new TokenNeeded();
    const gid = contractGid(contract.id);
    const { command, decision } = step;
    const answered = (answer: ContractAnswer, d: Decision = decision): Executed => {
      const f = mirrorFields(answer);
      return f ? { decision: d, platform: { state: f.state, mark: f.mark } } : { decision: d };
    };
    switch (command.name) {
      case 'pause':
        // Pausing a paused contract changes only resumeAt, which is svc's own: nothing to ask the platform.
        if (before.status === 'PAUSED') return { decision };
        return answered(await this.setStatus(shop, gid, 'PAUSED'));
      case 'cancel':
        return answered(await this.setStatus(shop, gid, 'CANCELLED'));
      case 'resume': {
        let answer = await this.setStatus(shop, gid, 'ACTIVE');
        // svc moves a past next billing date to the first one after now; the platform's date is the app's to set.
        const next = decision.contract.nextBillingDate;
        if (next.getTime() !== before.nextBillingDate.getTime()) answer = await this.setNextBillingDate(shop, gid, next);
        return answered(answer);
      }
      case 'skip': {
        const skipped = await this.skipCycle(shop, gid, before.nextBillingDate);
        try {
          const following = await this.cycleDate(shop, gid, skipped + 1);
          const answer = await this.setNextBillingDate(shop, gid, following);
          return answered(answer, withNextBillingDate(decision, following));
        } catch (err) {
          // The cycle is skipped on the platform but the skip could not be finished: undone, so that the answer
          // (nothing changed) is true and a retry starts from where it did. A skip leaves no new revision for the
          // inbox or reconciliation to notice, so nothing else would ever put the two back in step.
          await this.unskipCycle(shop, gid, skipped).catch(() => {});
          throw err;
        }
      }
      case 'reschedule':
        return answered(await this.setNextBillingDate(shop, gid, decision.contract.nextBillingDate));
      case 'edit':
        return this.edits.execute(shop, gid, before, { ...step, command }, preview ?? false);
      case 'sync':
        // What the platform said: nothing to tell it.
        return { decision };
      case 'bill':
        // The attempt is recorded first; the billing gateway creates it on the platform once that has committed
        // (billing.ts), so a crash in between leaves a pending attempt to hand over again, never an unknown charge.
        return { decision };
      case 'bill_now': {
        // As a scheduled attempt; and the schedule restarts from now, on the platform too.
        const dated = await this.carryOutDates(shop, gid, before, decision);
        return dated ? answered(dated) : { decision };
      }
      case 'billing_missed': {
        // The missed cycle is svc's record; the schedule's new date is the platform's too.
        const dated = await this.carryOutDates(shop, gid, before, decision);
        return dated ? answered(dated) : { decision };
      }
      case 'billing_outcome':
        return this.carryOutBillingOutcome(shop, gid, before, decision, answered);
      default:
        return unreachable(command);
    }
  }

  /**
   * A billing outcome's platform side. The platform sets no next billing date by itself ("managed by the apps":
   * https://shopify.dev/docs/api/admin-graphql/latest/objects/SubscriptionContract#field-nextBillingDate), so after a
   * success svc sets it one interval past the cycle. When dunning ends, its final action is carried out there:
   * subscriptionContractFail, Pause or Cancel, or the failed cycle skipped (subscriptionBillingCycleSkip) and the date
   * moved past it. A failure with a retry to come changes nothing there: the retry is svc's own schedule.
   */
  private async carryOutBillingOutcome(
    shop: ShopRef,
    gid: string,
    before: Execution['before'],
    decision: Decision,
    answered: (answer: ContractAnswer, d?: Decision) => Executed,
  ): Promise<Executed> {
    const types = new Set(decision.events.map((e) => e.type));
    let answer: ContractAnswer | null = null;
    if (types.has('contract.failed')) answer = await this.setStatus(shop, gid, 'FAILED');
    else if (types.has('contract.paused')) answer = await this.setStatus(shop, gid, 'PAUSED');
    else if (types.has('contract.cancelled')) answer = await this.setStatus(shop, gid, 'CANCELLED');
    else if (types.has('contract.skipped') && before.billingCycleDate) {
      // Bookkeeping on the platform: a cycle it refuses to skip (one it counts as billed, say) still has its date
      // moved below, which is what keeps it from being billed again.
      await this.skipCycle(shop, gid, before.billingCycleDate).catch((err) => {
        if (!(err instanceof ServiceError && err.code === 'platform_rejected')) throw err;
      });
    }
    const dated = await this.carryOutDates(shop, gid, before, decision);
    answer = dated ?? answer;
    return answer ? answered(answer) : { decision };
  }

  /** Sets the decided next billing date on the platform when it moved (null: it did not). */
  private async carryOutDates(shop: ShopRef, gid: string, before: Execution['before'], decision: Decision): Promise<ContractAnswer | null> {
    const next = decision.contract.nextBillingDate;
    if (next.getTime() === before.nextBillingDate.getTime()) return null;
    // A contract ended meanwhile (cancelled on the platform while its attempt was pending) has no date to set there,
    // and the platform refuses to set one: the outcome is recorded all the same.
    if (before.status === 'CANCELLED' || before.status === 'EXPIRED') return null;
    return this.setNextBillingDate(shop, gid, next);
  }

  private async setStatus(shop: ShopRef, gid: string, target: keyof typeof STATUS_MUTATIONS): Promise<ContractAnswer> {
    const m = STATUS_MUTATIONS[target];
    const data = await this.admin.graphql<Record<string, MutationAnswer>>(shop, m.document, { id: gid }, HELD);
    const answer = data[m.field];
    const error = answer.userErrors[0];
    if (!error && answer.contract) return answer.contract;
    if (error?.code === 'CONTRACT_TERMINATED') {
      throw new ServiceError('invalid_state', `Cannot ${m.verb} this contract: the platform says ${quote(error.message)}.`);
    }
    // A retry after a platform success whose local commit was lost: a contract already in the target status counts
    // as done (whatever the platform answers to asking twice).
    const now = await this.readContract(shop, gid);
    if (now?.status === target) return now;
    throw rejected(error?.message ?? 'no contract in the answer');
  }

  private async setNextBillingDate(shop: ShopRef, gid: string, date: Date): Promise<ContractAnswer> {
    const data = await this.admin.graphql<{ subscriptionContractSetNextBillingDate: MutationAnswer }>(shop, doc.SET_NEXT_BILLING_DATE, { id: gid, date: iso(date) }, HELD);
    const answer = data.subscriptionContractSetNextBillingDate;
    if (answer.userErrors.length || !answer.contract) throw rejected(answer.userErrors[0]?.message ?? 'no contract in the answer');
    return answer.contract;
  }

  /** Skips the billing cycle `date` falls in; answers its index. */
  private async skipCycle(shop: ShopRef, gid: string, date: Date): Promise<number> {
    type Skip = { subscriptionBillingCycleSkip: { billingCycle: { cycleIndex: number; skipped: boolean } | null; userErrors: UserError[] } };
    const data = await this.admin.graphql<Skip>(shop, doc.SKIP_CYCLE, { input: { contractId: gid, selector: { date: iso(date) } } }, HELD);
    const answer = data.subscriptionBillingCycleSkip;
    if (answer.userErrors.length || !answer.billingCycle) throw rejected(answer.userErrors[0]?.message ?? 'no billing cycle in the answer');
    return answer.billingCycle.cycleIndex;
  }

  private async unskipCycle(shop: ShopRef, gid: string, index: number): Promise<void> {
    type Unskip = { subscriptionBillingCycleUnskip: { userErrors: UserError[] } };
    const data = await this.admin.graphql<Unskip>(shop, doc.UNSKIP_CYCLE, { input: { contractId: gid, selector: { index } } }, HELD);
    const error = data.subscriptionBillingCycleUnskip.userErrors[0];
    if (error) throw rejected(error.message);
  }

  /** When the platform expects to bill cycle `index`. */
  private async cycleDate(shop: ShopRef, gid: string, index: number): Promise<Date> {
    type Cycle = { subscriptionBillingCycle: { billingAttemptExpectedDate: string } | null };
    const next = await this.admin.graphql<Cycle>(shop, doc.BILLING_CYCLE, { input: { contractId: gid, selector: { index } } }, HELD);
    if (!next.subscriptionBillingCycle) throw rejected('the contract has no billing cycle after the skipped one');
    return new Date(next.subscriptionBillingCycle.billingAttemptExpectedDate);
  }

  private async readContract(shop: ShopRef, gid: string): Promise<ContractAnswer | null> {
    const data = await this.admin.graphql<{ subscriptionContract: ContractAnswer | null }>(shop, doc.CONTRACT, { id: gid }, HELD);
    return data.subscriptionContract;
  }
}

/** Calls made while carrying out a change use the token prepare() loaded. */
const HELD = { heldToken: true };
const quote = (s: string) => JSON.stringify(s.slice(0, 300));
const rejected = (message: string) => new ServiceError('platform_rejected', `The platform refused the change: ${message.slice(0, 300)}`);

/** The decision with the platform's next billing date (a skip lands where the platform's cycles say). */
function withNextBillingDate(d: Decision, date: Date): Decision {
  const contract = { ...d.contract, nextBillingDate: date };
  return { contract, events: d.events.map((e) => ({ ...e, after: contract, data: { ...e.data, nextBillingDate: iso(date) } })) };
}
