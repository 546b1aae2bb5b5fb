import { Banner, BlockStack, Button, InlineStack } from '@shopify/polaris';
import { useCallback, useEffect, useRef, useState } from 'react';
import { ApiError, type ShopInfo } from '../api';
import { useAdminApi } from '../context';

const asApiError = (err: unknown) => (err instanceof ApiError ? err : new ApiError(0, 'unexpected', String(err), null));

/**
 * The platform's confirmation page cannot be shown inside the shop admin's frame, so it replaces the whole window:
 * embedded, App Bridge turns `open(url, '_top')` into a navigation of the admin itself; standalone, the tab goes there.
 */
export function openTopLevel(url: string): void {
  if (window.shopify) window.open(url, '_top');
  else window.location.assign(url);
}

/**
 * "Upgrade to Enterprise" (docs/product.md §9): the server creates the app subscription on the platform and answers the
 * page where the merchant approves it. The button stays busy after that, while the window leaves for that page.
 */
export function useUpgrade() {
  const { api } = useAdminApi();
  const [upgrading, setUpgrading] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const upgrade = useCallback(async () => {
    setUpgrading(true);
    setError(null);
    try {
      const { confirmationUrl } = await api.upgrade();
      openTopLevel(confirmationUrl);
    } catch (err) {
      setError(asApiError(err));
      setUpgrading(false);
    }
  }, [api]);
  return { upgrade, upgrading, error, clearError: () => setError(null) };
}

/** How long the page waits, after the merchant approved, for the platform to confirm the subscription to svc. */
const CONFIRM_POLL_MS = 2_000;
const CONFIRM_TRIES = 30;

export type ReturnState = 'none' | 'confirming' | 'confirmed' | 'unconfirmed' | 'declined';

/** A subscription in one of these will not turn API access on: the page says so instead of waiting. */
const NOT_APPROVED = new Set(['DECLINED', 'EXPIRED', 'CANCELLED']);

/**
 * Back from the platform's confirmation page (`?charge_id=…`): the page asks svc what became of that subscription.
 * Declined (or expired), it says so at once. Approved, svc reads the plan again and API access is on; the platform's
 * webhook saying so may also come a moment later, so until then the page says the upgrade is being confirmed and
 * asks again every few seconds. Once settled (or the wait is over) the charge id leaves the address bar, so a reload
 * is an ordinary visit.
 */
export function useUpgradeReturn(shop: ShopInfo | null, onShop: (s: ShopInfo) => void) {
  const { api } = useAdminApi();
  const [state, setState] = useState<ReturnState>(() =>
    new URLSearchParams(window.location.search).has('charge_id') ? 'confirming' : 'none',
  );
  const [round, setRound] = useState(0);
  const [chargeId] = useState(() => new URLSearchParams(window.location.search).get('charge_id'));
  const onShopRef = useRef(onShop);
  onShopRef.current = onShop;
  const allowed = shop?.shop.apiAccess.allowed ?? false;
  const loaded = shop !== null;

  useEffect(() => {
    if (state !== 'confirming' || !loaded) return;
    if (allowed) {
      setState('confirmed');
      forgetChargeId();
      return;
    }
    let stopped = false;
    let tries = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = async () => {
      tries++;
      try {
        if (chargeId && /^\d{1,19}$/.test(chargeId)) {
          const outcome = await api.upgradeOutcome(chargeId).catch(() => null);
          if (stopped) return;
          if (outcome && NOT_APPROVED.has(outcome.status)) {
            setState('declined');
            forgetChargeId();
            return;
          }
        }
        const s = await api.shop();
        if (stopped) return;
        if (s.shop.apiAccess.allowed) {
          onShopRef.current(s); // the effect runs again with access allowed and settles the state
          return;
        }
      } catch {
        // the next round asks again; the page's own load shows lasting failures
      }
      if (stopped) return;
      if (tries >= CONFIRM_TRIES) {
        setState('unconfirmed');
        forgetChargeId();
        return;
      }
      timer = setTimeout(() => void tick(), CONFIRM_POLL_MS);
    };
    timer = setTimeout(() => void tick(), tries === 0 && round === 0 ? 0 : CONFIRM_POLL_MS);
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [api, state, loaded, allowed, round, chargeId]);

  const checkAgain = () => {
    setState('confirming');
    setRound((r) => r + 1);
  };
  return { state, dismiss: () => setState('none'), checkAgain };
}

function forgetChargeId(): void {
  const url = new URL(window.location.href);
  if (!url.searchParams.has('charge_id')) return;
  url.searchParams.delete('charge_id');
  window.history.replaceState(window.history.state, '', url.pathname + url.search + url.hash);
}

/** What happened to the upgrade the merchant just approved (or declined) on the platform. */
export function UpgradeReturnBanner({ state, onDismiss, onCheckAgain }: { state: ReturnState; onDismiss: () => void; onCheckAgain: () => void }) {
  if (state === 'confirming') {
    return (
      <Banner tone="info" title="Confirming your Enterprise subscription with Shopify">
        <p>API access turns on as soon as Shopify confirms the subscription you approved, usually within a few seconds.</p>
      </Banner>
    );
  }
  if (state === 'confirmed') {
    return (
      <Banner tone="success" title="The Enterprise plan is active" onDismiss={onDismiss}>
        <p>API access is on: generate a key below. Keys the store already had work again.</p>
      </Banner>
    );
  }
  if (state === 'declined') {
    return (
      <Banner tone="warning" title="The Enterprise subscription was not approved" onDismiss={onDismiss}>
        <p>Nothing changed: the store stays on its plan, and you can upgrade again at any time.</p>
      </Banner>
    );
  }
  if (state === 'unconfirmed') {
    return (
      <Banner tone="warning" title="Shopify has not confirmed the subscription yet" onDismiss={onDismiss}>
        <BlockStack gap="200">
          <p>
            If you approved it, API access turns on as soon as Shopify confirms it. If you declined it, nothing changed and
            you can upgrade again at any time.
          </p>
          <InlineStack>
            <Button onClick={onCheckAgain}>Check again</Button>
          </InlineStack>
        </BlockStack>
      </Banner>
    );
  }
  return null;
}
