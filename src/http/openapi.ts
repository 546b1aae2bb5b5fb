import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import { jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { isOperationName, permissionCases, permissionSentence } from '../domain/operations.js';

/**
 * The document-level parts of the OpenAPI document served at /api/v1/openapi.json (the operations come from the
 * routes' schemas). It must pass Redocly's recommended rules and Spectral's `oas` rules with no warning
 * (`npm run lint:openapi`), and `@svc/client`'s types are generated from it.
 */

/** Every tag an operation uses is declared here, with a description (test/docs.happy.test.ts checks it). */
export const OPENAPI_TAGS = [
  {
    name: 'Subscription contracts',
    description:
      'Read a shop\'s subscription contracts and their history, and act on them: pause, resume, cancel, skip the next order, reschedule.',
  },
  {
    name: 'Webhook endpoints',
    description:
      'Where svc sends contract events, signed with Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature), at least once, in order per contract, with a delivery log.',
  },
  {
    name: 'Bulk jobs',
    description:
      'One change across up to 100,000 contracts: previewed contract by contract with the next order totals before and after, then run on the same contracts, each changed at most once, one job per shop at a time.',
  },
  {
    name: 'API keys',
    description:
      'The calling key itself: what it is and what it may do. Every other operation needs permissions of the key (contracts, billing, webhooks, bulk_jobs: none, read or write), named in its x-svc-permissions; GET /key needs none.',
  },
  {
    name: 'Renewals',
    description:
      'svc bills every ACTIVE contract on its next billing date, once per cycle, and retries failed payments on the shop\'s policy: the billing attempts, upcoming renewals and the policy. Bill at once with the bill_now action.',
  },
];

export function openapiDocument(publicUrl: string | undefined): NonNullable<FastifyDynamicSwaggerOptions['openapi']> {
  return {
    openapi: '3.1.0',
    info: {
      title: 'svc subscription API',
      version: '1.0.0',
      description:
        'Act on a shop\'s subscription contracts from the shop\'s own backend. Authenticate with `Authorization: Bearer <API_KEY>`; ' +
        'keys are generated in the app\'s Settings → API screen and need the Enterprise plan. Every error has the body ' +
        '`{ "error": { "code", "message", "requestId", "details"? } }`. Every POST accepts an `Idempotency-Key` header. ' +
        'A typed TypeScript client generated from this document is `@svc/client`.',
      // Whoever runs this deployment supports its API; its reference page is where integrators start. (No support
      // address of our own is configured anywhere, so none is invented here.)
      contact: { name: 'svc API support', ...(publicUrl && { url: `${publicUrl}/docs` }) },
      // The license of this description (as Stripe's and GitHub's API descriptions are MIT): integrators generate
      // and ship clients from it, as @svc/client does.
      license: { name: 'MIT', identifier: 'MIT' },
    },
    // Without a configured PUBLIC_URL (tests, the document the client is generated from) the base URL is a variable:
    // every deployment has its own.
    servers: publicUrl
      ? [{ url: publicUrl, description: 'This deployment' }]
      : [
          {
            url: '{baseUrl}',
            description: 'Your svc deployment',
            variables: { baseUrl: { default: 'http://127.0.0.1:3000', description: 'The deployment\'s PUBLIC_URL.' } },
          },
        ],
    tags: OPENAPI_TAGS,
    components: { securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'svc_live_… API key' } } },
  };
}

type OpenApiObject = ReturnType<typeof jsonSchemaTransformObject>;

/**
 * fastify-type-provider-zod's transformObject writes every schema of Zod's global registry (every `.meta({ id })`
 * anywhere in the process) into `components.schemas`, twice: once as read (`<id>Input`) and once as written
 * (`<id>`). Routes refer only to the variant they use — responses to the output one — and admin-only schemas
 * (ApiKey) are in the registry although their routes are hidden. So the document is pruned to the schemas the rest
 * of it reaches, following `$ref`s transitively.
 */
export function transformObject(documentObject: Parameters<typeof jsonSchemaTransformObject>[0]): OpenApiObject {
  const doc = jsonSchemaTransformObject(documentObject) as OpenApiObject & { components?: { schemas?: Record<string, unknown> } };
  const schemas = doc.components?.schemas;
  if (!schemas) return doc;
  const used = new Set<string>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (node === null || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node)) {
      const match = key === '$ref' && typeof value === 'string' ? /^#\/components\/schemas\/(.+)$/.exec(value) : null;
      if (match && !used.has(match[1])) {
        used.add(match[1]);
        visit(schemas[match[1]]);
      } else visit(value);
    }
  };
  withPermissions(doc as { paths?: Record<string, Record<string, unknown>> });
  // Everything but the schemas themselves (paths, webhooks, other components) is a root of what is used.
  visit({ ...doc, components: { ...doc.components, schemas: undefined } });
  doc.components!.schemas = Object.fromEntries(Object.entries(schemas).filter(([id]) => used.has(id)));
  return doc;
}

/** An operation of the document, as far as it is read here. */
type OperationObject = { operationId?: string; description?: string; [extension: `x-${string}`]: unknown };

/**
 * Every operation says what permission of the key it needs, from the one table authorization reads
 * (domain/operations.ts): a sentence at the end of its description, and `x-svc-permissions`, a list of cases, each
 * `{ needs: [{ resource, level }], when? }` (`when`: which bodies, for an operation whose body decides, such as an
 * action). A key must hold every permission of its request's case (docs/keys-and-permissions.md).
 */
function withPermissions(doc: { paths?: Record<string, Record<string, unknown>> }): void {
  for (const item of Object.values(doc.paths ?? {})) {
    for (const op of Object.values(item) as OperationObject[]) {
      if (!op || typeof op !== 'object' || !op.operationId || !isOperationName(op.operationId)) continue;
      const name = op.operationId;
      op['x-svc-permissions'] = permissionCases(name).map((c) => ({
        ...(c.when !== undefined && { when: c.when }),
        needs: c.needs.map((n) => ({ resource: n.resource, level: n.level })),
      }));
      const sentence = permissionSentence(name);
      if (!op.description?.endsWith(sentence)) op.description = op.description ? `${op.description} ${sentence}` : sentence;
    }
  }
}
