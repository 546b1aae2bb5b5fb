import { Banner, Text } from '@shopify/polaris';
import { useEffect, useRef, type ReactNode } from 'react';
import type { ApiError } from '../api';

/**
 * Shows an API failure as the server worded it, with the code and request id support needs. Polaris gives a critical
 * banner role="alert", so it is announced; `takeFocus` also moves focus to it (used inside dialogs).
 */
export function ErrorBanner({
  error,
  title,
  onDismiss,
  takeFocus = false,
  children,
}: {
  error: ApiError | null;
  title: string;
  onDismiss?: () => void;
  takeFocus?: boolean;
  /** More about the failure, in the page's words (a refused edit's operations). */
  children?: ReactNode;
}) {
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (error && takeFocus) ref.current?.querySelector<HTMLElement>('[role="alert"]')?.focus();
  }, [error, takeFocus]);
  if (!error) return null;
  return (
    <div ref={ref}>
      <Banner tone="critical" title={title} onDismiss={onDismiss}>
        <p>{error.message}</p>
        {children}
        <Text as="p" variant="bodySm" tone="subdued">
          {error.status ? `HTTP ${error.status} · ` : ''}
          {error.code}
          {error.requestId ? ` · request ${error.requestId}` : ''}
        </Text>
      </Banner>
    </div>
  );
}
