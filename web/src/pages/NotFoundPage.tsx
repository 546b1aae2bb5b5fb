import { Card, Link, Page, Text } from '@shopify/polaris';
import { ROUTES } from '../router';

export function NotFoundPage() {
  return (
    <Page title="Page not found">
      <Card>
        <Text as="p">
          This page does not exist. Go to <Link url={ROUTES.api}>Settings → API</Link> or{' '}
          <Link url={ROUTES.contracts}>Contracts</Link>.
        </Text>
      </Card>
    </Page>
  );
}
