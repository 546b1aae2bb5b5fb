import { Badge, BlockStack, Button, Card, InlineGrid, InlineStack, Layout, Page, SkeletonBodyText, SkeletonPage, Text, Toast, useBreakpoints } from '@shopify/polaris';
import { useCallback, useEffect, useRef, useState } from 'react';
import { ApiError, type ContractDetail } from '../api';
import { ErrorBanner } from '../components/ErrorBanner';
import { useAdminApi } from '../context';
import { formatDateTime, STATUS_LABEL, STATUS_TONE } from '../format';
import { ContractActions } from './ContractActions';
import { ContractEditCard } from './ContractEdit';
import { BillingCard, CustomerCard, DiscountsCard, ProductsCard, ShippingAddressCard } from './ContractDetails';
import { ContractHistory } from './ContractHistory';
import { lastContractsListUrl } from './ContractsPage';

const PENDING_POLL_MS = 2_000;
const PENDING_POLL_LIMIT = 30;
const asApiError = (err: unknown) => (err instanceof ApiError ? err : new ApiError(0, 'unexpected', String(err), null));

/**
 * One contract: its status, customer, billing and delivery, products, address, discounts, totals and history, and
 * the actions its status allows (the server says which). After an action the page shows the contract as it is now,
 * with the new event at the top of its history.
 */
export function ContractPage({ contractId }: { contractId: string }) {
  const { api } = useAdminApi();
  // Two columns from a laptop's width up; below, one column with the actions first.
  const wide = useBreakpoints().lgUp;
  const [detail, setDetail] = useState<ContractDetail | null>(null);
  const [loadError, setLoadError] = useState<ApiError | null>(null);
  const [toast, setToast] = useState<string | null>(null);

  const load = useCallback(async () => {
    try {
      setDetail(await api.contract(contractId));
      setLoadError(null);
    } catch (err) {
      setLoadError(asApiError(err));
    }
  }, [api, contractId]);
  useEffect(() => {
    void load();
  }, [load]);
  // While a billing attempt awaits its outcome (it comes from the payment provider a moment later), the page looks
  // again every few seconds, for a minute at most, so the outcome shows without a reload.
  const pendingAttempt = detail?.contract.billing?.lastAttempt?.status === 'pending' ? detail.contract.billing.lastAttempt.id : null;
  const polls = useRef(0);
  useEffect(() => {
    polls.current = 0;
  }, [pendingAttempt]);
  useEffect(() => {
    if (!pendingAttempt || polls.current >= PENDING_POLL_LIMIT) return;
    const timer = setTimeout(() => {
      polls.current++;
      void load();
    }, PENDING_POLL_MS);
    return () => clearTimeout(timer);
  }, [pendingAttempt, detail, load]);

  const back = { content: 'Contracts', url: lastContractsListUrl };
  const title = `Contract #${contractId}`;

  if (!detail) {
    if (loadError) {
      const missing = loadError.code === 'not_found' || loadError.code === 'invalid_request';
      return (
        <Page title={title} backAction={back}>
          <BlockStack gap="400">
            {missing ? (
              <Card>
                <BlockStack gap="200">
                  <Text as="h2" variant="headingMd">
                    This contract does not exist
                  </Text>
                  <Text as="p">No subscription contract #{contractId} belongs to this store. Find it by its customer on the Contracts page.</Text>
                </BlockStack>
              </Card>
            ) : (
              <>
                <ErrorBanner error={loadError} title="The contract could not be loaded" />
                <InlineStack>
                  <Button onClick={() => void load()}>Try again</Button>
                </InlineStack>
              </>
            )}
          </BlockStack>
        </Page>
      );
    }
    return (
      <SkeletonPage title={title} backAction>
        <Layout>
          <Layout.Section>
            <Card>
              <SkeletonBodyText lines={6} />
            </Card>
          </Layout.Section>
          <Layout.Section variant="oneThird">
            <Card>
              <SkeletonBodyText lines={4} />
            </Card>
          </Layout.Section>
        </Layout>
      </SkeletonPage>
    );
  }

  const c = detail.contract;
  const done = (message: string) => {
    setToast(message);
    return load();
  };
  const billing = <BillingCard contract={c} resume={detail.resume} />;
  const products = <ProductsCard contract={c} />;
  const actions = (
    <>
      <ContractActions contract={c} allowed={detail.allowedActions} lastBilled={detail.lastBilled} resume={detail.resume} onDone={done} onStale={load} />
      {detail.editable && <ContractEditCard contract={c} onDone={done} />}
    </>
  );
  const lineTitles = new Map(c.lines.filter((l) => l.id).map((l) => [l.id!, l.title]));
  const about = (
    <>
      <CustomerCard contract={c} />
      <ShippingAddressCard contract={c} />
      <DiscountsCard contract={c} />
    </>
  );
  const history = (
    <Card>
      <BlockStack gap="300">
        <Text as="h2" variant="headingMd">
          History
        </Text>
        <ContractHistory contractId={c.id} events={detail.events} nextCursor={detail.eventsNextCursor} lineTitle={(id) => lineTitles.get(id)} />
      </BlockStack>
    </Card>
  );
  return (
    <Page
      title={title}
      titleMetadata={
        <span data-testid="contract-status">
          <Badge tone={STATUS_TONE[c.status]}>{STATUS_LABEL[c.status]}</Badge>
        </span>
      }
      subtitle={`${c.customer.email} · since ${formatDateTime(c.createdAt)}`}
      backAction={back}
    >
      <BlockStack gap="400">
        {loadError && <ErrorBanner error={loadError} title="The contract could not be refreshed" onDismiss={() => setLoadError(null)} />}
        {wide ? (
          <InlineGrid columns={['twoThirds', 'oneThird']} gap="400" alignItems="start">
            <BlockStack gap="400">
              {billing}
              {products}
              {history}
            </BlockStack>
            <BlockStack gap="400">
              {actions}
              {about}
            </BlockStack>
          </InlineGrid>
        ) : (
          // One column: what the merchant came to do first, the history last.
          <BlockStack gap="400">
            {actions}
            {billing}
            {products}
            {about}
            {history}
          </BlockStack>
        )}
      </BlockStack>
      {toast && <Toast content={toast} onDismiss={() => setToast(null)} />}
    </Page>
  );
}
