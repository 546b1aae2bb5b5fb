import { Badge, Banner, BlockStack, Button, Card, InlineStack, Text } from '@shopify/polaris';
import type { ShopInfo } from '../api';
import { formatDate, formatDateTime } from '../format';

/**
 * The shop's API access (docs/product.md §2): Enterprise, the free period with its end, or what "plan required" means. In
 * platform mode the merchant upgrades here (docs/product.md §9); standalone, the operator sets the plan.
 */
export function AccessState({ info, onUpgrade, upgrading = false }: { info: ShopInfo; onUpgrade?: () => void; upgrading?: boolean }) {
  const { plan, apiAccess } = info.shop;
  if (apiAccess.reason === 'free_period' && apiAccess.freePeriodEndsAt) {
    const ends = apiAccess.freePeriodEndsAt;
    return (
      <Banner tone="info" title={`API access is included for every store until ${formatDate(ends)}`}>
        <BlockStack gap="200">
          <p>
            While the app is offered free of charge, your store can generate keys and use the API on any plan. The free
            period ends <time dateTime={ends}>{formatDateTime(ends)}</time>.
          </p>
          <p>
            After that, API access requires the Enterprise plan. Your store is on the <strong>{plan}</strong> plan: its
            keys will be refused (403 <code>plan_required</code>) until the store moves to Enterprise, and then work
            again without any change.
          </p>
        </BlockStack>
      </Banner>
    );
  }
  if (apiAccess.reason === 'plan_required' && info.platform?.canUpgrade && onUpgrade) {
    return (
      <Banner tone="warning" title="Plan required: API access needs the Enterprise plan">
        <BlockStack gap="300">
          <p>
            Your store is on the <strong>{plan}</strong> plan. External API access, and the MCP server for IDEs, require
            the Enterprise plan, so you cannot generate keys now.
          </p>
          <p>
            Upgrade to Enterprise: Shopify shows you the subscription to approve, and API access turns on as soon as you
            approve it. Keys you already have are kept; until then every request made with them is refused with 403{' '}
            <code>plan_required</code>, and after that they work again with no further action.
          </p>
          <InlineStack>
            <Button variant="primary" onClick={onUpgrade} loading={upgrading}>
              Upgrade to Enterprise
            </Button>
          </InlineStack>
        </BlockStack>
      </Banner>
    );
  }
  if (apiAccess.reason === 'plan_required') {
    return (
      <Banner tone="warning" title="Plan required: API access needs the Enterprise plan">
        <BlockStack gap="200">
          <p>
            Your store is on the <strong>{plan}</strong> plan. External API access, and the MCP server for IDEs, require
            the Enterprise plan, so you cannot generate keys now.
          </p>
          <p>
            Keys you already have are kept, but every request made with them is refused with 403{' '}
            <code>plan_required</code>. Upgrade the store to the Enterprise plan: the existing keys then work again
            with no further action, and you can generate new ones.
          </p>
        </BlockStack>
      </Banner>
    );
  }
  return (
    <Card>
      <BlockStack gap="200">
        <InlineStack gap="200" blockAlign="center">
          <Text as="h2" variant="headingMd">
            API access
          </Text>
          <Badge tone="success">Enterprise plan</Badge>
        </InlineStack>
        <Text as="p">
          Your store is on the Enterprise plan, which includes the external API and the MCP server for IDEs.
        </Text>
      </BlockStack>
    </Card>
  );
}
