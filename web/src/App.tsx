import { Frame, Navigation, TopBar } from '@shopify/polaris';
import { AutomationIcon, ChartVerticalIcon, OrderRepeatIcon, SettingsIcon } from '@shopify/polaris-icons';
import { useCallback, useEffect, useMemo, useState, createElement } from 'react';
import { createAdminApi, type ApiError } from './api';
import { forgetStandaloneToken, startSession, type SessionProblem } from './auth';
import { AdminApiContext } from './context';
import { ApiPage } from './pages/ApiPage';
import { BillingSettingsPage } from './pages/BillingSettingsPage';
import { BulkJobPage, BulkJobsPage } from './pages/BulkJobsPage';
import { ContractPage } from './pages/ContractPage';
import { ContractsPage } from './pages/ContractsPage';
import { KeyRequestsPage } from './pages/KeyRequestsPage';
import { ConsentPage } from './pages/ConsentPage';
import { NotFoundPage } from './pages/NotFoundPage';
import { RenewalsPage } from './pages/RenewalsPage';
import { SessionProblemPage } from './pages/SessionProblemPage';
import { SettingsPage } from './pages/SettingsPage';
import { WebhooksPage } from './pages/WebhooksPage';
import { navigate, pageTitle, routeOf, ROUTES, usePath } from './router';

/** Decides the session once, then renders the frame and the page for the current path. */
export function App() {
  const started = useMemo(() => startSession(), []);
  const [problem, setProblem] = useState<SessionProblem | null>('problem' in started ? started.problem : null);
  const session = 'session' in started ? started.session : null;

  const onUnauthorized = useCallback(
    (_err: ApiError) => {
      if (session?.mode === 'standalone') forgetStandaloneToken();
      setProblem({ kind: 'expired', shop: session?.shop ?? null });
    },
    [session],
  );
  const api = useMemo(() => (session ? createAdminApi(session, onUnauthorized) : null), [session, onUnauthorized]);

  if (problem || !session || !api) return <SessionProblemPage problem={problem ?? { kind: 'missing' }} embedded={session?.mode === 'embedded'} />;
  // An app's consent page opened in a tab of its own on a server set up for the shop admin: App Bridge gives no
  // session outside the admin's frame, so the page says how to open it there.
  if (session.mode === 'embedded' && window.top === window.self && window.location.pathname === ROUTES.consent) {
    return <SessionProblemPage problem={{ kind: 'app_bridge_missing' }} embedded={false} />;
  }
  return (
    <AdminApiContext.Provider value={{ api, shop: session.shop }}>
      <Shell embedded={session.mode === 'embedded'} shop={session.shop} />
    </AdminApiContext.Provider>
  );
}

/** The page for a path: one case per route (router.tsx), as the tab's title has. */
function pageOf(path: string) {
  const route = routeOf(path);
  switch (route.page) {
    case 'home':
    case 'api':
      return <ApiPage />;
    case 'keyRequests':
      return <KeyRequestsPage key={path} keyId={route.keyId} />;
    case 'connectionRequests':
      return <KeyRequestsPage key={path} connectionId={route.connectionId} />;
    case 'consent':
      return <ConsentPage />;
    case 'webhooks':
      return <WebhooksPage />;
    case 'billingSettings':
      return <BillingSettingsPage />;
    case 'settings':
      return <SettingsPage />;
    case 'renewals':
      return <RenewalsPage />;
    case 'contracts':
      return <ContractsPage />;
    case 'contract':
      return <ContractPage key={path} contractId={route.contractId} />;
    case 'bulkJobs':
      return <BulkJobsPage />;
    case 'bulkJob':
      return <BulkJobPage key={path} jobId={route.jobId} />;
    case 'notFound':
      return <NotFoundPage />;
  }
}

