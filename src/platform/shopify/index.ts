import type { ShopifyConfig } from '../../config.js';
import type { Database } from '../../db/client.js';
import type { Clock, ServiceContext } from '../../services/context.js';
import { ShopifyAdmin } from './admin.js';
import { ShopifyBillingGateway } from './billing.js';
import { ShopifyInstaller, type InstallLog } from './install.js';
import { ShopDirectory, ShopifyPlatform } from './port.js';
import { Reconciler } from './reconcile.js';
import { PlatformInbox } from './webhooksIn.js';

export { ShopifyAdmin } from './admin.js';
export { ShopifyPlatform } from './port.js';

/** Platform mode's pieces, built once at boot (main.ts) or by a test. */
export type Shopify = {
  admin: ShopifyAdmin;
  installer: ShopifyInstaller;
  inbox: PlatformInbox;
  reconciler: Reconciler;
  /** Renewals' gateway in this mode: billing attempts are the platform's (billing.ts). */
  billing: ShopifyBillingGateway;
  /** The app secret: webhook HMACs are made with it. */
  apiSecret: string;
};

/** The port for the service context, and what builds the rest once the context exists. */
export function shopifyPlatform(
  base: { db: Database; clock: Clock },
  config: ShopifyConfig & { timeoutMs?: number; throttleBudgetMs?: number; fetch?: typeof fetch },
): { port: ShopifyPlatform; attach(ctx: ServiceContext, opts: { publicUrl: string | (() => string); log?: InstallLog }): Shopify } {
  const admin = new ShopifyAdmin(base, config);
  const directory = new ShopDirectory(base.db);
  const port = new ShopifyPlatform(admin, directory);
  return {
    port,
    attach: (ctx, opts) => {
      const installer = new ShopifyInstaller(ctx, admin, {
        publicUrl: opts.publicUrl,
        enterprisePrice: config.enterprisePrice,
        billingTest: config.billingTest,
        log: opts.log,
      });
      return {
        admin,
        installer,
        inbox: new PlatformInbox(ctx, admin, installer),
        reconciler: new Reconciler(ctx, admin),
        billing: new ShopifyBillingGateway(ctx, admin, directory),
        apiSecret: config.apiSecret,
      };
    },
  };
}
