import { and, asc, desc, eq, gt, gte, inArray, lt, ne, or, sql } from 'drizzle-orm';
import { webhookAttempts, webhookDeliveries, type WebhookAttemptRow, type WebhookDeliveryRow } from '../db/schema.js';
import { parseInput, ServiceError } from '../domain/errors.js';
import { decodeCursor, PAGE_LIMIT, toPage } from '../domain/paging.js';
import { fitsInt8 } from '../domain/ids.js';
import { iso, parseUtcTimestamp, UtcTimestamp } from '../domain/time.js';
import { isShopEventType, messageId, testEvent, WEBHOOK_EVENT_TYPES, type KeyLeakedData, type ShopEventType, type WebhookDelivery } from '../domain/webhooks.js';
import { z } from 'zod';
import type { ShopPrincipal } from './principal.js';
import type { ServiceCall } from './context.js';
import { endpointRow } from './webhookEndpoints.js';

/** The delivery log of an endpoint, resending, and test events (docs/product.md §10). */

/** `idle`: its endpoint is disabled (no attempt is planned, whatever the row says). */
function toDelivery(row: WebhookDeliveryRow, attempts: WebhookAttemptRow[], idle = false): WebhookDelivery {
  // A delivery of a disabled endpoint is parked at 'infinity' (migration 0009), which no Date holds.
  const planned = !idle && row.status !== 'succeeded' && row.status !== 'failed' && Number.isFinite(row.nextAttemptAt.getTime());
  return {
    id: row.id,
    webhookId: messageId(row.id),
    type: row.type,
    contractId: row.contractId,
    eventId: row.eventId,
    version: row.test ? 0 : row.contractVersion,
    test: row.test,
    status: row.status,
    // Every attempt ever made, resends included (the row's own count restarts the retry schedule at a resend).
    attempts: attempts.length,
    nextAttemptAt: planned ? row.nextAttemptAt.toISOString() : null,
    createdAt: row.createdAt.toISOString(),
    finishedAt: iso(row.finishedAt),
    attemptLog: attempts.map((a) => ({ at: a.at.toISOString(), statusCode: a.statusCode, durationMs: a.durationMs, error: a.error, responseBody: a.responseBody })),
  };
}

/** An endpoint's deliveries, newest first, each with its attempts (oldest first). */
export async function listWebhookDeliveries({
  ctx,
  input,
}: ServiceCall<{ principal: ShopPrincipal; endpointId: string; limit?: number; cursor?: string }>): Promise<{ deliveries: WebhookDelivery[]; nextCursor: string | null }> {
  const endpoint = await endpointRow(ctx, input.principal, input.endpointId);
  const limit = input.limit ?? PAGE_LIMIT.default;
  const before = input.cursor ? decodeCursor(input.cursor) : null;
  const rows = await ctx.db.orm
    .select()
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.endpointId, endpoint.id), before ? lt(webhookDeliveries.id, before) : sql`true`))
    .orderBy(desc(webhookDeliveries.id))
    .limit(limit + 1);
  const ids = rows.slice(0, limit).map((r) => r.id);
  const attempts = ids.length
    ? await ctx.db.orm.select().from(webhookAttempts).where(inArray(webhookAttempts.deliveryId, ids)).orderBy(asc(webhookAttempts.id))
    : [];
  const idle = endpoint.status !== 'enabled';
  const { items, nextCursor } = toPage(rows, limit, (r) => toDelivery(r, attempts.filter((a) => a.deliveryId === r.id), idle));
  return { deliveries: items, nextCursor };
}

/**
 * Sends a delivery again, now, with the same webhook-id (a receiver that already has it can drop it) and the whole
 * retry schedule ahead of it.
 */