// Inline, so the standalone page still loads nothing from another origin.
const LOGO =
  'data:image/svg+xml,' +
  encodeURIComponent(
    '<svg xmlns="http://www.w3.org/2000/svg" width="170" height="28" viewBox="0 0 170 28">' +
      '<rect x="0" y="2" width="24" height="24" rx="6" fill="#30c48d"/>' +
      '<path d="M7 14.5l3.5 3.5 7-8" stroke="#fff" stroke-width="2.5" fill="none" stroke-linecap="round" stroke-linejoin="round"/>' +
      '<text x="33" y="19.5" font-family="-apple-system,Segoe UI,Roboto,Helvetica,Arial,sans-serif" font-size="15" font-weight="600" fill="#fff">svc subscriptions</text></svg>',
  );

function Shell({ embedded, shop }: { embedded: boolean; shop: string | null }) {
  const path = usePath();
  const [navOpen, setNavOpen] = useState(false);
  const [userMenuOpen, setUserMenuOpen] = useState(false);
  useEffect(() => {
    if (path === '/admin') navigate(ROUTES.api, { replace: true });
    setNavOpen(false);
    document.title = pageTitle(path);
  }, [path]);

  const page = pageOf(path);

  if (embedded) {
    // Inside the shop admin the platform draws the navigation from App Bridge's <ui-nav-menu>.
    return (
      <Frame>
        {createElement(
          'ui-nav-menu',
          null,
          <a href="/admin" rel="home">Home</a>,
          <a href={ROUTES.contracts}>Contracts</a>,
          <a href={ROUTES.bulkJobs}>Bulk jobs</a>,
          <a href={ROUTES.renewals}>Renewals</a>,
          <a href={ROUTES.api}>Settings → API</a>,
          <a href={ROUTES.webhooks}>Settings → Webhooks</a>,
          <a href={ROUTES.billingSettings}>Settings → Billing</a>,
        )}
        {page}
      </Frame>
    );
  }

  // Outside the shop admin the page was opened with an admin link, in either mode (standalone or platform).
  const userMenu = (
    <TopBar.UserMenu
      name={shop ?? 'Shop'}
      detail="Opened with an admin link"
      initials={(shop ?? 'S').slice(0, 1).toUpperCase()}
      actions={[{ items: [{ content: 'API reference', url: '/docs', external: true }] }]}
      open={userMenuOpen}
      onToggle={() => setUserMenuOpen((o) => !o)}
    />
  );
  const navigation = (
    <Navigation location={path}>
      <Navigation.Section
        items={[
          { label: 'Contracts', url: ROUTES.contracts, icon: OrderRepeatIcon, selected: path === ROUTES.contracts || path.startsWith(`${ROUTES.contracts}/`) },
          { label: 'Bulk jobs', url: ROUTES.bulkJobs, icon: AutomationIcon, selected: path === ROUTES.bulkJobs || path.startsWith(`${ROUTES.bulkJobs}/`) },
          { label: 'Renewals', url: ROUTES.renewals, icon: ChartVerticalIcon, selected: path === ROUTES.renewals },
        ]}
      />
      <Navigation.Section
        fill
        items={[
          {
            label: 'Settings',
            url: ROUTES.settings,
            icon: SettingsIcon,
            selected: path.startsWith(ROUTES.settings),
            subNavigationItems: [
              { label: 'API', url: ROUTES.api, matches: path === ROUTES.api || path.startsWith(`${ROUTES.api}/`) },
              { label: 'Webhooks', url: ROUTES.webhooks, matches: path === ROUTES.webhooks },
              { label: 'Billing', url: ROUTES.billingSettings, matches: path === ROUTES.billingSettings },
            ],
          },
        ]}
      />
    </Navigation>
  );
  return (
    <Frame
      logo={{ topBarSource: LOGO, width: 170, url: ROUTES.api, accessibilityLabel: 'svc subscriptions' }}
      topBar={<TopBar showNavigationToggle userMenu={userMenu} onNavigationToggle={() => setNavOpen((o) => !o)} />}
      navigation={navigation}
      showMobileNavigation={navOpen}
      onNavigationDismiss={() => setNavOpen(false)}
    >
      {page}
    </Frame>
  );
}
