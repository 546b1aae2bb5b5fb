import { Badge, BlockStack, Box, Card, Divider, InlineGrid, InlineStack, Text } from '@shopify/polaris';
import type { ReactNode } from 'react';
import type { ContractDetail, ContractTotals, ContractView, Discount } from '../api';
import { formatDateTime, intervalLabel } from '../format';
import { formatMoney, formatPrice, multiplyAmount } from '../money';
import { billingBadge } from '../billingText';
import { BillingAttempts } from './ContractBilling';

/** The parts of a contract's page, each a card; a card for a field the server does not send is left out. */

function Field({ label, children }: { label: string; children: ReactNode }) {
  return (
    <BlockStack gap="050">
      <Text as="p" variant="bodySm" tone="subdued">
        {label}
      </Text>
      <Text as="p">{children}</Text>
    </BlockStack>
  );
}

/** What the Next billing date field says: a failed contract is billed only once resumed (and then when). */
function nextBilling(c: ContractView, resume: ContractDetail['resume']): string {
  if (c.status === 'CANCELLED' || c.status === 'EXPIRED') return 'None: this contract bills no more';
  if (c.status !== 'FAILED') return formatDateTime(c.nextBillingDate);
  if (!resume) return 'None while failed';
  return resume.billsNow ? 'None while failed: resuming bills now' : `None while failed: ${formatDateTime(resume.nextBillingDate)} once resumed`;
}

/** Why a failed contract is failed and what resuming it does, with the dates. */
function failedText(c: ContractView, resume: ContractDetail['resume']): string {
  const owed = c.billing && c.billing.status !== 'ok';
  const cycle = c.billing?.lastAttempt?.cycleDate;
  if (owed) {
    const n = c.billing!.failedAttempts;
    const order = cycle ? `the order due ${formatDateTime(cycle)}` : 'the current order';
    return (
      `Billing failed: ${order} is unpaid after ${n} failed attempt${n === 1 ? '' : 's'}, and is not retried while the contract is failed. ` +
      `Resuming the contract bills it now; or cancel the contract.`
    );
  }
  const when = resume ? ` It is then next billed ${formatDateTime(resume.nextBillingDate)}.` : '';
  return `This contract failed and is not billed. Resume it to bill it again, or cancel it.${when}`;
}

export function BillingCard({ contract: c, resume = null }: { contract: ContractView; resume?: ContractDetail['resume'] }) {
  const badge = billingBadge(c);
  const failed = c.status === 'FAILED';
  const owedWhileFailed = failed && c.billing?.status !== 'ok';
  return (
    <Card>
      <BlockStack gap="300">
        <Text as="h2" variant="headingMd">
          Billing
        </Text>
        <InlineGrid columns={{ xs: 1, sm: 2 }} gap="300">
          <Field label="Next billing date">{nextBilling(c, resume)}</Field>
          <Field label="Billing">{intervalLabel(c.billingPolicy.interval, c.billingPolicy.intervalCount)}</Field>
          {c.deliveryPolicy && <Field label="Delivery">{intervalLabel(c.deliveryPolicy.interval, c.deliveryPolicy.intervalCount)}</Field>}
          {c.status === 'PAUSED' && <Field label="Paused since">{formatDateTime(c.pausedAt)}</Field>}
          {c.status === 'PAUSED' && <Field label="Resume date">{formatDateTime(c.resumeAt, 'None: paused until resumed')}</Field>}
          {c.status === 'CANCELLED' && <Field label="Cancelled">{formatDateTime(c.cancelledAt)}</Field>}
          {c.status === 'CANCELLED' && <Field label="Cancellation reason">{c.cancellationReason || 'None given'}</Field>}
        </InlineGrid>
        {failed && (
          <Text as="p" tone="caution">
            {failedText(c, resume)}
          </Text>
        )}
        {c.billing && badge && (
          <>
            <Divider />
            <div role="group" aria-label="Billing state">
              <InlineGrid columns={{ xs: 1, sm: 3 }} gap="300">
                <Field label="Billing status">
                  <Badge tone={badge.tone}>{badge.label}</Badge>
                </Field>
                <Field label="Failed attempts this cycle">{String(c.billing.failedAttempts)}</Field>
                <Field label="Next attempt">
                  {formatDateTime(
                    c.billing.nextAttemptAt,
                    c.billing.lastAttempt?.status === 'pending' ? 'Awaiting the outcome' : owedWhileFailed ? 'None: billed when resumed' : 'None scheduled',
                  )}
                </Field>
              </InlineGrid>
            </div>
            <Text as="h3" variant="headingSm">
              Billing attempts
            </Text>
            <BillingAttempts contract={c} />
          </>
        )}
      </BlockStack>
    </Card>
  );
}

