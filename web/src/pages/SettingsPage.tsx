import { BlockStack, Card, Icon, InlineStack, Link, Page, Text } from '@shopify/polaris';
import { KeyIcon } from '@shopify/polaris-icons';
import { ROUTES } from '../router';

/** Settings, as the seed names the path to the API screen: Settings, then API. */
export function SettingsPage() {
  return (
    <Page title="Settings">
      <Card>
        <InlineStack gap="300" blockAlign="start" wrap={false}>
          <div>
            <Icon source={KeyIcon} tone="base" />
          </div>
          <BlockStack gap="100">
            <Link url={ROUTES.api} removeUnderline>
              <Text as="span" variant="headingSm">
                API
              </Text>
            </Link>
            <Text as="p" tone="subdued">
              Generate and revoke API keys, and see whether your plan includes API access.
            </Text>
          </BlockStack>
        </InlineStack>
      </Card>
    </Page>
  );
}
