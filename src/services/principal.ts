import type { KeyState } from '../db/contractRows.js';
import { keyRows } from '../db/keyRows.js';
import { ALL, assertAllows, CONNECTION, type Permission, type Permissions } from '../domain/permissions.js';
import { grantRows } from '../db/grantRows.js';
import { assertGrantUsable } from './oauth/accessTokens.js';
import type { Actor } from '../domain/resources.js';
import { assertKeyUsable, permissionsOfState } from './authenticateApiKey.js';
import type { ServiceContext } from './context.js';

/**
 * Who is acting, as every service and the command runner receive it: resolved and confirmed (the key or session was
 * valid, the shop has API access). A shop's principal acts on that shop's data alone, with its permissions; svc's
 * own workers act as a system principal on any shop, each change recording its actor.
 */
export type ShopPrincipal = {
  readonly kind: 'shop';
  readonly shopId: string;
  /** What the events it causes record. */
  readonly actor: Actor;
  readonly permissions: Permissions;
  /** How a refusal names it ("This API key", "This connection"). */
  readonly who: string;
  /** The API key it acts by, if it does (what a bulk job records as its maker). */
  readonly keyId?: string;
};
export type SystemPrincipal = { readonly kind: 'system'; readonly actor: Actor };
export type Principal = ShopPrincipal | SystemPrincipal;

/** svc's own work: the resume sweep, renewals, the platform's news (a bulk job's is its own: bulkJobPrincipal). */
export const SYSTEM = {
  scheduler: { kind: 'system', actor: { type: 'scheduler' } },
  billing: { kind: 'system', actor: { type: 'billing' } },
  platform: { kind: 'system', actor: { type: 'platform' } },
} as const satisfies Record<string, SystemPrincipal>;

/** The merchant in the shop admin (a verified session token): everything on their own shop. */
export const adminPrincipal = (shopId: string): ShopPrincipal => ({ kind: 'shop', shopId, actor: { type: 'admin' }, permissions: ALL, who: 'The admin' });

/**
 * A request's caller as a surface holds it before the runner: identified (a key this process knows, say) and
 * resolved to its principal at most once, failing closed. Resolution reads the key's state (revoked? the shop's plan,
 * the key's permissions now), so a revocation or a change of permissions on any instance holds from the very next
 * request; a first read of one contract may carry that state in the same statement (the runner's fused read,
 * services/runner.ts), which is why resolution is asked for rather than done by the surface.
 *
 * Services never see a Caller: they take the Principal it resolves to.
 */
export interface Caller {
  /** The key whose state a first read may carry along; null once resolved (or for a caller resolved otherwise). */
  readonly pendingKeyId: string | null;
  /** The same for an OAuth connection: the grant whose state a first read may carry along. */
  readonly pendingGrantId: string | null;
  /** Resolved already: its principal (admitted or not), else null. */
  readonly resolved: ShopPrincipal | null;
  /** True once `principal` has let it through (resolved, authorized for what it asked, admitted). */
  readonly settled: boolean;
  /** Resolves the principal (from `state` when a first read carried it, else by one read), once; throws the refusal. */
  resolve(ctx: ServiceContext, state?: KeyState): Promise<ShopPrincipal>;
  /**
   * The principal: resolved, then `needs` checked (403 insufficient_scope naming every one missing), then admitted
   * once (the surface's rate limit), in the order of docs/product.md §2. Throws the refusal.
   */
  principal(ctx: ServiceContext, needs: readonly Permission[], state?: KeyState): Promise<ShopPrincipal>;
}

/** What a surface adds once a principal may act: its rate limit, its last-used note. */
export type Admission = (principal: ShopPrincipal) => Promise<void>;

class RequestCaller implements Caller {
  #principal: ShopPrincipal | null;
  #resolving: Promise<ShopPrincipal> | null = null;
  #admitting: Promise<void> | null = null;
  #settled = false;

  constructor(
    resolved: ShopPrincipal | null,
    /** What the caller was identified by and acts as until resolved: a key, or an OAuth connection's grant. */
    private readonly known: { kind: 'key' | 'grant'; id: string; shopId: string; actor: Actor } | null,
    private readonly admission: Admission | null,
  ) {
    this.#principal = resolved;
  }

  get pendingKeyId(): string | null {
    return this.#principal || this.known?.kind !== 'key' ? null : this.known.id;
  }

  get pendingGrantId(): string | null {
    return this.#principal || this.known?.kind !== 'grant' ? null : this.known.id;
  }

  get resolved(): ShopPrincipal | null {
    return this.#principal;
  }

  get settled(): boolean {
    return this.#settled;
  }

  /** The principal without waiting: resolved already, or from the state a first read carried; else null. */
  private now(ctx: ServiceContext, state: KeyState | undefined): ShopPrincipal | null {
    return this.#principal ?? (state ? this.fromState(ctx, state) : null);
  }

  async resolve(ctx: ServiceContext, state?: KeyState): Promise<ShopPrincipal> {
    // Otherwise one read, shared by concurrent asks.
    return this.now(ctx, state) ?? (await (this.#resolving ??= this.read(ctx)));
  }

  async principal(ctx: ServiceContext, needs: readonly Permission[], state?: KeyState): Promise<ShopPrincipal> {
    const p = this.now(ctx, state) ?? (await this.resolve(ctx));
    assertAllows(p.permissions, needs, p.who);
    if (this.admission) await (this.#admitting ??= this.admission(p));
    this.#settled = true;
    return p;
  }

  private async read(ctx: ServiceContext): Promise<ShopPrincipal> {
    const known = this.known!;
    return this.fromState(ctx, known.kind === 'grant' ? await grantRows(ctx.db).states.load(known.id) : await keyRows(ctx.db).states.load(known.id));
  }

  /** The principal from the key's (or grant's) state as read now (undefined: no such key); throws the refusal. */
  private fromState(ctx: ServiceContext, s: KeyState | undefined): ShopPrincipal {
    const known = this.known!;
    if (known.kind === 'grant') {
      assertGrantUsable(ctx, s);
      this.#principal = { kind: 'shop', shopId: known.shopId, actor: known.actor, permissions: permissionsOfState(s!), who: CONNECTION };
      return this.#principal;
    }
    assertKeyUsable(ctx, s);
    this.#principal = { kind: 'shop', shopId: known.shopId, actor: known.actor, permissions: permissionsOfState(s!), who: 'This API key', keyId: known.id };
    return this.#principal;
  }
}

/** A caller already resolved (a key looked up by its digest, the admin's session, a test). */
export const resolvedCaller = (principal: ShopPrincipal, admission: Admission | null = null): Caller => new RequestCaller(principal, null, admission);

/**
 * A caller known by an OAuth access token this process has seen (its grant and shop, which never change): resolved
 * by its grant's state, read when the runner (or a surface) asks, as a key's is.
 */
export const grantCaller = (grant: { grantId: string; shopId: string }, admission: Admission | null): Caller =>
  new RequestCaller(null, { kind: 'grant', id: grant.grantId, shopId: grant.shopId, actor: { type: 'oauth', id: grant.grantId } }, admission);

/** A caller known by a key this process has seen: resolved by its state, read when the runner (or a surface) asks. */
export const keyCaller = (key: { keyId: string; shopId: string; actor: Actor }, admission: Admission | null): Caller =>
  new RequestCaller(null, { kind: 'key', id: key.keyId, shopId: key.shopId, actor: key.actor }, admission);
