import type { FastifyReply, FastifyRequest } from 'fastify';
import { authenticateApiKey, type AuthenticatedKey } from '../../../services/authenticateApiKey.js';
import type { ServiceContext } from '../../../services/context.js';

declare module 'fastify' {
  interface FastifyRequest {
    apiKey?: AuthenticatedKey;
  }
}

/** Hook for /api (onRequest, before any parsing) and /mcp: authenticates the bearer key (401/403 thrown as ServiceErrors). */
export function apiKeyAuth(ctx: ServiceContext) {
  return async (req: FastifyRequest, reply: FastifyReply) => {
    try {
      req.apiKey = await authenticateApiKey({ ctx, input: { authorization: req.headers.authorization } });
    } catch (err) {
      if ((err as { code?: string }).code === 'unauthorized') reply.header('www-authenticate', 'Bearer');
      throw err;
    }
  };
}
