import { BlockStack, Box, Button, Card, IndexTable, InlineGrid, InlineStack, Page, SkeletonBodyText, Text, useBreakpoints } from '@shopify/polaris';
import { useCallback, useEffect, useState } from 'react';
import { ApiError, type Money, type RenewalsDay, type RenewalsOverview } from '../api';
import { errorLabel } from '../billingText';
import { ErrorBanner } from '../components/ErrorBanner';
import { CondensedCell, WrappingCell } from '../components/TableCells';
import { useAdminApi } from '../context';
import { formatMoney } from '../money';
import { ROUTES } from '../router';
import { formatDay, legendOf, RenewalsChart } from './RenewalsChart';

const DAYS = 30;
const AHEAD = 7;

const moneyText = (list: Money[]) => (list.length ? list.map((m) => formatMoney(m.amount, m.currencyCode)).join(' + ') : '—');
const failuresText = (d: RenewalsDay) => d.billed?.failedByCode.map((f) => `${errorLabel(f.errorCode)}: ${f.count}`).join(', ') ?? '';

function Figure({ label, value, detail }: { label: string; value: string; detail?: string }) {
  return (
    <Card>
      <BlockStack gap="100">
        <Text as="h3" variant="bodySm" tone="subdued">
          {label}
        </Text>
        <Text as="p" variant="headingLg" breakWord>
          {value}
        </Text>
        {detail && (
          <Text as="p" variant="bodySm" tone="subdued" breakWord>
            {detail}
          </Text>
        )}
      </BlockStack>
    </Card>
  );
}

/**
 * Renewals: what svc billed for the shop each day of the last 30 (attempts, successes, failures by code, recoveries
 * by a retry, revenue) and what is due in the next 7, as a chart with the same figures in a table below it.
 */
export function RenewalsPage() {
  const { api } = useAdminApi();
  const { smDown } = useBreakpoints();
  const [data, setData] = useState<RenewalsOverview | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [loading, setLoading] = useState(false);

  const load = useCallback(async () => {
    setLoading(true);
    setError(null);
    try {
      setData(await api.renewals({ days: DAYS, ahead: AHEAD }));
    } catch (err) {
      setError(err instanceof ApiError ? err : new ApiError(0, 'unexpected', String(err), null));
    } finally {
      setLoading(false);
    }
  }, [api]);
  useEffect(() => {
    void load();
  }, [load]);

  const title = 'Renewals';
  const subtitle = `The last ${DAYS} days and the next ${AHEAD}, by day (UTC).`;
  if (!data) {
    return (
      <Page title={title} subtitle={subtitle}>
        {error ? (
          <BlockStack gap="300">
            <ErrorBanner error={error} title="The renewals could not be loaded" />
            <InlineStack>
              <Button onClick={() => void load()}>Try again</Button>
            </InlineStack>
          </BlockStack>
        ) : (
          <Card>
            <SkeletonBodyText lines={10} />
          </Card>
        )}
      </Page>
    );
  }

  const t = data.totals;
  const empty = t.billed.attempts === 0 && t.due.renewals === 0;
  // Newest first in the table, as every list of the admin; the chart reads left to right in time.
  const rows = [...data.days].reverse();

  return (
    <Page title={title} subtitle={subtitle} secondaryActions={[{ content: 'Refresh', onAction: () => void load(), loading }]}>
      <BlockStack gap="400">
        <ErrorBanner error={error} title="The renewals could not be refreshed" onDismiss={() => setError(null)} />
        {empty ? (
          <Card>
            <BlockStack gap="200" inlineAlign="center">
              <Text as="h2" variant="headingMd">
                Nothing billed yet
              </Text>
              <Text as="p" tone="subdued" alignment="center">
                Each active contract is billed on its next billing date; its attempts and the revenue they bring show here by day. No renewal
                was billed in the last {DAYS} days and none is due in the next {AHEAD}.
              </Text>
              <Button url={ROUTES.contracts}>See the contracts</Button>
            </BlockStack>
          </Card>
        ) : (
          <>
            <InlineGrid columns={{ xs: 2, md: 5 }} gap="300">
              <Figure label={`Attempts, ${DAYS} days`} value={String(t.billed.attempts)} detail={t.billed.pending ? `${t.billed.pending} pending` : undefined} />
              <Figure label="Succeeded" value={String(t.billed.succeeded)} detail={`${t.billed.recovered} recovered by a retry`} />
              <Figure label="Failed" value={String(t.billed.failed)} detail={t.billed.failedByCode.map((f) => `${errorLabel(f.errorCode)} ${f.count}`).join(', ') || undefined} />
              <Figure label="Revenue" value={moneyText(t.billed.revenue)} />
              <Figure label={`Due, next ${AHEAD} days`} value={String(t.due.renewals)} detail={t.due.expectedRevenue.length ? `Expected ${moneyText(t.due.expectedRevenue)}` : undefined} />
            </InlineGrid>
            <Card>
              <BlockStack gap="300">
                <Text as="h2" variant="headingMd">
                  Per day
                </Text>
                <RenewalsChart overview={data} narrow={smDown} />
                <ul aria-label="Chart legend" style={{ listStyle: 'none', margin: 0, padding: 0, display: 'flex', flexWrap: 'wrap', gap: '4px 16px' }}>
                  {legendOf(data).map((l) => (
                    <li key={l.label} style={{ display: 'flex', alignItems: 'center', gap: 6 }}>
                      <span
                        aria-hidden
                        style={{ width: 12, height: 12, borderRadius: 2, background: l.colour, border: l.dashed ? '1px dashed #8a8a8a' : undefined, flex: 'none' }}
                      />
                      <Text as="span" variant="bodySm">
                        {l.label}
                      </Text>
                    </li>
                  ))}
                </ul>
              </BlockStack>
            </Card>
            <Card padding="0">
              <Box padding="400">
                <Text as="h2" variant="headingMd">
                  Day by day
                </Text>
              </Box>
              <div role="region" aria-label="Renewals per day">
                <IndexTable
                  condensed={smDown}
                  selectable={false}
                  resourceName={{ singular: 'day', plural: 'days' }}
                  itemCount={rows.length}
                  headings={[
                    { title: 'Day' },
                    { title: 'Attempts', alignment: 'end' },
                    { title: 'Succeeded', alignment: 'end' },
                    { title: 'Recovered', alignment: 'end' },
                    { title: 'Failed' },
                    { title: 'Revenue', alignment: 'end' },
                    { title: 'Due', alignment: 'end' },
                    { title: 'Expected', alignment: 'end' },
                  ]}
                >
                  {rows.map((d, i) => (smDown ? <CondensedRow key={d.date} d={d} i={i} today={data.today} /> : <WideRow key={d.date} d={d} i={i} today={data.today} />))}
                </IndexTable>
              </div>
            </Card>
          </>
        )}
      </BlockStack>
    </Page>
  );
}

