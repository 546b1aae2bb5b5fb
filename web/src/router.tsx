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
} as const;

/** The browser tab's title of the page at `path`, so each tab (and the history) says which page it is. */
export function pageTitle(path: string): string {
  const id = contractIdOf(path);
  const titles: Record<string, string> = {
    [ROUTES.api]: 'Settings → API',
    [ROUTES.webhooks]: 'Settings → Webhooks',
    [ROUTES.billingSettings]: 'Settings → Billing',
    [ROUTES.settings]: 'Settings',
    [ROUTES.renewals]: 'Renewals',
    [ROUTES.contracts]: 'Contracts',
    [ROUTES.bulkJobs]: 'Bulk jobs',
  };
  const page =
    titles[path] ?? (id ? `Contract #${id}` : bulkJobIdOf(path) ? 'Bulk job' : keyIdOfRequestsPath(path) ? 'Settings → API → Requests' : path === '/admin' ? null : 'Page not found');
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
