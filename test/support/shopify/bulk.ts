import { randomBytes } from 'node:crypto';
import { parse } from 'graphql';
import { executeAdmin } from './graphql.js';
import type { ResolverContext } from './resolverContext.js';
import type { BulkOperation, Clock, Shop } from './store.js';

type Obj = Record<string, unknown>;

function connectionNodes(v: unknown): Obj[] | null {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return null;
  const o = v as Obj;
  if (Array.isArray(o.edges) && o.edges.every((e) => e && typeof e === 'object' && 'node' in e)) {
    return o.edges.map((e) => (e as Obj).node as Obj);
  }
  if (Array.isArray(o.nodes)) return o.nodes as Obj[];
  return null;
}

/**
 * Turns a bulk query's result into the platform's JSONL: one line per node of each connection, parents before their
 * children; a nested connection's nodes are lines of their own with `__parentId` (the parent node's id) and are
 * left out of the parent's line; `edges`, `node`, `cursor` and `pageInfo` do not appear.
 */
export function toJsonl(data: Obj): { lines: string[]; rootObjectCount: number } {
  const lines: string[] = [];
  let rootObjectCount = 0;
  const emit = (node: Obj, parentId: unknown) => {
    const line: Obj = {};
    const children: Obj[][] = [];
    for (const [k, v] of Object.entries(node)) {
      const nested = connectionNodes(v);
      if (nested) children.push(nested);
      else line[k] = v;
    }
    if (parentId !== undefined) line.__parentId = parentId;
    lines.push(JSON.stringify(line));
    for (const list of children) for (const child of list) emit(child, node.id);
  };
  for (const value of Object.values(data)) {
    const roots = connectionNodes(value) ?? (value && typeof value === 'object' ? [value as Obj] : []);
    for (const root of roots) {
      rootObjectCount++;
      emit(root, undefined);
    }
  }
  return { lines, rootObjectCount };
}

export type BulkSettings = {
  /** Complete a started operation by itself after `delayMs` (default true); otherwise `complete()` does it. */
  autoComplete: boolean;
  delayMs: number;
};

/**
 * Runs bulk query operations: RUNNING as soon as created, then COMPLETED with a JSONL file the stand-in serves
 * (or FAILED), then `bulk_operations/finish`. The query runs at completion time, against the data as it is then.
 */
export class BulkRunner {
  /** JSONL files by token, served at /_standin/bulk/{token}.jsonl. */
  readonly files = new Map<string, string>();
  /** Errors of the last operation whose query failed (for a test's diagnostics). */
  lastErrors: unknown[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly pending = new Set<Promise<void>>();
  private readonly started: { shop: Shop; op: BulkOperation }[] = [];

  constructor(
    private readonly settings: BulkSettings,
    private readonly deps: {
      clock: Clock;
      baseUrl(): string;
      context(shop: Shop): ResolverContext;
      finished(shop: Shop, op: BulkOperation): void;
    },
  ) {}

  start(shop: Shop, op: BulkOperation): void {
    this.started.push({ shop, op });
    op.status = 'RUNNING';
    if (!this.settings.autoComplete) return;
    const t = setTimeout(() => {
      this.timers.delete(t);
      this.track(this.complete(shop, op));
    }, this.settings.delayMs);
    this.timers.add(t);
  }

  /** Completes (or fails, with `errorCode`) one running operation now. */
  async complete(shop: Shop, op: BulkOperation, errorCode?: BulkOperation['errorCode']): Promise<void> {
    if (op.status !== 'RUNNING' && op.status !== 'CREATED') return;
    if (errorCode) return this.finish(shop, op, 'FAILED', errorCode);
    const ctx = { ...this.deps.context(shop), bulk: true };
    const result = await executeAdmin(parse(op.query), {}, undefined, ctx);
    if (op.status !== 'RUNNING') return;
    if (result.errors?.length || !result.data) {
      this.lastErrors = result.errors?.map((e) => e.toJSON()) ?? [];
      return this.finish(shop, op, 'FAILED', 'INTERNAL_SERVER_ERROR');
    }
    const { lines, rootObjectCount } = toJsonl(result.data as Obj);
    const content = lines.length ? `${lines.join('\n')}\n` : '';
    const token = randomBytes(12).toString('hex');
    this.files.set(token, content);
    op.objectCount = lines.length;
    op.rootObjectCount = rootObjectCount;
    op.fileSize = Buffer.byteLength(content);
    // The platform gives no url when the query found nothing.
    op.url = lines.length ? `${this.deps.baseUrl()}/_standin/bulk/${token}.jsonl` : null;
    this.finish(shop, op, 'COMPLETED', null);
  }

  /** Completes every running operation now and waits for it. */
  async settle(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const { shop, op } of this.started) if (op.status === 'RUNNING') this.track(this.complete(shop, op));
    while (this.pending.size) await Promise.allSettled([...this.pending]);
  }

  close(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  private finish(shop: Shop, op: BulkOperation, status: 'COMPLETED' | 'FAILED', errorCode: BulkOperation['errorCode']): void {
    op.status = status;
    op.errorCode = errorCode;
    op.completedAt = this.deps.clock.now();
    this.deps.finished(shop, op);
  }

  private track(p: Promise<void>): void {
    const tracked = p.catch(() => {}).finally(() => this.pending.delete(tracked));
    this.pending.add(tracked);
  }
}
