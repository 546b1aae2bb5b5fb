import type { Shopify } from '../platform/shopify/index.js';
import type { ServiceContext } from '../services/context.js';
import { knownShop } from './io.js';

/** `platform status`: a shop's platform state as the database holds it, and its lines for a person. */

export type PlatformStatus = {
  shop: string;
  installed: boolean;
  installedAt: string | null;
  uninstalledAt: string | null;
  plan: string;
  accessToken: { stored: boolean; expiresAt: string | null; decrypts: boolean | null };
  refreshToken: { stored: boolean; expiresAt: string | null };
  scopes: string | null;
  webhooksRegisteredAt: string | null;
  import: { status: string; mode: string | null; imported: number; total: number | null; startedAt: string | null; finishedAt: string | null; error: string | null } | null;
  lastSyncAt: string | null;
};

const iso = (d: Date | null | undefined) => (d ? new Date(d).toISOString() : null);

/** The shop's platform state as the database holds it; the tokens themselves are never read out, only whether they open. */
export async function platformStatus(ctx: ServiceContext, shopify: Shopify, domain: string): Promise<PlatformStatus> {
  const shop = await knownShop(ctx, domain);
  const row = await shopify.installer.installation(shop.id);
  const progress = await shopify.installer.importProgress(shop.id);
  return {
    shop: shop.domain,
    installed: !!row?.accessToken && !shop.uninstalledAt,
    installedAt: iso(row?.installedAt),
    uninstalledAt: iso(shop.uninstalledAt),
    plan: shop.plan,
    accessToken: {
      stored: !!row?.accessToken,
      expiresAt: iso(row?.accessTokenExpiresAt),
      decrypts: row?.accessToken ? shopify.admin.cipher.open(row.accessToken, shop.id) !== null : null,
    },
    refreshToken: { stored: !!row?.refreshToken, expiresAt: iso(row?.refreshTokenExpiresAt) },
    scopes: row?.scopes ?? null,
    webhooksRegisteredAt: iso(row?.webhooksRegisteredAt),
    import: progress,
    lastSyncAt: iso(row?.lastSyncAt),
  };
}

/** "in 59 min" / "3 h ago": how far a moment is from now, roughly. */
function relative(at: string, now: Date): string {
  const ms = new Date(at).getTime() - now.getTime();
  const abs = Math.abs(ms);
  const span =
    abs < 90_000 ? `${Math.round(abs / 1000)} s` : abs < 90 * 60_000 ? `${Math.round(abs / 60_000)} min` : abs < 36 * 3_600_000 ? `${Math.round(abs / 3_600_000)} h` : `${Math.round(abs / 86_400_000)} days`;
  return ms >= 0 ? `in ${span}` : `${span} ago`;
}

export function describeStatus(s: PlatformStatus, now: Date): string[] {
  const when = (at: string | null) => (at ? `${at} (${relative(at, now)})` : '');
  const state = s.uninstalledAt
    ? `uninstalled ${when(s.uninstalledAt)}: keys answer 403 app_not_installed until the shop opens the app again`
    : s.installed
      ? `installed ${when(s.installedAt)}`
      : s.installedAt
        ? 'not installed: svc holds no access token (the shop opens the app to install it again)'
        : 'not installed: the shop has not opened the app since platform mode was turned on';
  const token = !s.accessToken.stored
    ? 'none'
    : `${s.accessToken.expiresAt ? `expires ${when(s.accessToken.expiresAt)}` : 'does not expire'}; ` +
      (s.accessToken.decrypts ? 'opens with this TOKEN_ENCRYPTION_KEY' : 'does NOT open with this TOKEN_ENCRYPTION_KEY (is it the server’s?)');
  const imp = s.import;
  const importLine = !imp
    ? 'not started'
    : [
        `${imp.status}${imp.mode ? ` (${imp.mode})` : ''}, ${imp.imported}${imp.total !== null ? `/${imp.total}` : ''} contracts`,
        imp.startedAt ? `started ${imp.startedAt}` : null,
        imp.finishedAt ? `finished ${imp.finishedAt}` : null,
        imp.error ? `error: ${imp.error}` : null,
      ]
        .filter(Boolean)
        .join(', ');
  const rows: [string, string][] = [
    ['Shop', s.shop],
    ['State', state],
    ['Plan', `${s.plan}${s.plan === 'enterprise' ? ' (API access)' : ''}`],
    ['Access token', token],
    ['Refresh token', !s.refreshToken.stored ? 'none' : s.refreshToken.expiresAt ? `expires ${when(s.refreshToken.expiresAt)}` : 'does not expire'],
    ['Scopes', s.scopes ?? ''],
    ['Webhooks', s.webhooksRegisteredAt ? `registered ${when(s.webhooksRegisteredAt)}` : 'not registered'],
    ['Import', importLine],
    ['Last reconciliation', s.lastSyncAt ? when(s.lastSyncAt) : 'never'],
  ];
  const width = Math.max(...rows.map(([k]) => k.length)) + 1;
  return rows.map(([k, v]) => `${`${k}:`.padEnd(width + 1)}${v}`);
}
