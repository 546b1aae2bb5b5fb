import { useEffect, useState, type AnchorHTMLAttributes, type MouseEvent, type ReactNode } from 'react';

/** A tiny history router: the admin has a handful of pages, which does not justify a routing library. */
export const ROUTES = {
  api: '/admin/settings/api',
  webhooks: '/admin/settings/webhooks',
  billingSettings: '/admin/settings/billing',
  renewals: '/admin/renewals',
  settings: '/admin/settings',
  contracts: '/admin/contracts',
  bulkJobs: '/admin/bulk-jobs',
  consent: '/admin/oauth/consent',
} as const;

/** Every page of the admin, as the path names it: the one list the shell renders from and the tab's title follows. */
export type Route =
  | { page: 'home' }
  | { page: 'api' }
  | { page: 'keyRequests'; keyId: string }
  | { page: 'connectionRequests'; connectionId: string }
  | { page: 'consent' }
  | { page: 'webhooks' }
  | { page: 'billingSettings' }
  | { page: 'settings' }
  | { page: 'renewals' }
  | { page: 'contracts' }
  | { page: 'contract'; contractId: string }
  | { page: 'bulkJobs' }
  | { page: 'bulkJob'; jobId: string }
  | { page: 'notFound' };

/** The page at `path` (without its query), or notFound. */
export function routeOf(path: string): Route {
  switch (path) {
    case '/admin':
      return { page: 'home' };
    case ROUTES.api:
      return { page: 'api' };
    case ROUTES.webhooks:
      return { page: 'webhooks' };
    case ROUTES.billingSettings:
      return { page: 'billingSettings' };
    case ROUTES.settings:
      return { page: 'settings' };
    case ROUTES.renewals:
      return { page: 'renewals' };
    case ROUTES.contracts:
      return { page: 'contracts' };
    case ROUTES.bulkJobs:
      return { page: 'bulkJobs' };
    case ROUTES.consent:
      return { page: 'consent' };
  }
  const jobId = bulkJobIdOf(path);
  if (jobId) return { page: 'bulkJob', jobId };
  const contractId = contractIdOf(path);
  if (contractId) return { page: 'contract', contractId };
  const keyId = keyIdOfRequestsPath(path);
  if (keyId) return { page: 'keyRequests', keyId };
  const connectionId = connectionIdOfRequestsPath(path);
  if (connectionId) return { page: 'connectionRequests', connectionId };
  return { page: 'notFound' };
}

/** The browser tab's title of the page at `path`, so each tab (and the history) says which page it is. */
export function pageTitle(path: string): string {
  const route = routeOf(path);
  const title = (): string | null => {
    switch (route.page) {
      case 'home':
        return null;
      case 'api':
        return 'Settings → API';
      case 'keyRequests':
        return 'Requests of a key · Settings → API';
      case 'connectionRequests':
        return 'Requests of a connected app · Settings → API';
      case 'consent':
        return 'Connect an app';
      case 'webhooks':
        return 'Settings → Webhooks';
      case 'billingSettings':
        return 'Settings → Billing';
      case 'settings':
        return 'Settings';
      case 'renewals':
        return 'Renewals';
      case 'contracts':
        return 'Contracts';
      case 'contract':
        return `Contract #${route.contractId}`;
      case 'bulkJobs':
        return 'Bulk jobs';
      case 'bulkJob':
        return 'Bulk job';
      case 'notFound':
        return 'Page not found';
    }
  };
  const page = title();
  return page ? `${page} · svc` : 'svc';
}

/** A contract's own page. */
export const contractUrl = (id: string) => `${ROUTES.contracts}/${encodeURIComponent(id)}`;
/** A bulk job's own page. */
export const bulkJobUrl = (id: string) => `${ROUTES.bulkJobs}/${encodeURIComponent(id)}`;
/** The job id of a bulk job's page's path, or null. */
export const bulkJobIdOf = (path: string): string | null => /^\/admin\/bulk-jobs\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/.exec(path)?.[1] ?? null;
/** A key's requests (Settings → API → a key). */
export const keyRequestsUrl = (keyId: string) => `${ROUTES.api}/keys/${encodeURIComponent(keyId)}/requests`;
/** The key id of a key's requests page's path, or null. */
export const keyIdOfRequestsPath = (path: string): string | null => /^\/admin\/settings\/api\/keys\/([0-9a-f-]{36})\/requests$/.exec(path)?.[1] ?? null;
/** A connected app's requests (Settings → API → Connected apps). */
export const connectionRequestsUrl = (id: string) => `${ROUTES.api}/connections/${encodeURIComponent(id)}/requests`;
/** The connection id of a connected app's requests page's path, or null. */
export const connectionIdOfRequestsPath = (path: string): string | null => /^\/admin\/settings\/api\/connections\/([0-9a-f-]{36})\/requests$/.exec(path)?.[1] ?? null;
/** The contract id of a contract page's path, or null. */
export const contractIdOf = (path: string): string | null => /^\/admin\/contracts\/(\d{1,19})$/.exec(path)?.[1] ?? null;

const listeners = new Set<() => void>();

/** Goes to `url`; `replace` changes the current entry instead (a search being typed), and keeps the scroll. */
export function navigate(url: string, opts: { replace?: boolean } = {}): void {
  if (opts.replace) window.history.replaceState(null, '', url);
  else window.history.pushState(null, '', url);
  listeners.forEach((l) => l());
  if (!opts.replace) window.scrollTo(0, 0);
}

/** The current path and query string, updated on every navigation (in-app or the browser's back and forward). */
export function useLocation(): { path: string; search: URLSearchParams } {
  const [href, setHref] = useState(window.location.pathname + window.location.search);
  useEffect(() => {
    const update = () => setHref(window.location.pathname + window.location.search);
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  const url = new URL(href, window.location.origin);
  return { path: url.pathname.replace(/\/+$/, '') || '/', search: url.searchParams };
}

export function usePath(): string {
  return useLocation().path;
}

const isInternal = (url: string) => url.startsWith('/admin') && !url.startsWith('/admin/api');

/** Polaris renders every link through this (AppProvider linkComponent), so in-app links do not reload the page. */
export function RouterLink({
  url,
  children,
  external,
  ...rest
}: { url: string; children?: ReactNode; external?: boolean } & AnchorHTMLAttributes<HTMLAnchorElement>) {
  const onClick = (e: MouseEvent<HTMLAnchorElement>) => {
    rest.onClick?.(e);
    if (e.defaultPrevented || external || !isInternal(url)) return;
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(url);
  };
  return (
    <a href={url} {...rest} onClick={onClick} {...(external ? { target: '_blank', rel: 'noopener noreferrer' } : {})}>
      {children}
    </a>
  );
}
