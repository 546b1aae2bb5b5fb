import { Badge, BlockStack, Button, IndexTable, InlineStack, Link, Text, useBreakpoints } from '@shopify/polaris';
import { useCallback, useEffect, useState } from 'react';
import { ApiError, type BillingAttempt, type ContractView } from '../api';
import { ATTEMPT_STATUS_LABEL, ATTEMPT_STATUS_TONE, errorLabel, TRIGGER_LABEL } from '../billingText';
import { ErrorBanner } from '../components/ErrorBanner';
import { CondensedCell, DateTimeCell, WrappingCell } from '../components/TableCells';
import { useAdminApi } from '../context';
import { formatDate, formatDateTime } from '../format';
import { formatMoney, formatPrice } from '../money';

/** What became of an attempt, in a line or two: the order it made, why it failed, or what the customer must do. */
function Outcome({ a }: { a: BillingAttempt }) {
  if (a.status === 'succeeded' && a.order) {
    return (
      <Text as="span">
        Order {a.order.name} · {formatMoney(a.order.amount, a.order.currencyCode)}
      </Text>
    );
  }
  if (a.status === 'failed') {
    return (
      <BlockStack gap="050">
        <Text as="span" fontWeight="semibold">
          {a.errorCode ? errorLabel(a.errorCode) : 'Failed'}
          {a.platformErrorCode ? ` (${a.platformErrorCode})` : ''}
        </Text>
        {a.errorMessage && (
          <Text as="span" variant="bodySm" tone="subdued">
            {a.errorMessage}
          </Text>
        )}
      </BlockStack>
    );
  }
  if (a.status === 'action_required') {
    return (
      <Text as="span">
        The customer must confirm the payment
        {a.nextActionUrl && (
          <>
            {' '}
            (<Link url={a.nextActionUrl} external>
              their confirmation page
            </Link>
            )
          </>
        )}
      </Text>
    );
  }
  return (
    <Text as="span" tone="subdued">
      Waiting for the payment's outcome
    </Text>
  );
}

const status = (a: BillingAttempt) => <Badge tone={ATTEMPT_STATUS_TONE[a.status]}>{ATTEMPT_STATUS_LABEL[a.status]}</Badge>;
const attemptText = (a: BillingAttempt) => `Attempt ${a.attempt} · ${TRIGGER_LABEL[a.trigger]}`;

/**
 * The contract's billing attempts, newest first, ten at a time: the cycle, the attempt's number and what started it,
 * its outcome (the order, or the failure with the payment provider's own code and message), the amount and when. It
 * reads them again whenever the contract changes (`version`), so an outcome shows as soon as the page has it.
 */
export function BillingAttempts({ contract: c }: { contract: ContractView }) {
  const { api } = useAdminApi();
  const { smDown } = useBreakpoints();
  const [attempts, setAttempts] = useState<BillingAttempt[] | null>(null);
  const [nextCursor, setNextCursor] = useState<string | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [loading, setLoading] = useState(false);

  const load = useCallback(
    async (cursor?: string) => {
      setLoading(true);
      setError(null);
      try {
        const res = await api.billingAttempts(c.id, cursor);
        setAttempts((shown) => (cursor ? [...(shown ?? []), ...res.billingAttempts] : res.billingAttempts));
        setNextCursor(res.nextCursor);
      } catch (err) {
        setError(err instanceof ApiError ? err : new ApiError(0, 'unexpected', String(err), null));
      } finally {
        setLoading(false);
      }
    },
    [api, c.id],
  );
  // The contract's version: a new attempt or outcome changes it.
  const version = `${c.updatedAt}|${c.billing?.lastAttempt?.id ?? ''}|${c.billing?.lastAttempt?.status ?? ''}`;
  useEffect(() => {
    void load();
  }, [load, version]);

  if (!attempts) return <ErrorBanner error={error} title="The billing attempts could not be loaded" />;
  if (attempts.length === 0) {
    return (
      <Text as="p" tone="subdued">
        No billing attempts yet: the first is made on the next billing date.
      </Text>
    );
  }
  const rows = attempts.map((a, i) =>
    smDown ? (
      <IndexTable.Row id={a.id} key={a.id} position={i}>
        <CondensedCell>
          <BlockStack gap="100">
            <InlineStack align="space-between" blockAlign="center" gap="200">
              <Text as="span" fontWeight="semibold">
                Cycle of {formatDate(a.cycleDate)}
              </Text>
              {status(a)}
            </InlineStack>
            <Text as="p" variant="bodySm" tone="subdued">
              {attemptText(a)} · {formatPrice(a.amount)}
            </Text>
            <Outcome a={a} />
            <Text as="p" variant="bodySm" tone="subdued">
              Made {formatDateTime(a.createdAt)}
              {a.completedAt ? ` · settled ${formatDateTime(a.completedAt)}` : ''}
            </Text>
          </BlockStack>
        </CondensedCell>
      </IndexTable.Row>
    ) : (
      <IndexTable.Row id={a.id} key={a.id} position={i}>
        <IndexTable.Cell>
          <Text as="span">{formatDate(a.cycleDate)}</Text>
          <br />
          <Text as="span" variant="bodySm" tone="subdued">
            {attemptText(a)}
          </Text>
        </IndexTable.Cell>
        <IndexTable.Cell>{status(a)}</IndexTable.Cell>
        <WrappingCell maxWidth="14rem">
          <Outcome a={a} />
        </WrappingCell>
        <IndexTable.Cell>
          <Text as="span" alignment="end" numeric>
            {formatPrice(a.amount)}
          </Text>
        </IndexTable.Cell>
        <DateTimeCell iso={a.createdAt} />
      </IndexTable.Row>
    ),
  );
  return (
    <BlockStack gap="200">
      <div aria-label={`Billing attempts of contract ${c.id}`} role="region">
        <IndexTable
          condensed={smDown}
          selectable={false}
          resourceName={{ singular: 'billing attempt', plural: 'billing attempts' }}
          itemCount={attempts.length}
          headings={[{ title: 'Cycle' }, { title: 'Status' }, { title: 'Outcome' }, { title: 'Amount', alignment: 'end' }, { title: 'Made' }]}
        >
          {rows}
        </IndexTable>
      </div>
      <ErrorBanner error={error} title="The billing attempts could not be loaded" onDismiss={() => setError(null)} />
      {nextCursor && (
        <InlineStack>
          <Button onClick={() => void load(nextCursor)} loading={loading}>
            Load older attempts
          </Button>
        </InlineStack>
      )}
    </BlockStack>
  );
}
