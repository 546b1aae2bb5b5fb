import type { FastifyInstance } from 'fastify';
import { MESSAGES, ServiceError } from '../domain/errors.js';
import type { ServiceContext } from '../services/context.js';
import { faviconRoute } from './favicon.js';

/**
 * /healthz: the process is up. /readyz: the database answers (503 `unavailable` when it does not). Also the other
 * root-level route outside the API, the admin and MCP: /favicon.ico, which browsers request by themselves.
 */
export async function healthRoutes(app: FastifyInstance, opts: { ctx: ServiceContext }): Promise<void> {
  faviconRoute(app);
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async () => {
    try {
      await withTimeout(opts.ctx.db.ping(), 2000);
    } catch {
      throw new ServiceError('unavailable', MESSAGES.unavailable, { headers: { 'retry-after': '5' } });
    }
    return { status: 'ready' };
  });
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error('timeout')), ms);
    }),
  ]);
}
