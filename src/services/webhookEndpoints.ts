import { and, asc, count, eq, gte, sql } from 'drizzle-orm';
import { shops, webhookDeliveries, webhookEndpoints, type WebhookEndpointRow } from '../db/schema.js';
import { parseInput, ServiceError } from '../domain/errors.js';
import {
  MAX_WEBHOOK_ENDPOINTS,
  newWebhookSecret,
  SECRET_ROTATION_OVERLAP_MS,
  WebhookEndpointInput,
  WebhookEndpointPatch,
  type WebhookEndpoint,
} from '../domain/webhooks.js';
import { isUuid } from '../domain/ids.js';
import { iso } from '../domain/time.js';
import { checkEndpointUrl } from '../webhooks/addressGuard.js';
import type { ShopPrincipal } from './principal.js';
import type { ServiceCall, ServiceContext } from './context.js';

/**
 * A shop's webhook endpoints (docs/product.md §10), the same for the admin screen and the public API. One resource's verbs in
 * one file: each is a few lines over the same row and rules. Every query is scoped to the caller's shop; a change
 * is authorized by the operation that asks (domain/operations.ts).
 */

const notFound = () => new ServiceError('not_found', 'No webhook endpoint with this id exists for this shop.');

export function toWebhookEndpoint(row: WebhookEndpointRow): WebhookEndpoint {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    events: row.events,
    status: row.status,
    disabledReason: row.disabledReason,
    disabledAt: row.disabledAt?.toISOString() ?? null,
    failingSince: row.failingSince?.toISOString() ?? null,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

/** The caller's endpoint row (not_found for another shop's, or an id that cannot be one). */
export async function endpointRow(ctx: ServiceContext, principal: ShopPrincipal, id: string): Promise<WebhookEndpointRow> {
  if (!isUuid(id)) throw notFound();
  const [row] = await ctx.db.orm
    .select()
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.id, id), eq(webhookEndpoints.shopId, principal.shopId)));
  if (!row) throw notFound();
  return row;
}

/** Adds an endpoint (at most 10 per shop, under concurrency too). The secret is returned here and on rotation. */
export async function createWebhookEndpoint({ ctx, input }: ServiceCall<{ principal: ShopPrincipal; body: unknown }>): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
  const body = parseInput(WebhookEndpointInput, input.body ?? {});
  await checkEndpointUrl(body.url, ctx.webhookAddresses);
  const now = ctx.clock.now();
  return ctx.db.orm.transaction(async (tx) => {
    // The shop row is locked while the endpoints are counted: the limit holds with concurrent requests.
    await tx.select({ id: shops.id }).from(shops).where(eq(shops.id, input.principal.shopId)).for('update');
    const [{ n }] = await tx.select({ n: count() }).from(webhookEndpoints).where(eq(webhookEndpoints.shopId, input.principal.shopId));
    if (n >= MAX_WEBHOOK_ENDPOINTS) {
      throw new ServiceError('endpoint_limit_reached', `This shop already has ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints, the maximum. Delete one first.`);
    }
    const secret = newWebhookSecret();
    const [row] = await tx
      .insert(webhookEndpoints)
      .values({
        shopId: input.principal.shopId,
        url: body.url,
        description: body.description ?? null,
        events: body.events,
        status: 'enabled',
        secret,
        createdAt: now,
        updatedAt: now,
      })
      .returning();
    return { endpoint: toWebhookEndpoint(row), secret };
  });
}

export async function listWebhookEndpoints({ ctx, input }: ServiceCall<{ principal: ShopPrincipal }>): Promise<{ endpoints: WebhookEndpoint[] }> {
  const rows = await ctx.db.orm
    .select()
    .from(webhookEndpoints)
    .where(eq(webhookEndpoints.shopId, input.principal.shopId))
    .orderBy(asc(webhookEndpoints.createdAt), asc(webhookEndpoints.id));
  return { endpoints: rows.map(toWebhookEndpoint) };
}

export async function getWebhookEndpoint({ ctx, input }: ServiceCall<{ principal: ShopPrincipal; id: string }>): Promise<WebhookEndpoint> {
  return toWebhookEndpoint(await endpointRow(ctx, input.principal, input.id));
}

/**
 * Changes an endpoint's url, description, events or status. Enabling a disabled endpoint says how many deliveries
 * failed during its failing run (`resendable`), so the merchant can resend them (resendFailedDeliveries).
 */
