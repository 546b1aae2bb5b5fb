import { BlockStack, Card, Page, Text } from '@shopify/polaris';
import { adminLinkCommand, type SessionProblem } from '../auth';

/**
 * Shown instead of the app when there is no usable session token. No admin request is made from here: the page
 * explains how to get a new link (standalone) or to reopen the app (embedded).
 */
export function SessionProblemPage({ problem, embedded }: { problem: SessionProblem; embedded: boolean }) {
  if (problem.kind === 'app_bridge_missing' && window.top === window.self) {
    // Not inside the shop admin (its app frame) but in a tab of its own, where App Bridge can give no session.
    const shop = new URLSearchParams(window.location.search).get('shop');
    return (
      <Page title="Open this page from the shop admin, or with an admin link" narrowWidth>
        <Card>
          <BlockStack gap="300">
            <Text as="p">
              This service is set up to run inside the shop admin, which supplies the session. To open this screen in a
              browser tab of its own, run this where the service is installed, then open the link it prints:
            </Text>
            <pre className="svc-code" aria-label="Command to run">
              {adminLinkCommand(shop)}
            </pre>
          </BlockStack>
        </Card>
      </Page>
    );
  }
  if (problem.kind === 'app_bridge_missing') {
    return (
      <Page title="The app could not start">
        <Card>
          <Text as="p">
            App Bridge, which the shop admin provides, did not load, so the app cannot get a session. Reload the page;
            if this persists, check that the browser can reach cdn.shopify.com.
          </Text>
        </Card>
      </Page>
    );
  }
  const title = problem.kind === 'expired' ? 'Your session has expired' : 'Open this page with an admin link';
  const shop = problem.kind === 'expired' ? problem.shop : null;
  return (
    <Page title={title} narrowWidth>
      <Card>
        <BlockStack gap="300">
          {embedded ? (
            <Text as="p">Reload the app from the shop admin to start a new session.</Text>
          ) : (
            <>
              <Text as="p">
                {problem.kind === 'expired'
                  ? 'The admin link you opened has expired or is no longer valid (links are valid for one hour unless made with --ttl).'
                  : 'This screen needs a signed admin link; it was opened without one.'}{' '}
                To get a new link, run this where the service is installed, then open the link it prints:
              </Text>
              <pre className="svc-code" aria-label="Command to run">
                {adminLinkCommand(shop)}
              </pre>
              <Text as="p" tone="subdued">
                Anyone with the link can manage the store's API keys until it expires: do not share it.
              </Text>
            </>
          )}
        </BlockStack>
      </Card>
    </Page>
  );
}
