import type { InjectedUserError } from './resolverContext.js';

/**
 * What a request to the stand-in can suffer:
 * - `latency`: answered `ms` late;
 * - `error`: answered with an HTTP error (default 503) instead of the real answer;
 * - `hang`: never answered (the connection stays open until the client gives up or the stand-in closes);
 * - `hangup`: the connection is cut without an answer.
 * With `when: 'after'`, the request is carried out first (a mutation changes the platform, webhooks go out) and
 * only the answer is lost: the case of a platform success the client never hears of.
 */
export type HttpFault =
  | { kind: 'latency'; ms: number }
  | { kind: 'error'; status?: number; body?: unknown }
  | { kind: 'hang' }
  | { kind: 'hangup' };

export type HttpFaultScope = {
  /** How many requests it applies to (default 1; Infinity until cleared). */
  count?: number;
  shop?: string;
  endpoint?: 'graphql' | 'oauth';
  /** Only GraphQL requests whose operation name, or one of whose root fields, is this. */
  operation?: string;
  when?: 'before' | 'after';
};

type Rule = HttpFault & Omit<HttpFaultScope, 'count'> & { remaining: number };

export type RequestFacts = { endpoint: 'graphql' | 'oauth'; shop: string; operationName: string | null; rootFields: string[] };

const ERROR_BODIES: Record<number, unknown> = {
  500: { errors: 'Internal Server Error' },
  502: { errors: 'Bad Gateway' },
  503: { errors: 'Service Unavailable' },
  504: { errors: 'Gateway Timeout' },
};

export function errorBody(status: number): unknown {
  return ERROR_BODIES[status] ?? { errors: `HTTP ${status}` };
}

export class Faults {
  private rules: Rule[] = [];
  private userErrors: (InjectedUserError & { shop?: string; remaining: number })[] = [];

  add(fault: HttpFault, scope: HttpFaultScope = {}): void {
    const { count, ...rest } = scope;
    this.rules.push({ ...fault, ...rest, remaining: count ?? 1 });
  }

  /** The next matching mutation answers this userError and changes nothing. */
  userError(error: InjectedUserError, scope: { shop?: string; count?: number } = {}): void {
    this.userErrors.push({ ...error, shop: scope.shop, remaining: scope.count ?? 1 });
  }

  clear(): void {
    this.rules = [];
    this.userErrors = [];
  }

  /** Takes the first rule for this request and moment, if any (a rule is used up as it applies). */
  take(facts: RequestFacts, when: 'before' | 'after'): HttpFault | undefined {
    const rule = this.rules.find(
      (r) =>
        r.remaining > 0 &&
        (r.when ?? 'before') === when &&
        (!r.shop || r.shop === facts.shop) &&
        (!r.endpoint || r.endpoint === facts.endpoint) &&
        (!r.operation || r.operation === facts.operationName || facts.rootFields.includes(r.operation)),
    );
    if (!rule) return undefined;
    rule.remaining--;
    this.rules = this.rules.filter((r) => r.remaining > 0);
    return rule;
  }

  takeUserError(shop: string, mutation: string): InjectedUserError | undefined {
    const e = this.userErrors.find((u) => u.remaining > 0 && u.mutation === mutation && (!u.shop || u.shop === shop));
    if (!e) return undefined;
    e.remaining--;
    this.userErrors = this.userErrors.filter((u) => u.remaining > 0);
    return { mutation: e.mutation, message: e.message, code: e.code, field: e.field };
  }
}
