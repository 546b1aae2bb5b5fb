import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { eq } from 'drizzle-orm';
import type { PlatformContract as MirroredContract } from '../../db/mirror.js';
import { platformInstallations, type PlatformInstallationRow } from '../../db/schema.js';
import { ServiceError } from '../../domain/errors.js';
import type { ServiceContext } from '../../services/context.js';
import { insertContracts } from '../../services/platformSync.js';
import type { ShopifyAdmin, ShopRef } from './admin.js';
import { mirrorFields, type PlatformContract, type PlatformDiscount, type PlatformLine } from './contracts.js';
import * as doc from './documents.js';

/** Up to this many contracts the import pages through the API; a larger shop is read with a bulk operation. */
export const PAGED_IMPORT_LIMIT = 250;
const INSERT_BATCH = 1000;
/** A running import whose row has not moved for this long was left by a stopped process: another may take it. */
const STALE_IMPORT_MS = 2 * 60_000;

export type ImportProgress = {
  status: PlatformInstallationRow['importStatus'];
  mode: PlatformInstallationRow['importMode'];
  imported: number;
  total: number | null;
  startedAt: string | null;
  finishedAt: string | null;
  error: string | null;
};

/**
 * The import of a shop's contracts at install (paged for a small shop, a bulk operation for a large one), with its
 * progress kept on the installation row, so a stopped process's import is taken over by the next reconciliation.
 */
export class ContractImport {
  private readonly bulkWaiters = new Map<string, () => void>();

  constructor(
    private readonly ctx: ServiceContext,
    private readonly admin: ShopifyAdmin,
  ) {}

  private async installation(shopId: string): Promise<PlatformInstallationRow | null> {
    const [row] = await this.ctx.db.orm.select().from(platformInstallations).where(eq(platformInstallations.shopId, shopId));
    return row ?? null;
  }

  /**
   * Takes the import if no one else runs it (pending, failed, or running but stale), then pages through the
   * contracts; past PAGED_IMPORT_LIMIT it reads the rest with a bulk operation. Contracts already in the mirror are
   * left alone (syncContract keeps them current).
   */
  async runImport(shop: ShopRef): Promise<boolean> {
    const now = this.ctx.clock.now();
    const claimed = await this.ctx.db.withSession((run) =>
      run<{ import_cursor: string | null; import_done: number; import_bulk_operation_id: string | null }>(
        `UPDATE platform_installations
            SET import_status = 'running', import_error = NULL, updated_at = $2,
                import_started_at = COALESCE(import_started_at, $2), synced_until = COALESCE(synced_until, $2)
          WHERE shop_id = $1 AND (import_status IN ('pending', 'failed') OR (import_status = 'running' AND updated_at < $3))
          RETURNING import_cursor, import_done, import_bulk_operation_id`,
        [shop.id, now, new Date(now.getTime() - STALE_IMPORT_MS)],
      ),
    );
    if (!claimed.length) return false;
    const state = claimed[0];
    try {
      let imported = state.import_done;
      if (!state.import_bulk_operation_id) {
        let after = state.import_cursor;
        await this.progress(shop.id, { import_mode: 'paged' });
        for (;;) {
          type Page = { subscriptionContracts: { nodes: PlatformContract[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } } };
          const page: Page = await this.admin.graphql<Page>(shop, doc.CONTRACTS_PAGE, { first: doc.CONTRACTS_PER_PAGE, after, query: null, sortKey: doc.IMPORT_SORT });
          await insertContracts(this.ctx, shop.id, usable(page.subscriptionContracts.nodes));
          imported += page.subscriptionContracts.nodes.length;
          after = page.subscriptionContracts.pageInfo.endCursor;
          await this.progress(shop.id, { import_done: imported, import_cursor: after });
          if (!page.subscriptionContracts.pageInfo.hasNextPage) return this.finishImport(shop.id, imported);
          if (imported >= PAGED_IMPORT_LIMIT) break;
        }
      }
      return await this.bulkImport(shop, state.import_bulk_operation_id);
    } catch (err) {
      const message = err instanceof ServiceError ? err.message : 'unexpected error';
      await this.progress(shop.id, { import_status: 'failed', import_error: message.slice(0, 500) });
      throw err;
    }
  }

