import {
  BlockStack,
  Box,
  Button,
  Card,
  InlineStack,
  Layout,
  Link,
  Page,
  SkeletonBodyText,
  SkeletonDisplayText,
  SkeletonPage,
  Text,
  Toast,
} from '@shopify/polaris';
import { KeyIcon } from '@shopify/polaris-icons';
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'react';
import { ApiError, type ApiKey, type KeyList, type ShopInfo } from '../api';
import { ErrorBanner } from '../components/ErrorBanner';
import { useAdminApi } from '../context';
import { formatDate } from '../format';
import { ROUTES } from '../router';
import { AccessState } from './AccessState';
import { ConnectedAppsCard } from './ConnectedApps';
import { EditPermissionsModal } from './EditPermissionsModal';
import { GenerateKeyModal } from './GenerateKeyModal';
import { keyLabel } from './keyLabel';
import { KeysTable } from './KeysTable';
import { LeakedKeysBanner } from './LeakedKeys';
import { RevokeKeyModal } from './RevokeKeyModal';
import { UpgradeReturnBanner, useUpgrade, useUpgradeReturn } from './Upgrade';

const asApiError = (err: unknown) => (err instanceof ApiError ? err : new ApiError(0, 'unexpected', String(err), null));
const withCount = (keys: ApiKey[]): KeyList => ({ keys, activeCount: keys.filter((k) => k.status === 'active').length });

