import { BlockStack, Card, Page, Text, TextField } from '@shopify/polaris';
import { useState } from 'react';
import { adminLinkCommand, type SessionProblem } from '../auth';
import { ROUTES } from '../router';

/**
 * Shown instead of the app when there is no usable session token. No admin request is made from here: the page
 * explains how to get a new link (standalone) or to reopen the app (embedded).
 */
export function SessionProblemPage({ problem, embedded }: { problem: SessionProblem; embedded: boolean }) {
  if (window.location.pathname === ROUTES.consent && !embedded) return <ConsentWithoutSession problem={problem} />;
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

const SHOP_DOMAIN = /^[a-z0-9][a-z0-9-]*\.myshopify\.com$/;

/**
 * An app's consent page opened in a browser that holds no admin session (docs/mcp-assistants.md). Standalone: open
 * the admin link in this browser (any tab), then reload. Inside the shop admin (SHOPIFY_API_KEY set): the same page
 * opens in the shop's admin, which supplies the session; the merchant names the store, since the app cannot.
 */
function ConsentWithoutSession({ problem }: { problem: SessionProblem }) {
  const appKey = document.querySelector<HTMLMetaElement>('meta[name="shopify-api-key"]')?.content;
  const [shop, setShop] = useState('');
  const domain = shop.trim().toLowerCase();
  const inAdmin = appKey && SHOP_DOMAIN.test(domain) ? `https://${domain}/admin/apps/${encodeURIComponent(appKey)}/oauth/consent${window.location.search}` : null;
  return (
    <Page title="Connect an app" narrowWidth>
      <Card>
        <BlockStack gap="300">
          {appKey ? (
            <>
              <Text as="p">An app asks to connect to your store. Approve it in your shop admin: name your store, then open the page there.</Text>
              <TextField label="Store domain" placeholder="your-store.myshopify.com" value={shop} onChange={setShop} autoComplete="off" />
              {inAdmin ? (
                <a href={inAdmin} target="_top">
                  Open in the shop admin
                </a>
              ) : (
                <Text as="p" tone="subdued">
                  Enter a domain ending in .myshopify.com.
                </Text>
              )}
            </>
          ) : (
            <>
              <Text as="p">
                An app asks to connect to your store. {problem.kind === 'expired' ? 'Your admin session has expired.' : 'This browser has no admin session.'} Run this where
                the service is installed, open the link it prints in this browser, then reload this page:
              </Text>
              <pre className="svc-code" aria-label="Command to run">
                {adminLinkCommand(problem.kind === 'expired' ? problem.shop : null)}
              </pre>
            </>
          )}
        </BlockStack>
      </Card>
    </Page>
  );
}