  private async bulkImport(shop: ShopRef, existing: string | null): Promise<boolean> {
    let id = existing;
    if (!id) {
      type Run = { bulkOperationRunQuery: { bulkOperation: { id: string } | null; userErrors: { message: string }[] } };
      const r = await this.admin.graphql<Run>(shop, doc.RUN_BULK_QUERY, { query: doc.BULK_CONTRACTS_QUERY });
      const op = r.bulkOperationRunQuery.bulkOperation;
      if (!op) throw new ServiceError('platform_rejected', `The platform refused the bulk import: ${r.bulkOperationRunQuery.userErrors[0]?.message ?? 'no operation'}`);
      id = op.id;
      await this.progress(shop.id, { import_mode: 'bulk', import_bulk_operation_id: id, import_done: 0 });
    }
    type Op = { bulkOperation: { status: string; errorCode: string | null; url: string | null; rootObjectCount: string } | null };
    for (;;) {
      const r = await this.admin.graphql<Op>(shop, doc.BULK_OPERATION, { id });
      const op = r.bulkOperation;
      if (!op || ['FAILED', 'CANCELED', 'CANCELING', 'EXPIRED'].includes(op.status)) {
        // Start again with a new operation next time.
        await this.progress(shop.id, { import_bulk_operation_id: null });
        throw new ServiceError('platform_unavailable', `The bulk import ended ${op?.status ?? 'unknown'}${op?.errorCode ? ` (${op.errorCode})` : ''}.`);
      }
      if (op.status === 'COMPLETED') {
        await this.progress(shop.id, { import_total: Number(op.rootObjectCount) });
        const n = op.url ? await this.readBulkResult(shop.id, op.url) : 0;
        return this.finishImport(shop.id, n);
      }
      await this.progress(shop.id, {});
      // bulk_operations/finish wakes this at once; polling covers a webhook that is late or never comes.
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 1000);
        this.bulkWaiters.set(shop.id, () => {
          clearTimeout(t);
          resolve();
        });
      });
      this.bulkWaiters.delete(shop.id);
    }
  }

  /** bulk_operations/finish arrived for the shop. */
  bulkFinished(shopId: string): void {
    this.bulkWaiters.get(shopId)?.();
  }

  /**
   * Streams the JSONL result: a contract's line, then its lines (`__parentId`) right after it, as the platform
   * writes them; contracts are inserted a thousand at a time, so memory stays flat however large the shop.
   */
  private async readBulkResult(shopId: string, url: string): Promise<number> {
    const res = await fetch(url, { signal: AbortSignal.timeout(10 * 60_000) }).catch(() => null);
    if (!res?.ok || !res.body) throw new ServiceError('platform_unavailable', 'The bulk import result could not be downloaded.');
    const lines = createInterface({ input: Readable.fromWeb(res.body as never), crlfDelay: Infinity });
    let batch: PlatformContract[] = [];
    let current: (PlatformContract & { lines: PlatformLine[]; discounts: PlatformDiscount[] }) | null = null;
    let done = 0;
    const flush = async () => {
      await insertContracts(this.ctx, shopId, usable(batch));
      done += batch.length;
      batch = [];
      await this.progress(shopId, { import_done: done });
    };
    for await (const line of lines) {
      if (!line.trim()) continue;
      const o = JSON.parse(line) as Record<string, unknown>;
      if (o.__parentId) {
        // A contract's lines and discounts follow it, each with the contract's id; a line is the one with a quantity.
        if (current && o.__parentId === current.id) ('quantity' in o ? current.lines : current.discounts).push(o as never);
        continue;
      }
      current = { ...(o as unknown as PlatformContract), lines: [], discounts: [] };
      batch.push(current);
      if (batch.length > INSERT_BATCH) {
        // Keep the contract being read (its lines may follow); insert the ones before it.
        const last = batch.pop()!;
        await flush();
        batch.push(last);
      }
    }
    await flush();
    return done;
  }

  private async finishImport(shopId: string, imported: number): Promise<boolean> {
    await this.progress(shopId, { import_status: 'completed', import_done: imported, import_total: imported, import_finished_at: this.ctx.clock.now(), import_cursor: null, import_bulk_operation_id: null });
    return true;
  }

  private async progress(shopId: string, set: Record<string, unknown>): Promise<void> {
    const cols = Object.keys(set);
    const assignments = [...cols.map((c, i) => `${c} = $${i + 2}`), `updated_at = $${cols.length + 2}`];
    await this.ctx.db.withSession((run) =>
      run(`UPDATE platform_installations SET ${assignments.join(', ')} WHERE shop_id = $1`, [shopId, ...Object.values(set), this.ctx.clock.now()]),
    );
  }

  async importProgress(shopId: string): Promise<ImportProgress | null> {
    const row = await this.installation(shopId);
    if (!row) return null;
    return {
      status: row.importStatus,
      mode: row.importMode,
      imported: row.importDone,
      total: row.importTotal,
      startedAt: row.importStartedAt?.toISOString() ?? null,
      finishedAt: row.importFinishedAt?.toISOString() ?? null,
      error: row.importError,
    };
  }
}

function usable(nodes: PlatformContract[]): MirroredContract[] {
  const out: MirroredContract[] = [];
  for (const n of nodes) {
    const f = mirrorFields(n);
    if (f) out.push(f);
  }
  return out;
}
