import { Banner, BlockStack, Button, Card, InlineStack, Layout, Page, SkeletonBodyText, Text } from '@shopify/polaris';
import { useEffect, useId, useMemo, useState } from 'react';
import { ApiError, type AuthorizationDetails, type Permissions } from '../api';
import { ErrorBanner } from '../components/ErrorBanner';
import { useAdminApi } from '../context';
import { PermissionsTable } from './PermissionsTable';
import { RESOURCES } from './permissions';

/** The authorization request's parameters, as /oauth/authorize passed them on (src/services/oauth/authorize.ts). */
const PARAMS = ['response_type', 'client_id', 'redirect_uri', 'code_challenge', 'code_challenge_method', 'state', 'scope', 'resource'];

const asApiError = (err: unknown) => (err instanceof ApiError ? err : new ApiError(0, 'unexpected', String(err), null));

/** Leaves for the app's redirect URI: from the shop admin's frame, the whole window goes (the app is not in a frame). */
function leaveFor(url: string) {
  if (window.top !== window.self) window.open(url, '_top');
  else window.location.assign(url);
}

/**
 * Connect an app: an AI assistant asks, through OAuth, to use this store's MCP server (docs/mcp-assistants.md). The
 * merchant sees the app's name, where the browser goes back to, and what it asks for, resource by resource; they may
 * lower any of it before approving. Approving is an admin API call with the session token: a page of another site
 * that sends a browser here cannot approve for the merchant.
 */
export function ConsentPage() {
  const { api, shop } = useAdminApi();
  const request = useMemo(() => {
    const q = new URLSearchParams(window.location.search);
    return Object.fromEntries(PARAMS.flatMap((n) => (q.get(n) ? [[n, q.get(n)!]] : [])));
  }, []);
  const [details, setDetails] = useState<AuthorizationDetails | null>(null);
  const [chosen, setChosen] = useState<Permissions | null>(null);
  const [loadError, setLoadError] = useState<ApiError | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [sending, setSending] = useState<'approve' | 'deny' | null>(null);
  const id = useId();

  useEffect(() => {
    let live = true;
    api.authorization(request).then(
      (d) => {
        if (!live) return;
        setDetails(d);
        setChosen({ ...d.asked });
      },
      (err) => live && setLoadError(asApiError(err)),
    );
    return () => {
      live = false;
    };
  }, [api, request]);

  const decide = async (approve: boolean) => {
    if (!chosen || sending) return;
    setSending(approve ? 'approve' : 'deny');
    setError(null);
    try {
      const { redirectTo } = await api.decideAuthorization(request, approve, approve ? chosen : undefined);
      leaveFor(redirectTo);
    } catch (err) {
      setError(asApiError(err));
      setSending(null);
    }
  };

  if (loadError) {
    return (
      <Page title="Connect an app" narrowWidth>
        <ErrorBanner error={loadError} title="This app's request cannot be approved">
          <p>Nothing was shared with the app. Start connecting again from the app.</p>
        </ErrorBanner>
      </Page>
    );
  }
  if (!details || !chosen) {
    return (
      <Page title="Connect an app" narrowWidth>
        <Card>
          <SkeletonBodyText lines={5} />
        </Card>
      </Page>
    );
  }

  const asked = RESOURCES.filter((r) => details.asked[r] !== 'none');
  const nothing = RESOURCES.every((r) => chosen[r] === 'none');
  return (
    <Page title="Connect an app" narrowWidth>
      <Layout>
        <Layout.Section>
          <BlockStack gap="400">
            <ErrorBanner error={error} title="The app was not connected" onDismiss={() => setError(null)} />
            <Card>
              <BlockStack gap="300">
                <Text as="h2" variant="headingLg">
                  {details.client.name} wants to use {shop ?? 'this store'}
                </Text>
                <Text as="p">
                  It will act through this store's MCP server with the permissions you approve below, until you disconnect it on Settings → API.
                </Text>
                <Text as="p">
                  After you decide, your browser goes back to <strong className="svc-mono">{details.redirectHost}</strong>
                  {details.client.kind === 'metadata_document' ? (
                    <>
                      {' '}
                      (the app is identified by <span className="svc-mono svc-wrap">{details.client.id}</span>)
                    </>
                  ) : null}
                  .
                </Text>
                <Banner tone="warning">
                  <p>Approve only an app you started connecting yourself, just now. The name is what the app says it is.</p>
                </Banner>
              </BlockStack>
            </Card>
            <Card>
              <BlockStack gap="300">
                <Text as="h2" variant="headingMd" id={`${id}-title`}>
                  Permissions asked for
                </Text>
                <Text as="p" tone="subdued">
                  You can give less than the app asks for; it cannot get more.
                </Text>
                {asked.length === 0 ? (
                  <Text as="p">The app asks for no permissions: it can only connect.</Text>
                ) : (
                  <PermissionsTable
                    id={id}
                    resources={asked}
                    value={chosen}
                    max={details.asked}
                    onChange={(r, l) => setChosen({ ...chosen, [r]: l })}
                    labelledBy={`${id}-title`}
                  />
                )}
                {nothing && asked.length > 0 && (
                  <Text as="p" tone="caution">
                    With every permission at None the app can connect but do nothing.
                  </Text>
                )}
                <InlineStack gap="300" align="end">
                  <Button onClick={() => void decide(false)} loading={sending === 'deny'} disabled={sending === 'approve'}>
                    Deny
                  </Button>
                  <Button variant="primary" onClick={() => void decide(true)} loading={sending === 'approve'} disabled={sending === 'deny'}>
                    Approve
                  </Button>
                </InlineStack>
              </BlockStack>
            </Card>
          </BlockStack>
        </Layout.Section>
      </Layout>
    </Page>
  );
}