/** Settings → API: access state (and, in platform mode, the upgrade), the keys and their limit, generate and revoke (docs/product.md §6, §9). */
export function ApiPage() {
  const { api } = useAdminApi();
  const [shop, setShop] = useState<ShopInfo | null>(null);
  const [list, setList] = useState<KeyList | null>(null);
  const [loadError, setLoadError] = useState<ApiError | null>(null);
  const [generating, setGenerating] = useState(false);
  const [revoking, setRevoking] = useState<ApiKey | null>(null);
  const [editing, setEditing] = useState<ApiKey | null>(null);
  const editReturn = useRef<HTMLElement | null>(null);
  const [toast, setToast] = useState<string | null>(null);
  // Focus returns from the generate dialog to the button, or to the reason it became disabled (the 5th key).
  const generateReturn = useRef<HTMLElement | null>(null);
  const buttonWrap = useRef<HTMLDivElement>(null);
  const reasonWrap = useRef<HTMLDivElement>(null);
  useLayoutEffect(() => {
    generateReturn.current = reasonWrap.current?.firstElementChild ? reasonWrap.current : buttonWrap.current;
  });
  const revokeReturn = useRef<HTMLElement | null>(null);
  const upgrade = useUpgrade();
  const upgradeReturn = useUpgradeReturn(shop, setShop);

  const load = useCallback(async () => {
    setLoadError(null);
    try {
      const [s, k] = await Promise.all([api.shop(), api.keys()]);
      setShop(s);
      setList(k);
    } catch (err) {
      setLoadError(asApiError(err));
    }
  }, [api]);
  useEffect(() => {
    void load();
  }, [load]);

  if (!shop || !list) {
    if (loadError) {
      return (
        <Page title="API" backAction={{ content: 'Settings', url: ROUTES.settings }}>
          <BlockStack gap="400">
            <ErrorBanner error={loadError} title="The API settings could not be loaded" />
            <InlineStack>
              <Button onClick={() => void load()}>Try again</Button>
            </InlineStack>
          </BlockStack>
        </Page>
      );
    }
    return (
      <SkeletonPage title="API" backAction>
        <Layout>
          <Layout.Section>
            <Card>
              <SkeletonBodyText lines={2} />
            </Card>
          </Layout.Section>
          <Layout.Section>
            <Card>
              <BlockStack gap="400">
                <SkeletonDisplayText size="small" />
                <SkeletonBodyText lines={4} />
              </BlockStack>
            </Card>
          </Layout.Section>
        </Layout>
      </SkeletonPage>
    );
  }

  const max = shop.limits.maxActiveKeys;
  const atLimit = list.activeCount >= max;
  const disabledReason = !shop.shop.apiAccess.allowed
    ? 'Generating keys needs API access, which requires the Enterprise plan.'
    : atLimit
      ? `This store has ${max} active keys, the most it can have. Revoke a key to generate a new one.`
      : null;

  const onGenerated = (key: ApiKey) => setList((l) => withCount([key, ...(l?.keys ?? [])]));
  const openRevoke = (k: ApiKey) => {
    revokeReturn.current = document.getElementById(`key-revoke-${k.id}`);
    setRevoking(k);
  };
  const closeRevoke = (revoked: ApiKey | null) => {
    if (revoked) {
      setList((l) => l && withCount(l.keys.map((k) => (k.id === revoked.id ? revoked : k))));
      setToast(`Revoked ${keyLabel(revoked)}`);
      // The row's Revoke button is gone; focus returns to the row's name instead.
      revokeReturn.current = document.getElementById(`key-name-${revoked.id}`)?.parentElement ?? null;
    }
    setRevoking(null);
  };

  const openEdit = (k: ApiKey) => {
    editReturn.current = document.getElementById(`key-permissions-${k.id}`);
    setEditing(k);
  };
  const closeEdit = (updated: ApiKey | null) => {
    if (updated) {
      setList((l) => l && withCount(l.keys.map((k) => (k.id === updated.id ? updated : k))));
      setToast(`Permissions of ${keyLabel(updated)} changed`);
    }
    setEditing(null);
  };

  return (
    <Page
      title="API"
      subtitle={`Keys let ${shop.shop.domain}'s own backend manage subscription contracts through the API and the MCP server.`}
      backAction={{ content: 'Settings', url: ROUTES.settings }}
    >
      <Layout>
        {loadError && (
          <Layout.Section>
            <ErrorBanner error={loadError} title="The API settings could not be refreshed" onDismiss={() => setLoadError(null)} />
          </Layout.Section>
        )}
        {(upgradeReturn.state !== 'none' || upgrade.error) && (
          <Layout.Section>
            <BlockStack gap="400">
              <UpgradeReturnBanner state={upgradeReturn.state} onDismiss={upgradeReturn.dismiss} onCheckAgain={upgradeReturn.checkAgain} />
              <ErrorBanner error={upgrade.error} title="The upgrade could not be started" onDismiss={upgrade.clearError} />
            </BlockStack>
          </Layout.Section>
        )}
        {list.keys.some((k) => k.revokedReason === 'leaked') && (
          <Layout.Section>
            <LeakedKeysBanner keys={list.keys} />
          </Layout.Section>
        )}
        <Layout.Section>
          {/* While an approved upgrade is being confirmed, a second one would only make another subscription to approve. */}
          <AccessState info={shop} onUpgrade={() => void upgrade.upgrade()} upgrading={upgrade.upgrading || upgradeReturn.state === 'confirming'} />
        </Layout.Section>
        <Layout.Section>
          <Card padding="0">
            <Box padding="400">
              <BlockStack gap="300">
                <InlineStack align="space-between" blockAlign="center" gap="300">
                  <BlockStack gap="100">
                    <Text as="h2" variant="headingMd">
                      API keys
                    </Text>
                    <Text as="p" tone={atLimit ? 'caution' : 'subdued'}>
                      <span data-testid="active-count">{`${list.activeCount} of ${max} active`}</span>
                      {' · '}a store can have at most {max} active keys; revoked keys do not count.
                    </Text>
                  </BlockStack>
                  <div ref={buttonWrap}>
                    <Button
                      variant="primary"
                      icon={KeyIcon}
                      disabled={disabledReason !== null}
                      ariaDescribedBy={disabledReason ? 'generate-disabled-reason' : undefined}
                      onClick={() => setGenerating(true)}
                    >
                      Generate key
                    </Button>
                  </div>
                </InlineStack>
                <div ref={reasonWrap}>
                  {disabledReason && (
                    <div id="generate-disabled-reason" tabIndex={-1} className="svc-focus-target">
                      <Text as="p" tone="caution">
                        {disabledReason}
                      </Text>
                    </div>
                  )}
                </div>
              </BlockStack>
            </Box>
            {list.keys.length === 0 ? (
              <Box padding="400" borderBlockStartWidth="025" borderColor="border">
                <BlockStack gap="200" inlineAlign="center">
                  <Text as="p" variant="headingSm">
                    No API keys yet
                  </Text>
                  <Text as="p" tone="subdued" alignment="center">
                    Generate a key for your backend or your IDE. Each key is shown once, when it is generated.
                  </Text>
                </BlockStack>
              </Box>
            ) : (
              <KeysTable keys={list.keys} onRevoke={openRevoke} onEditPermissions={openEdit} />
            )}
          </Card>
        </Layout.Section>
        <Layout.Section>
          <ConnectedAppsCard />
        </Layout.Section>
        <Layout.Section>
          <UsageCard />
        </Layout.Section>
      </Layout>
      <GenerateKeyModal open={generating} activator={generateReturn} onClose={() => setGenerating(false)} onGenerated={onGenerated} onStale={() => void load()} />
      <RevokeKeyModal target={revoking} activator={revokeReturn} onClose={closeRevoke} />
      <EditPermissionsModal target={editing} activator={editReturn} onClose={closeEdit} />
      {toast && <Toast content={toast} onDismiss={() => setToast(null)} />}
    </Page>
  );
}

