import { useEffect, useState, type AnchorHTMLAttributes, type MouseEvent, type ReactNode } from 'react';

/** A tiny history router: the admin has five pages, which does not justify a routing library. */
export const ROUTES = {
  api: '/admin/settings/api',
  webhooks: '/admin/settings/webhooks',
  settings: '/admin/settings',
  contracts: '/admin/contracts',
} as const;

const listeners = new Set<() => void>();

export function navigate(url: string, opts: { replace?: boolean } = {}): void {
  if (opts.replace) window.history.replaceState(null, '', url);
  else window.history.pushState(null, '', url);
  listeners.forEach((l) => l());
  window.scrollTo(0, 0);
}

export function usePath(): string {
  const [path, setPath] = useState(window.location.pathname);
  useEffect(() => {
    const update = () => setPath(window.location.pathname);
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  return path.replace(/\/+$/, '') || '/';
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