export async function resendWebhookDelivery({ ctx, input }: ServiceCall<{ principal: ShopPrincipal; endpointId: string; deliveryId: string }>): Promise<WebhookDelivery> {
  const endpoint = await endpointRow(ctx, input.principal, input.endpointId);
  // Ids are int8: one past it (or not digits at all) names no delivery.
  if (!fitsInt8(input.deliveryId)) throw new ServiceError('not_found', 'No delivery with this id exists for this endpoint.');
  const mine = and(eq(webhookDeliveries.id, input.deliveryId), eq(webhookDeliveries.endpointId, endpoint.id));
  // Sent again now, whatever its state, except while a send of it is in flight: that one keeps its lease (clearing
  // it would let another instance send it a second time meanwhile) and the request changes nothing.
  const now = ctx.clock.now();
  const row = await ctx.db.orm.transaction(async (tx) => {
    const [resent] = await tx
      .update(webhookDeliveries)
      .set({ status: 'pending', attempts: 0, nextAttemptAt: now, finishedAt: null, leaseUntil: null })
      .where(and(mine, or(ne(webhookDeliveries.status, 'delivering'), lt(webhookDeliveries.leaseUntil, now))))
      .returning();
    // The later deliveries of its contract that wait for it (parked until its next attempt by the dispatcher's
    // claim, migration 0009) are due again with it; they still go after it.
    if (resent?.contractId) {
      await tx
        .update(webhookDeliveries)
        .set({ nextAttemptAt: sql`least(${webhookDeliveries.nextAttemptAt}, ${now.toISOString()}::timestamptz)` })
        .where(
          and(
            eq(webhookDeliveries.endpointId, endpoint.id),
            eq(webhookDeliveries.contractId, resent.contractId),
            gt(webhookDeliveries.id, resent.id),
            eq(webhookDeliveries.status, 'pending'),
          ),
        );
    }
    return resent;
  });
  const current = row ?? (await ctx.db.orm.select().from(webhookDeliveries).where(mine))[0];
  if (!current) throw new ServiceError('not_found', 'No delivery with this id exists for this endpoint.');
  const attempts = await ctx.db.orm.select().from(webhookAttempts).where(eq(webhookAttempts.deliveryId, current.id)).orderBy(asc(webhookAttempts.id));
  return toDelivery(current, attempts, endpoint.status !== 'enabled');
}

/** Sends again every delivery that failed since `since` (what failed while an endpoint was failing). */
export async function resendFailedDeliveries({ ctx, input }: ServiceCall<{ principal: ShopPrincipal; endpointId: string; body: unknown }>): Promise<{ resent: number }> {
  const { since } = parseInput(z.strictObject({ since: UtcTimestamp.describe('Resend the deliveries that failed from this moment on.') }), input.body ?? {});
  const endpoint = await endpointRow(ctx, input.principal, input.endpointId);
  const resent = await ctx.db.orm
    .update(webhookDeliveries)
    .set({ status: 'pending', attempts: 0, nextAttemptAt: ctx.clock.now(), finishedAt: null })
    .where(and(eq(webhookDeliveries.endpointId, endpoint.id), eq(webhookDeliveries.status, 'failed'), gte(webhookDeliveries.finishedAt, parseUtcTimestamp(since)!)))
    .returning({ id: webhookDeliveries.id });
  return { resent: resent.length };
}

export const TestEventInput = z.strictObject({
  type: z.enum(WEBHOOK_EVENT_TYPES).default('contract.paused').describe('The event type of the test delivery.'),
});

/** Sample data for a test key event: the shape a receiver gets, with made-up values (and `test: true`). */
/** A shop event's test data, shaped as the real one. */
function sampleShopEvent(type: ShopEventType): Record<string, unknown> {
  if (type === 'api_key.leaked') return sampleKeyEvent();
  const at = '2026-01-01T00:00:00.000Z';
  const finished = type === 'bulk_job.finished';
  return {
    bulkJob: {
      id: '00000000-0000-4000-8000-000000000000',
      status: finished ? 'completed' : 'previewed',
      preview: true,
      selector: { filter: { status: ['ACTIVE'] } },
      change: { action: 'pause' },
      counts: { matched: 2, pending: 0, succeeded: 1, failed: 0, skipped: 1 },
      totals: [{ currencyCode: 'EUR', before: '48.00', after: '48.00' }],
      createdBy: { type: 'admin' },
      createdAt: at,
      startedAt: finished ? at : null,
      finishedAt: finished ? at : null,
      expiresAt: finished ? null : '2026-01-02T00:00:00.000Z',
    },
    test: true,
  };
}

function sampleKeyEvent(): KeyLeakedData & { test: true } {
  return {
    key: { id: '00000000-0000-4000-8000-000000000000', name: 'Test key', fingerprint: '000000000000' },
    url: 'https://github.com/octocat/hello-world/blob/0000000000000000000000000000000000000000/config.env',
    source: 'content',
    test: true,
  };
}

/** Queues a test event of any type to the endpoint, delivered, signed and logged like any other (test: true). */
export async function sendTestWebhook({ ctx, input }: ServiceCall<{ principal: ShopPrincipal; endpointId: string; body: unknown }>): Promise<WebhookDelivery> {
  const { type } = parseInput(TestEventInput, input.body ?? {});
  const endpoint = await endpointRow(ctx, input.principal, input.endpointId);
  const now = ctx.clock.now();
  const [row] = await ctx.db.orm
    .insert(webhookDeliveries)
    .values({ endpointId: endpoint.id, shopId: endpoint.shopId, type, contract: isShopEventType(type) ? sampleShopEvent(type) : testEvent(type, '0', now).contract, test: true, nextAttemptAt: now, createdAt: now })
    .returning();
  return toDelivery(row, [], endpoint.status !== 'enabled');
}