/** Midnight UTC `days` from now, as the API takes a timestamp. */
const daysAhead = (days: number) => {
  const d = new Date();
  d.setUTCHours(0, 0, 0, 0);
  d.setUTCDate(d.getUTCDate() + days);
  return d.toISOString().replace('.000Z', 'Z');
};

const PLACEHOLDER = '<CONTRACT_ID>';

/**
 * How to call the API, with a contract of this store (an active one, which the pause sample can pause), so a sample
 * copied as it is answers 200; a store without contracts gets a placeholder, said to be one.
 */
function UsageCard() {
  const { api } = useAdminApi();
  const [contractId, setContractId] = useState<string | null | undefined>(undefined);
  useEffect(() => {
    let live = true;
    (async () => {
      const active = await api.contracts({ status: ['ACTIVE'], limit: 1 });
      const any = active.contracts[0] ?? (await api.contracts({ limit: 1 })).contracts[0];
      if (live) setContractId(any?.id ?? null);
    })().catch(() => live && setContractId(null));
    return () => {
      live = false;
    };
  }, [api]);
  const base = window.location.origin;
  const id = contractId ?? PLACEHOLDER;
  const url = `${base}/api/v1/subscription-contracts/${id}`;
  const resumeAt = daysAhead(30);
  return (
    <Card>
      <BlockStack gap="300">
        <Text as="h2" variant="headingMd">
          Using a key
        </Text>
        <Text as="p">
          Call the API from your own server, with the key in the <code>Authorization</code> header. Keep the key out of
          browsers, apps, storefronts, source control and URLs.
        </Text>
        {contractId === undefined ? (
          <SkeletonBodyText lines={4} />
        ) : (
          <>
            <Text as="p">
              {contractId ? `Read contract #${contractId} of this store:` : `Read a contract (put one of your contracts' ids in place of ${PLACEHOLDER}):`}
            </Text>
            <pre className="svc-code" data-testid="usage-read">{`curl ${url} \
  -H "Authorization: Bearer $SVC_API_KEY"`}</pre>
            <Text as="p">{contractId ? `Pause it until ${formatDate(resumeAt)} (this changes the contract; resume it on its page):` : 'Pause it until a date:'}</Text>
            <pre className="svc-code" data-testid="usage-pause">{`curl -X POST ${url}/actions \
  -H "Authorization: Bearer $SVC_API_KEY" \
  -H "Content-Type: application/json" \
  -d '{"action":"pause","resumeAt":"${resumeAt}"}'`}</pre>
          </>
        )}
        <Text as="p">
          <Link url="/docs" external>
            API reference
          </Link>
        </Text>
      </BlockStack>
    </Card>
  );
}
