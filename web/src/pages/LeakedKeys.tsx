import { Banner, BlockStack, Link, List, Text } from '@shopify/polaris';
import { useState } from 'react';
import type { ApiKey } from '../api';
import { formatDateTime } from '../format';
import { keyLabel } from './keyLabel';

/** Only a web address is a link; anything else a report said is shown as text. */
export const isWebUrl = (url: string) => /^https?:\/\//i.test(url);

/** A web address cut to its host and the start of its path, for a table cell (the link still goes to all of it). */
export function shortPlace(url: string): string {
  try {
    const u = new URL(url);
    const place = `${u.host}${u.pathname}`;
    return place.length > 32 ? `${place.slice(0, 31)}…` : place;
  } catch {
    return url.length > 32 ? `${url.slice(0, 31)}…` : url;
  }
}

/** Where a leaked key was found: a link to the place (it opens in a new tab), its address wrapping as it must. */
export function LeakPlace({ url, label }: { url: string | null; label?: string }) {
  if (!url) return <>an unnamed place</>;
  const text = <span className="svc-wrap">{label ?? url}</span>;
  return isWebUrl(url) ? (
    <Link url={url} external>
      {text}
    </Link>
  ) : (
    text
  );
}

// Keys whose banner the merchant has dismissed, in this browser: ids only, never anything secret.
const DISMISSED = 'svc.dismissedLeakedKeys';
const readDismissed = (): string[] => {
  try {
    const v: unknown = JSON.parse(localStorage.getItem(DISMISSED) ?? '[]');
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
  } catch {
    return [];
  }
};

/**
 * The warning Settings → API shows when a key was reported found in public and revoked by itself: which key, where
 * it was found and when, and what to do. It stays until the merchant dismisses it (remembered in this browser).
 */
export function LeakedKeysBanner({ keys }: { keys: ApiKey[] }) {
  const [dismissed, setDismissed] = useState<string[]>(readDismissed);
  const leaked = keys.filter((k) => k.revokedReason === 'leaked' && !dismissed.includes(k.id));
  if (leaked.length === 0) return null;
  const dismiss = () => {
    const next = [...new Set([...dismissed, ...leaked.map((k) => k.id)])].slice(-100);
    try {
      localStorage.setItem(DISMISSED, JSON.stringify(next));
    } catch {
      // storage unavailable: dismissed for this visit only
    }
    setDismissed(next);
  };
  const title = leaked.length === 1 ? 'An API key was found in public and revoked' : `${leaked.length} API keys were found in public and revoked`;
  return (
    <Banner tone="critical" title={title} onDismiss={dismiss}>
      <BlockStack gap="200">
        <List type="bullet">
          {leaked.map((k) => (
            <List.Item key={k.id}>
              <span data-testid={`leaked-${k.id}`}>
                <Text as="span" fontWeight="semibold">
                  {keyLabel(k)}
                </Text>{' '}
                (fingerprint <span className="svc-mono">{k.fingerprint}</span>) was found at <LeakPlace url={k.leakedUrl} />
                {k.leakedAt ? ` on ${formatDateTime(k.leakedAt)}` : ''}. It was revoked at once: no request with it works any more.
              </span>
            </List.Item>
          ))}
        </List>
        <Text as="p">
          GitHub reported it through its secret scanning. Generate a new key, put it in your integration, and remove the old key from where it
          was published, history included. Anyone may have copied it meanwhile: check your contracts’ history for changes you did not make.
        </Text>
      </BlockStack>
    </Banner>
  );
}