export async function updateWebhookEndpoint({
  ctx,
  input,
}: ServiceCall<{ principal: ShopPrincipal; id: string; body: unknown }>): Promise<{ endpoint: WebhookEndpoint; resendable?: { count: number; since: string } }> {
  const patch = parseInput(WebhookEndpointPatch, input.body ?? {});
  const row = await endpointRow(ctx, input.principal, input.id);
  if (patch.url !== undefined) await checkEndpointUrl(patch.url, ctx.webhookAddresses);
  const now = ctx.clock.now();
  const set: Partial<WebhookEndpointRow> = { updatedAt: now };
  if (patch.url !== undefined) set.url = patch.url;
  if (patch.description !== undefined) set.description = patch.description;
  if (patch.events !== undefined) set.events = patch.events;
  let resendable: { count: number; since: string } | undefined;
  if (patch.status === 'disabled' && row.status === 'enabled') Object.assign(set, { status: 'disabled', disabledReason: 'manual', disabledAt: now });
  if (patch.status === 'enabled' && row.status === 'disabled') {
    Object.assign(set, { status: 'enabled', disabledReason: null, disabledAt: null, failingSince: null });
    const since = row.failingSince ?? row.disabledAt ?? now;
    const [{ n }] = await ctx.db.orm
      .select({ n: count() })
      .from(webhookDeliveries)
      .where(and(eq(webhookDeliveries.endpointId, row.id), eq(webhookDeliveries.status, 'failed'), gte(webhookDeliveries.finishedAt, since)));
    resendable = { count: n, since: since.toISOString() };
  }
  const updated = await ctx.db.orm.transaction(async (tx) => {
    const [u] = await tx.update(webhookEndpoints).set(set).where(eq(webhookEndpoints.id, row.id)).returning();
    // Enabled again: what waited while it was disabled (parked by the dispatcher's claim, migration 0009) is due
    // now. In the transaction that enables it, so a claim parks nothing after it.
    if (set.status === 'enabled') {
      await tx
        .update(webhookDeliveries)
        .set({ nextAttemptAt: now })
        .where(and(eq(webhookDeliveries.endpointId, row.id), eq(webhookDeliveries.status, 'pending'), sql`${webhookDeliveries.nextAttemptAt} = 'infinity'`));
    }
    return u;
  });
  return { endpoint: toWebhookEndpoint(updated), ...(resendable && { resendable }) };
}

/**
 * Deletes an endpoint with its delivery log (the deliveries, and their attempts with them); nothing more is sent to
 * it. A delivery that a change commits while this runs is dropped by the dispatcher's claim (migration 0010).
 */
export async function deleteWebhookEndpoint({ ctx, input }: ServiceCall<{ principal: ShopPrincipal; id: string }>): Promise<void> {
  const row = await endpointRow(ctx, input.principal, input.id);
  await ctx.db.transaction(async (run) => {
    await run('DELETE FROM webhook_deliveries WHERE endpoint_id = $1', [row.id]);
    await run('DELETE FROM webhook_endpoints WHERE id = $1', [row.id]);
  });
}

/** A new signing secret; the previous one keeps signing beside it for 24 h, so receivers can switch without a gap. */
export async function rotateWebhookSecret({ ctx, input }: ServiceCall<{ principal: ShopPrincipal; id: string }>): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
  const row = await endpointRow(ctx, input.principal, input.id);
  const now = ctx.clock.now();
  const secret = newWebhookSecret();
  const [updated] = await ctx.db.orm
    .update(webhookEndpoints)
    .set({ secret, previousSecret: row.secret, previousSecretExpiresAt: new Date(now.getTime() + SECRET_ROTATION_OVERLAP_MS), updatedAt: now })
    .where(eq(webhookEndpoints.id, row.id))
    .returning();
  return { endpoint: toWebhookEndpoint(updated), secret };
}

/** The signing secret, for the merchant on the admin screen ("reveal"); and the previous one while it still signs. */
export async function revealWebhookSecret({ ctx, input }: ServiceCall<{ principal: ShopPrincipal; id: string }>): Promise<{ secret: string; previousSecretExpiresAt: string | null }> {
  const row = await endpointRow(ctx, input.principal, input.id);
  const overlapping = row.previousSecretExpiresAt && row.previousSecretExpiresAt.getTime() > ctx.clock.now().getTime();
  return { secret: row.secret, previousSecretExpiresAt: overlapping ? iso(row.previousSecretExpiresAt) : null };
}

/** Enabled endpoints of a shop, for /metrics and the dispatcher's tests. */
export const enabledEndpointCount = async (ctx: ServiceContext, shopId: string): Promise<number> =>
  Number(
    (await ctx.db.orm.select({ n: sql<number>`count(*)` }).from(webhookEndpoints).where(and(eq(webhookEndpoints.shopId, shopId), eq(webhookEndpoints.status, 'enabled'))))[0]
      .n,
  );
