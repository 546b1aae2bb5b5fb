import { BlockStack, Card, Divider, Icon, InlineStack, Link, Page, Text, type IconProps } from '@shopify/polaris';
import { ConnectIcon, CreditCardIcon, KeyIcon } from '@shopify/polaris-icons';
import { ROUTES } from '../router';

/** Settings, as the seed names the path to its screens: Settings, then API, Webhooks or Billing. */
export function SettingsPage() {
  return (
    <Page title="Settings">
      <Card>
        <BlockStack gap="400">
          <SettingsItem
            icon={KeyIcon}
            url={ROUTES.api}
            title="API"
            text="Generate and revoke API keys, and see whether your plan includes API access."
          />
          <Divider />
          <SettingsItem
            icon={ConnectIcon}
            url={ROUTES.webhooks}
            title="Webhooks"
            text="Tell your own server when a subscription contract changes: endpoints, signing secrets and the delivery log."
          />
          <Divider />
          <SettingsItem
            icon={CreditCardIcon}
            url={ROUTES.billingSettings}
            title="Billing"
            text="When a renewal's payment fails: how often it is retried, and what happens to the contract after the last retry."
          />
        </BlockStack>
      </Card>
    </Page>
  );
}

function SettingsItem({ icon, url, title, text }: { icon: IconProps['source']; url: string; title: string; text: string }) {
  return (
    <InlineStack gap="300" blockAlign="start" wrap={false}>
      <div>
        <Icon source={icon} tone="base" />
      </div>
      <BlockStack gap="100">
        <Link url={url} removeUnderline>
          <Text as="span" variant="headingSm">
            {title}
          </Text>
        </Link>
        <Text as="p" tone="subdued">
          {text}
        </Text>
      </BlockStack>
    </InlineStack>
  );
}
