import { ServiceError } from '../../domain/errors.js';
import type { ServiceContext } from '../../services/context.js';
import type { ShopifyAdmin, ShopRef } from './admin.js';
import * as doc from './documents.js';
import type { ShopifyInstaller } from './install.js';
import { eraseShop } from '../../services/privacy.js';
import { deleteShopOAuthGrants } from '../../db/privacy.js';

/**
 * The destructive topics, acted on only once the platform confirms them. Their headers are not signed, and their
 * bodies say nothing a replay could not say again (the shop resource; shop_id and shop_domain), so the platform's
 * answer about the shop's own token is what decides:
 *
 * - app/uninstalled: the tokens are deleted and the keys switched off only when the platform refuses the shop's
 *   access token; a platform that answers means the app is still installed, and the webhook is forged or stale;
 * - shop/redact: every row of the shop is deleted only for a shop whose uninstall svc has confirmed (the platform
 *   sends it 48 hours after the uninstall: https://shopify.dev/docs/apps/build/compliance/privacy-law-compliance).
 *   One whose app/uninstalled never came, or was not confirmed, is confirmed here the same way.
 *
 * A platform svc cannot reach, or that fails, throws platform_unavailable: the inbox tries the delivery again later,
 * and nothing is done unconfirmed.
 */

export type UninstallDeps = { ctx: ServiceContext; admin: ShopifyAdmin; installer: ShopifyInstaller };
export type InstalledShop = ShopRef & { uninstalledAt: Date | null };
/** What a destructive delivery came to: acted on, or not (a warning says why). */
export type DestructiveOutcome = 'done' | 'ignored';

/**
 * What the platform says of the shop's installation: `installed` (it answered a call made with the shop's stored
 * token), `uninstalled` (it refused the token, and then its refresh: ShopifyAdmin keeps that refusal as
 * access_refused_at, also when another call met it first and svc has no token left), or `unknown` (svc holds no
 * token and no refusal is on record: nothing can ask).
 */
export async function askPlatformIfInstalled(deps: UninstallDeps, shop: ShopRef): Promise<'installed' | 'uninstalled' | 'unknown'> {
  try {
    await deps.admin.graphql(shop, doc.APP_INSTALLATION);
    return 'installed';
  } catch (err) {
    if (!(err instanceof ServiceError && err.code === 'app_not_installed')) throw err;
  }
  const row = await deps.installer.installation(shop.id);
  return row?.accessRefusedAt ? 'uninstalled' : 'unknown';
}

/**
 * app/uninstalled, once confirmed: the shop is marked uninstalled (its keys answer 403), its platform tokens deleted and
 * its OAuth connections ended.
 */
export async function applyUninstall(deps: UninstallDeps, shop: InstalledShop, w: { webhookId: string; triggeredAt: Date | null }): Promise<DestructiveOutcome> {
  if (shop.uninstalledAt) return 'ignored'; // confirmed already: a repeat
  const row = await deps.installer.installation(shop.id);
  // A late uninstall from before the latest install changes nothing (and needs no call).
  if (w.triggeredAt && row?.accessToken && w.triggeredAt.getTime() < row.installedAt.getTime()) return 'ignored';
  if (!(await confirmed(deps, shop, 'app/uninstalled', w.webhookId))) return 'ignored';
  await deps.ctx.db.transaction(async (run) => {
    await run(`UPDATE shops SET uninstalled_at = $2, updated_at = $2 WHERE id = $1`, [shop.id, deps.ctx.clock.now()]);
    await deps.admin.forgetTokens(shop.id, run);
    await deleteShopOAuthGrants(run, shop.id);
  });
  return 'done';
}

/** shop/redact, for a shop whose uninstall is confirmed: every row of the shop is deleted. */
export async function applyShopRedact(deps: UninstallDeps, shop: InstalledShop, w: { webhookId: string }): Promise<DestructiveOutcome> {
  if (!shop.uninstalledAt && !(await confirmed(deps, shop, 'shop/redact', w.webhookId))) return 'ignored';
  await eraseShop(deps.ctx, shop.id, shop.domain);
  deps.admin.forgetCachedToken(shop.id);
  return 'done';
}

async function confirmed(deps: UninstallDeps, shop: ShopRef, topic: string, webhookId: string): Promise<boolean> {
  const state = await askPlatformIfInstalled(deps, shop);
  if (state === 'uninstalled') return true;
  deps.ctx.warn?.(
    { shop: shop.domain, topic, webhookId },
    state === 'installed'
      ? 'platform webhook not acted on: the platform answers with the shop’s token, so the app is still installed (a forged or stale delivery)'
      : 'platform webhook not acted on: svc holds no token for the shop and no refusal by the platform is on record, so nothing confirms the uninstall',
  );
  return false;
}
