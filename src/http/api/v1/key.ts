import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { CurrentKey } from '../../../domain/resources.js';
import type { ServiceContext } from '../../../services/context.js';
import { getCurrentKey } from '../../../services/getCurrentKey.js';
import type { ShopPrincipal } from '../../../services/principal.js';
import { keyErrors } from './schemas.js';

/** GET /api/v1/key: what the calling key is. The one operation that needs no permission (domain/operations.ts). */
export async function keyRoutes(app: FastifyInstance, opts: { ctx: ServiceContext }): Promise<void> {
  const { ctx } = opts;
  const r = app.withTypeProvider<ZodTypeProvider>();
  const principal = (req: FastifyRequest): ShopPrincipal => req.principal!;

  r.get('/key', {
    schema: {
      operationId: 'getCurrentKey',
      summary: 'Get the calling API key',
      description:
        'What the key in the Authorization header is: its id, name, fingerprint, permissions (and the preset they equal, ' +
        'or custom) and shop: check a key, and learn what it may do, without trying an operation.',
      tags: ['API keys'],
      security: [{ bearerAuth: [] }],
      response: { 200: z.object({ key: CurrentKey }).describe('The calling key.'), ...keyErrors },
    },
    handler: async (req) => ({ key: await getCurrentKey(ctx, principal(req)) }),
  });
}
