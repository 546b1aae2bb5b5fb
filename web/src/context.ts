import { createContext, useContext } from 'react';
import type { AdminApi } from './api';

export const AdminApiContext = createContext<{ api: AdminApi; shop: string | null } | null>(null);

export function useAdminApi() {
  const value = useContext(AdminApiContext);
  if (!value) throw new Error('useAdminApi outside AdminApiContext');
  return value;
}
