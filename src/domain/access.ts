/** Who may use the external API (docs/product.md §2). Pure: the plan, the clock and the free period decide. */
export const API_PLAN = 'enterprise';
/** The plans a shop can be on: `basic` (where every shop starts) and `enterprise` (API access). */
export const PLANS = ['basic', API_PLAN] as const;

export type ApiAccessReason = 'enterprise' | 'free_period' | 'plan_required';
export type ApiAccess = { allowed: boolean; reason: ApiAccessReason; freePeriodEndsAt: Date | null };

export function apiAccess(plan: string, now: Date, freeUntil: Date | null): ApiAccess {
  const inFreePeriod = freeUntil !== null && now.getTime() < freeUntil.getTime();
  const freePeriodEndsAt = inFreePeriod ? freeUntil : null;
  if (plan === API_PLAN) return { allowed: true, reason: 'enterprise', freePeriodEndsAt };
  if (inFreePeriod) return { allowed: true, reason: 'free_period', freePeriodEndsAt };
  return { allowed: false, reason: 'plan_required', freePeriodEndsAt: null };
}

export const MAX_ACTIVE_KEYS = 5;

export const SHOP_DOMAIN = /^[a-z0-9][a-z0-9-]*\.myshopify\.com$/;
