import { Banner, BlockStack, InlineStack, ProgressBar, Spinner, Text } from '@shopify/polaris';
import { useEffect, useState } from 'react';
import type { ImportProgress } from '../api';
import { useAdminApi } from '../context';

/** How often the page asks for the import's progress while it runs. */
const POLL_MS = 2_000;
/**
 * A failed import is retried by the server (the next admin request or reconciliation takes it up again), so the page
 * only looks again now and then, to notice when it got through.
 */
const FAILED_POLL_MS = 30_000;
/** After a failed request for the progress: the list shows its own errors; this just tries again later. */
const ERROR_POLL_MS = 10_000;

export type ImportState = {
  /** null: standalone mode, or the shop has no installation yet. */
  progress: ImportProgress | null;
  /** The import completed while this page was open (not on an earlier visit). */
  finishedHere: boolean;
};

/**
 * Platform mode (docs/product.md §9): the install imports every contract of the shop, which can take minutes for a large
 * store. Polls the shop's import progress until it completes; once completed, nothing more is asked.
 */
export function useImportProgress(): ImportState {
  const { api } = useAdminApi();
  const [state, setState] = useState<ImportState>({ progress: null, finishedHere: false });

  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let sawUnfinished = false;
    const tick = async () => {
      let next = POLL_MS;
      try {
        const info = await api.shop();
        if (stopped) return;
        const progress = info.platform?.import ?? null;
        const done = !progress || progress.status === 'completed';
        setState({ progress, finishedHere: done && sawUnfinished && progress !== null });
        if (done) return;
        sawUnfinished = true;
        if (progress.status === 'failed') next = FAILED_POLL_MS;
      } catch {
        if (stopped) return;
        // A 401 already ended the session (the api shows the session page); anything else is tried again.
        next = ERROR_POLL_MS;
      }
      timer = setTimeout(() => void tick(), next);
    };
    void tick();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [api]);

  return state;
}

const count = (n: number) => `${n.toLocaleString('en-US')} ${n === 1 ? 'contract' : 'contracts'}`;

/** The import as the merchant sees it: under way (with how far it got), failed (and retried), or just finished. */
export function ImportBanner({ state, onDismiss }: { state: ImportState; onDismiss: () => void }) {
  const p = state.progress;
  if (!p) return null;

  if (p.status === 'completed') {
    if (!state.finishedHere) return null;
    return (
      <Banner tone="success" title="Import finished" onDismiss={onDismiss}>
        <p>All {count(p.imported)} of this store are here, and changes made in Shopify from now on show up as they happen.</p>
      </Banner>
    );
  }

  if (p.status === 'failed') {
    return (
      <Banner tone="warning" title="The import of your contracts stopped">
        <BlockStack gap="200">
          <p>
            It is retried automatically, so nothing needs to be done:{' '}
            {p.imported > 0
              ? `the ${count(p.imported)} imported so far are listed below, and the rest follow once the import gets through.`
              : 'the contracts appear here once the import gets through.'}
          </p>
          <Text as="p" variant="bodySm" tone="subdued">
            Last error: {p.error ?? 'the import could not be completed.'}
          </Text>
        </BlockStack>
      </Banner>
    );
  }

  const known = p.total !== null && p.total > 0;
  const percent = known ? Math.min(100, Math.round((p.imported / p.total!) * 100)) : 0;
  let summary: string;
  if (p.status === 'pending') summary = 'The import starts in a moment.';
  else if (known) summary = `${p.imported.toLocaleString('en-US')} of ${count(p.total!)} imported`;
  else if (p.mode === 'bulk' && p.imported === 0) summary = 'Shopify is preparing every contract of the store for the import.';
  else summary = `${count(p.imported)} imported so far`;
  const how =
    p.mode === 'bulk'
      ? 'A large store is read with a bulk operation on Shopify, which can take a few minutes.'
      : p.mode === 'paged'
        ? 'Contracts are read from Shopify page by page.'
        : null;

  return (
    <Banner tone="info" title="Importing your subscription contracts from Shopify">
      <BlockStack gap="300">
        {known ? (
          <BlockStack gap="100">
            <Text as="p" id="import-summary" fontWeight="semibold">
              {summary}
            </Text>
            <ProgressBar progress={percent} size="small" tone="primary" ariaLabelledBy="import-summary" />
          </BlockStack>
        ) : (
          <InlineStack gap="200" blockAlign="center" wrap={false}>
            <Spinner size="small" accessibilityLabel="Importing" />
            <Text as="p" fontWeight="semibold">
              {summary}
            </Text>
          </InlineStack>
        )}
        <p>
          {how ? `${how} ` : ''}The contracts already imported are listed below and the list fills in as the import goes
          on; you can keep using the app meanwhile.
        </p>
      </BlockStack>
    </Banner>
  );
}
