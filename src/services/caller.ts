import type { KeyState } from '../db/contractRows.js';
import { keyRows } from '../db/keyRows.js';
import { ServiceError } from '../domain/errors.js';
import type { Actor } from '../domain/resources.js';
import type { ServiceContext } from './context.js';

export type { KeyAccess } from '../domain/resources.js';
import type { KeyAccess } from '../domain/resources.js';

/**
 * Who is acting on a shop's data, as every shop-scoped service receives it: the shop, the actor its events record,
 * and what the caller may do. A service takes it as confirmed: the key (or session token) was valid, the shop has
 * API access and the limits passed.
 */
export type Caller = { readonly shopId: string; readonly actor: Actor; readonly access: KeyAccess };

/** For the services that change data: a read-only key gets 403 insufficient_scope (docs/product.md §1). */
export function assertMayChange(caller: { access: KeyAccess }): void {
  if (caller.access !== 'read_write') {
    throw new ServiceError('insufficient_scope', 'This API key is read-only: it can read contracts and events but not change them. Use a read-write key.');
  }
}

/*
 * The one exception to "already confirmed", contained here, and closed by construction.
 *
 * Why: a request whose key this process has seen before (the key gate's cache of ids) would otherwise cost two round
 * trips for a GET of a contract: one to confirm the key (not revoked, the shop still has API access), one to read.
 * Joined, they are one statement (db/contractRows.ts: withKeyState), which is a third of the work of such a GET. So
 * for the routes whose first step is reading one contract (GET a contract, an action or an edit without an
 * Idempotency-Key), the gate hands over a caller whose confirmation is pending, and the contract read settles it
 * with the key state it read along: the gate's own checks (usable? may it change data? the rate limit) then run,
 * exactly once, before any data leaves or anything is written.
 *
 * Fail closed: until it is settled, such a caller has no shop. Reading `shopId` (which every query of the shop's
 * data needs) throws 401, so a service that reaches for the shop's data before the read that confirms cannot serve
 * or change anything; and the gate refuses (401) any answer that would leave with the confirmation still pending
 * (http/apiKeyGate.ts), so a route that never reads at all cannot answer either. Everywhere else, confirmPending
 * settles it with one indexed read of the key's state: the gate does so for every other route, and the error handler
 * before it answers a request that failed before reading (a bad body, say).
 */
type Confirmation = { keyId: string; settle(state: KeyState | undefined): Promise<void> };

/** Thrown by a pending caller's `shopId`: its key was never confirmed, so nothing of the shop may be touched. */
export class UnconfirmedCaller extends ServiceError {
  constructor() {
    super('unauthorized', 'The API key could not be confirmed for this request.');
  }
}

/**
 * A caller whose confirmation is pending, the confirmation held in its own private field. (Not in a WeakMap keyed by
 * the caller, as it once was: an entry per request in a long-lived WeakMap kept each request's objects alive through
 * the young generation's collections, and the garbage collector's time per GET of a contract more than doubled.)
 */
class PendingCaller implements Caller {
  #confirmation: Confirmation | undefined;
  #confirmed = false;
  readonly #shopId: string;
  readonly actor: Actor;
  readonly access: KeyAccess;

  constructor(fields: Caller, confirmation: Confirmation) {
    this.#shopId = fields.shopId;
    this.actor = fields.actor;
    this.access = fields.access;
    this.#confirmation = confirmation;
  }

  get shopId(): string {
    if (!this.#confirmed) throw new UnconfirmedCaller();
    return this.#shopId;
  }

  static isPending(caller: Caller): boolean {
    return caller instanceof PendingCaller && caller.#confirmation !== undefined;
  }

  static take(caller: Caller): Confirmation | undefined {
    if (!(caller instanceof PendingCaller)) return undefined;
    const c = caller.#confirmation;
    if (!c) return undefined;
    caller.#confirmation = undefined;
    return {
      keyId: c.keyId,
      settle: async (state) => {
        await c.settle(state);
        caller.#confirmed = true;
      },
    };
  }
}

/** For the key gate: a caller whose key state the request's first contract read (or confirmPending) confirms. */
export function callerPendingConfirmation(fields: Caller, confirmation: Confirmation): Caller {
  return new PendingCaller(fields, confirmation);
}

/** True while a caller's confirmation has not been taken: an answer for it must not leave. */
export const isPendingConfirmation = (caller: Caller): boolean => PendingCaller.isPending(caller);

/** For the contract read: the confirmation to settle with the key state it reads along, taken once. */
export function takeConfirmation(caller: Caller): Confirmation | undefined {
  return PendingCaller.take(caller);
}

/** Settles a pending caller with one indexed read of its key's state (throws the refusal); nothing if confirmed. */
export async function confirmPending(ctx: ServiceContext, caller: Caller): Promise<void> {
  const c = takeConfirmation(caller);
  if (c) await c.settle(await keyRows(ctx.db).states.load(c.keyId));
}
