import { Badge, BlockStack, IndexTable, InlineStack, Link, Text, useBreakpoints, type IndexTableProps } from '@shopify/polaris';
import type { ContractView } from '../api';
import { paymentTrouble } from '../billingText';
import { CondensedCell, DateTimeCell, WrappingCell } from '../components/TableCells';
import { formatDateTime, intervalLabel, STATUS_LABEL, STATUS_TONE } from '../format';
import { contractUrl } from '../router';

const productsText = (c: ContractView) => c.lines.map((l) => `${l.quantity} × ${l.title}`).join(', ');
/**
 * A cancelled or expired contract bills no more, and a failed one not until it is resumed: their next billing date
 * means nothing to the merchant.
 */
const billsAgain = (c: ContractView) => c.status !== 'CANCELLED' && c.status !== 'EXPIRED' && c.status !== 'FAILED';
const notBilled = (c: ContractView) => (c.status === 'FAILED' ? 'Not until resumed' : '—');

/** A page of contracts; a row opens the contract's own page. On a phone each row is one cell of wrapped lines. */
export function ContractsTable({ contracts, pagination }: { contracts: ContractView[]; pagination?: IndexTableProps['pagination'] }) {
  const { smDown } = useBreakpoints();
  const number = (c: ContractView) => (
    <Link url={contractUrl(c.id)} dataPrimaryLink monochrome removeUnderline accessibilityLabel={`Contract #${c.id}`}>
      <Text as="span" fontWeight="semibold">
        #{c.id}
      </Text>
    </Link>
  );
  // The status, and payment trouble beside it: a contract in dunning, or failed with its order unpaid.
  const status = (c: ContractView) => {
    const trouble = paymentTrouble(c);
    return (
      <InlineStack gap="100" blockAlign="center">
        <Badge tone={STATUS_TONE[c.status]}>{STATUS_LABEL[c.status]}</Badge>
        {trouble && <Badge tone={trouble.tone}>{trouble.label}</Badge>}
      </InlineStack>
    );
  };
  const billing = (c: ContractView) => intervalLabel(c.billingPolicy.interval, c.billingPolicy.intervalCount);

  const rows = contracts.map((c, i) =>
    smDown ? (
      <IndexTable.Row id={c.id} key={c.id} position={i}>
        <CondensedCell>
          <BlockStack gap="100">
            <InlineStack align="space-between" blockAlign="center" gap="200">
              {number(c)}
              {status(c)}
            </InlineStack>
            <Text as="p">{c.customer.email}</Text>
            <Text as="p" variant="bodySm" tone="subdued">
              {billsAgain(c) ? `Next billing ${formatDateTime(c.nextBillingDate)} · ` : c.status === 'FAILED' ? 'Not billed until resumed · ' : ''}
              {billing(c)}
            </Text>
            <Text as="p" variant="bodySm" tone="subdued">
              {productsText(c)}
            </Text>
          </BlockStack>
        </CondensedCell>
      </IndexTable.Row>
    ) : (
      <IndexTable.Row id={c.id} key={c.id} position={i}>
        <IndexTable.Cell>{number(c)}</IndexTable.Cell>
        <WrappingCell maxWidth="18rem">{c.customer.email}</WrappingCell>
        <IndexTable.Cell>{status(c)}</IndexTable.Cell>
        {billsAgain(c) ? <DateTimeCell iso={c.nextBillingDate} /> : <IndexTable.Cell>{notBilled(c)}</IndexTable.Cell>}
        <IndexTable.Cell>{billing(c)}</IndexTable.Cell>
        <WrappingCell>
          <Text as="span" tone="subdued">
            {productsText(c)}
          </Text>
        </WrappingCell>
      </IndexTable.Row>
    ),
  );

  return (
    <IndexTable
      condensed={smDown}
      selectable={false}
      resourceName={{ singular: 'contract', plural: 'contracts' }}
      itemCount={contracts.length}
      headings={[{ title: 'Contract' }, { title: 'Customer' }, { title: 'Status' }, { title: 'Next billing' }, { title: 'Billing' }, { title: 'Products' }]}
      pagination={pagination}
    >
      {rows}
    </IndexTable>
  );
}