const dayName = (d: RenewalsDay, today: string) => (d.date === today ? `Today, ${formatDay(d.date)}` : formatDay(d.date));
const num = (n: number | undefined) => (n === undefined ? '—' : String(n));

function WideRow({ d, i, today }: { d: RenewalsDay; i: number; today: string }) {
  const b = d.billed;
  const end = (text: string) => (
    <IndexTable.Cell>
      <Text as="span" alignment="end" numeric>
        {text}
      </Text>
    </IndexTable.Cell>
  );
  return (
    <IndexTable.Row id={d.date} position={i}>
      <IndexTable.Cell>
        <Text as="span" fontWeight={d.date === today ? 'semibold' : undefined}>
          <time dateTime={d.date}>{dayName(d, today)}</time>
        </Text>
      </IndexTable.Cell>
      {end(num(b?.attempts))}
      {end(num(b?.succeeded))}
      {end(num(b?.recovered))}
      <WrappingCell maxWidth="12rem">
        {b ? b.failed : '—'}
        {b && b.failed > 0 && (
          <Text as="p" variant="bodySm" tone="subdued">
            {failuresText(d)}
          </Text>
        )}
        {b && (b.actionRequired > 0 || b.pending > 0) && (
          <Text as="p" variant="bodySm" tone="subdued">
            {[b.actionRequired ? `${b.actionRequired} awaiting the customer` : '', b.pending ? `${b.pending} pending` : ''].filter(Boolean).join(', ')}
          </Text>
        )}
      </WrappingCell>
      {end(b ? moneyText(b.revenue) : '—')}
      {end(num(d.due?.renewals))}
      {end(d.due ? moneyText(d.due.expectedRevenue) : '—')}
    </IndexTable.Row>
  );
}

function CondensedRow({ d, i, today }: { d: RenewalsDay; i: number; today: string }) {
  const b = d.billed;
  return (
    <IndexTable.Row id={d.date} position={i}>
      <CondensedCell>
        <BlockStack gap="100">
          <Text as="p" fontWeight="semibold">
            <time dateTime={d.date}>{dayName(d, today)}</time>
          </Text>
          {b && b.attempts === 0 && (
            <Text as="p" variant="bodySm" tone="subdued">
              No attempts
            </Text>
          )}
          {b && b.attempts > 0 && (
            <Text as="p" variant="bodySm">
              {b.attempts} attempts · {b.succeeded} succeeded ({b.recovered} recovered) · {b.failed} failed
              {b.failed ? ` (${failuresText(d)})` : ''}
              {b.pending ? ` · ${b.pending} pending` : ''}
              {b.actionRequired ? ` · ${b.actionRequired} awaiting the customer` : ''} · revenue {moneyText(b.revenue)}
            </Text>
          )}
          {d.due && (
            <Text as="p" variant="bodySm" tone="subdued">
              {d.due.renewals ? `${d.due.renewals} due · expected ${moneyText(d.due.expectedRevenue)}` : 'Nothing due'}
            </Text>
          )}
        </BlockStack>
      </CondensedCell>
    </IndexTable.Row>
  );
}