export function ProductsCard({ contract: c }: { contract: ContractView }) {
  const t = c.totals;
  return (
    <Card>
      <BlockStack gap="300">
        <Text as="h2" variant="headingMd">
          Products
        </Text>
        <ul aria-label="Products" style={{ listStyle: 'none', margin: 0, padding: 0 }}>
          {c.lines.map((l, i) => {
            const lineTotal = multiplyAmount(l.price.amount, l.quantity);
            return (
              <li key={l.id ?? `${l.variantId}-${i}`}>
                {i > 0 && <Divider />}
                <Box paddingBlock="200">
                <InlineStack align="space-between" blockAlign="start" gap="200" wrap>
                  <BlockStack gap="050">
                    <Text as="p" fontWeight="semibold">
                      {l.title}
                    </Text>
                    <Text as="p" variant="bodySm" tone="subdued">
                      Variant {l.variantId}
                    </Text>
                  </BlockStack>
                  <BlockStack gap="050" inlineAlign="end">
                    <Text as="p">
                      {l.quantity} × {formatPrice(l.price)}
                    </Text>
                    {lineTotal !== null && (
                      <Text as="p" fontWeight="semibold">
                        {formatMoney(lineTotal, l.price.currencyCode)}
                      </Text>
                    )}
                  </BlockStack>
                </InlineStack>
                </Box>
              </li>
            );
          })}
        </ul>
        {t && (
          <>
            <Divider />
            <TotalsList totals={t} label="Totals" />
          </>
        )}
      </BlockStack>
    </Card>
  );
}

const isZero = (amount: string) => /^-?0*(\.0*)?$/.test(amount);

/**
 * A contract's totals as a description list: each term and its value in a <div> of the <dl> (the one wrapper HTML
 * allows there), laid out as a row by CSS.
 */
export function TotalsList({ totals: t, label }: { totals: ContractTotals; label: string }) {
  const discounts = isZero(t.discounts) ? formatMoney(t.discounts, t.currencyCode) : `−${formatMoney(t.discounts.replace(/^-/, ''), t.currencyCode)}`;
  return (
    <dl aria-label={label} className="svc-totals">
      <TotalRow label="Subtotal" value={formatMoney(t.subtotal, t.currencyCode)} />
      <TotalRow label="Discounts" value={discounts} />
      <TotalRow label="Shipping" value={formatMoney(t.shipping, t.currencyCode)} />
      <TotalRow label="Total" value={formatMoney(t.total, t.currencyCode)} strong />
    </dl>
  );
}

function TotalRow({ label, value, strong = false }: { label: string; value: string; strong?: boolean }) {
  const weight = strong ? 'semibold' : undefined;
  return (
    <div>
      <dt>
        <Text as="span" fontWeight={weight}>
          {label}
        </Text>
      </dt>
      <dd>
        <Text as="span" fontWeight={weight}>
          {value}
        </Text>
      </dd>
    </div>
  );
}

export function CustomerCard({ contract: c }: { contract: ContractView }) {
  return (
    <Card>
      <BlockStack gap="200">
        <Text as="h2" variant="headingMd">
          Customer
        </Text>
        <Text as="p" breakWord>
          {c.customer.email}
        </Text>
        <Text as="p" variant="bodySm" tone="subdued">
          Customer {c.customer.id}
        </Text>
      </BlockStack>
    </Card>
  );
}

export function ShippingAddressCard({ contract: c }: { contract: ContractView }) {
  if (c.shippingAddress === undefined) return null;
  const a = c.shippingAddress;
  const lines = a
    ? [
        `${a.firstName} ${a.lastName}`.trim(),
        a.address1,
        a.address2,
        [a.city, a.provinceCode, a.zip].filter(Boolean).join(' '),
        a.countryCode,
        a.phone,
      ].filter((l): l is string => Boolean(l))
    : [];
  return (
    <Card>
      <BlockStack gap="200">
        <Text as="h2" variant="headingMd">
          Shipping address
        </Text>
        {a ? (
          <address style={{ fontStyle: 'normal' }} aria-label="Shipping address">
            {lines.map((l, i) => (
              <Text as="p" key={i} breakWord>
                {l}
              </Text>
            ))}
          </address>
        ) : (
          <Text as="p" tone="subdued">
            No shipping address
          </Text>
        )}
      </BlockStack>
    </Card>
  );
}

const discountValue = (d: Discount) =>
  d.value.type === 'percentage' ? `${d.value.percentage}% off` : `${formatPrice(d.value.amount)} off`;

export function DiscountsCard({ contract: c }: { contract: ContractView }) {
  if (c.discounts === undefined) return null;
  return (
    <Card>
      <BlockStack gap="200">
        <Text as="h2" variant="headingMd">
          Discounts
        </Text>
        {c.discounts.length === 0 ? (
          <Text as="p" tone="subdued">
            No discounts
          </Text>
        ) : (
          <ul aria-label="Discounts" className="svc-list">
            {c.discounts.map((d) => (
              <li key={d.id}>
                <InlineStack gap="200" blockAlign="center" wrap>
                  <Text as="span" fontWeight="semibold">
                    {d.title}
                  </Text>
                  {d.code && <Badge>{`Code ${d.code}`}</Badge>}
                </InlineStack>
                <Text as="p" variant="bodySm" tone="subdued">
                  {discountValue(d)}
                </Text>
              </li>
            ))}
          </ul>
        )}
      </BlockStack>
    </Card>
  );
}
