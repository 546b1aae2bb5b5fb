import {
  getNamedType,
  isLeafType,
  isListType,
  isNonNullType,
  Kind,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLSchema,
  type GraphQLType,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';
import type { Clock } from './store.js';

/**
 * The stand-in's query cost rule (a simplification of the platform's calculated query cost):
 * - a scalar or enum field costs 0; a field returning an object (or interface/union) costs 1 plus its selection;
 * - a field that takes `first`/`last` (a connection) multiplies the cost of its list children (`edges`, `nodes`)
 *   by that number; nested connections multiply again;
 * - each root mutation field costs 10 plus its selection;
 * - `costByOperation[operationName]`, when set, replaces the computed requested cost.
 * The actual cost walks the response instead: every object in `data` costs 1 (each list element counted), each
 * root mutation field 10; it never exceeds the requested cost.
 */
export function requestedQueryCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown>,
): number {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  const defaults = new Map<string, unknown>();
  for (const v of operation.variableDefinitions ?? []) {
    if (v.defaultValue && v.defaultValue.kind === Kind.INT) defaults.set(v.variable.name.value, Number(v.defaultValue.value));
  }
  const intArg = (value: ValueNode | undefined): number | undefined => {
    if (!value) return undefined;
    if (value.kind === Kind.INT) return Number(value.value);
    if (value.kind === Kind.VARIABLE) {
      const v = variables[value.name.value] ?? defaults.get(value.name.value);
      return typeof v === 'number' ? v : undefined;
    }
    return undefined;
  };

  const isMutation = operation.operation === 'mutation';
  const root = isMutation ? schema.getMutationType() : schema.getQueryType();
  if (!root) return 0;

  const walk = (set: SelectionSetNode | undefined, parent: GraphQLNamedType, listMultiplier: number, depth: number): number => {
    if (!set) return 0;
    let total = 0;
    for (const sel of set.selections) {
      if (sel.kind === Kind.INLINE_FRAGMENT) {
        const t = sel.typeCondition ? schema.getType(sel.typeCondition.name.value) : parent;
        total += walk(sel.selectionSet, t ?? parent, listMultiplier, depth);
        continue;
      }
      if (sel.kind === Kind.FRAGMENT_SPREAD) {
        const f = fragments.get(sel.name.value);
        const t = f ? schema.getType(f.typeCondition.name.value) : undefined;
        if (f) total += walk(f.selectionSet, t ?? parent, listMultiplier, depth);
        continue;
      }
      total += fieldCost(sel, parent, listMultiplier, depth);
    }
    return total;
  };

  const fieldCost = (node: FieldNode, parent: GraphQLNamedType, listMultiplier: number, depth: number): number => {
    const field = 'getFields' in parent ? (parent.getFields() as Record<string, GraphQLField<unknown, unknown>>)[node.name.value] : undefined;
    if (!field) return 0;
    const type = getNamedType(field.type);
    if (isLeafType(type)) return 0;
    const pageSize = intArg(node.arguments?.find((a) => a.name.value === 'first' || a.name.value === 'last')?.value);
    const times = returnsList(field.type) ? listMultiplier : 1;
    const childMultiplier = pageSize ?? 1;
    const own = depth === 0 && isMutation ? 10 : 1;
    return times * (own + walk(node.selectionSet, type, childMultiplier, depth + 1));
  };

  return walk(operation.selectionSet, root, 1, 0);
}

function returnsList(type: GraphQLType): boolean {
  return isListType(isNonNullType(type) ? type.ofType : type);
}

/** The actual cost of an answer: 1 per object in `data` (10 per root mutation field), capped at the requested cost. */
export function actualQueryCost(data: unknown, isMutation: boolean, requested: number): number {
  const count = (v: unknown): number => {
    if (Array.isArray(v)) return v.reduce((n: number, x) => n + count(x), 0);
    if (v && typeof v === 'object') return 1 + Object.values(v).reduce((n: number, x) => n + count(x), 0);
    return 0;
  };
  if (!data || typeof data !== 'object') return 0;
  let total = 0;
  for (const value of Object.values(data)) {
    total += isMutation ? 10 + (value && typeof value === 'object' ? count(value) - 1 : 0) : count(value);
  }
  return Math.min(total, requested);
}

export type ThrottleStatus = { maximumAvailable: number; currentlyAvailable: number; restoreRate: number };

/**
 * A shop's leaky bucket of query cost points: `maximumAvailable` points, refilled at `restoreRate` per second of the
 * stand-in's clock (so a test with a fixed clock sees no refill until it moves the clock).
 */
export class CostBucket {
  private available: number;
  private at: number;
  /** Points spent since the start (taken less refunded), and requests refused THROTTLED: for benchmarks. */
  spent = 0;
  throttled = 0;
  /** Requests still to refuse before the bucket refills again (drain's `refusals`). */
  private holding = 0;

  constructor(
    readonly maximumAvailable: number,
    readonly restoreRate: number,
    private readonly clock: Clock,
  ) {
    this.available = maximumAvailable;
    this.at = clock.now().getTime();
  }

  private refill(): void {
    const now = this.clock.now().getTime();
    if (this.holding > 0) {
      // Held empty: it refills from the moment the hold ends.
      this.at = Math.max(this.at, now);
      return;
    }
    if (now > this.at) this.available = Math.min(this.maximumAvailable, this.available + ((now - this.at) / 1000) * this.restoreRate);
    this.at = Math.max(this.at, now);
  }

  /** Takes `cost` points if that many are there; false (nothing taken) when the request must be throttled. */
  take(cost: number): boolean {
    this.refill();
    if (cost > this.available) {
      this.throttled++;
      if (this.holding > 0) this.holding--;
      return false;
    }
    this.available -= cost;
    this.spent += cost;
    return true;
  }

  refund(points: number): void {
    this.refill();
    this.spent -= points;
    this.available = Math.min(this.maximumAvailable, this.available + points);
  }

  /**
   * Empties the bucket (a fault: another app or a burst used it up), and keeps it empty until it has refused
   * `refusals` requests (that other app still spending): a test's next calls meet THROTTLED however long the machine
   * takes to make them, where a hold of some time would run out on a slow machine before the first call came.
   */
  drain(refusals = 0): void {
    this.refill();
    this.available = 0;
    this.holding = refusals;
  }

  status(): ThrottleStatus {
    this.refill();
    return { maximumAvailable: this.maximumAvailable, currentlyAvailable: Math.floor(this.available), restoreRate: this.restoreRate };
  }
}
