import {
  execute,
  getOperationAST,
  GraphQLError,
  isNonNullType,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLFieldResolver,
} from 'graphql';
import { actualQueryCost, requestedQueryCost } from './cost.js';
import { mutationRoot } from './mutations.js';
import { queryRoot } from './queries.js';
import type { ResolverContext } from './resolverContext.js';
import { adminSchema, checkDocument, type PlatformError } from './schema.js';

/**
 * Resolves a field from the view objects: a function is called with (args, context), a value is returned. A field
 * the stand-in does not model answers null when the schema allows it, and an explicit error when it is non-null,
 * so a document that selects something unmodelled fails loudly instead of getting made-up data.
 */
const fieldResolver: GraphQLFieldResolver<unknown, ResolverContext> = (source, args, ctx, info) => {
  if (info.path.prev === undefined) ctx.calls.push({ field: info.fieldName, args });
  const value = (source as Record<string, unknown> | null)?.[info.fieldName];
  if (typeof value === 'function') return value.call(source, args, ctx, info);
  if (value !== undefined) return value;
  if (isNonNullType(info.returnType)) {
    throw new GraphQLError(`The stand-in does not model ${info.parentType.name}.${info.fieldName}`, {
      extensions: { code: 'STAND_IN_UNSUPPORTED' },
    });
  }
  return null;
};

/** Runs a validated document against the real schema with the stand-in's resolvers. */
export async function executeAdmin(
  document: DocumentNode,
  variables: Record<string, unknown> | undefined,
  operationName: string | undefined,
  ctx: ResolverContext,
): Promise<ExecutionResult> {
  const operation = getOperationAST(document, operationName);
  const rootValue = operation?.operation === 'mutation' ? mutationRoot(ctx) : queryRoot(ctx);
  return execute({ schema: adminSchema(), document, rootValue, contextValue: ctx, variableValues: variables, operationName, fieldResolver });
}

export type CostSettings = { maxQueryCost: number; costByOperation: Record<string, number> };

export type GraphqlAnswer = {
  status: number;
  body: unknown;
  operationName: string | null;
  validationErrors: PlatformError[];
};

/**
 * The Admin API's GraphQL endpoint after authentication: body checks, validation (errors in the platform's
 * shape), cost and throttling against the shop's bucket, execution, and the `extensions.cost` report.
 */
export async function answerGraphql(body: unknown, ctx: ResolverContext, costs: CostSettings): Promise<GraphqlAnswer> {
  const b = (body ?? {}) as { query?: unknown; variables?: unknown; operationName?: unknown };
  const explicitName = typeof b.operationName === 'string' ? b.operationName : undefined;
  if (typeof b.query !== 'string' || b.query.trim() === '') {
    return { status: 400, body: { errors: { query: 'Required parameter missing or invalid' } }, operationName: explicitName ?? null, validationErrors: [] };
  }
  const checked = checkDocument(b.query);
  if (!checked.document) return { status: 200, body: { errors: checked.errors }, operationName: explicitName ?? null, validationErrors: checked.errors };
  const { document } = checked;
  const operation = getOperationAST(document, explicitName);
  const operationName = explicitName ?? operation?.name?.value ?? null;
  const variables = b.variables && typeof b.variables === 'object' ? (b.variables as Record<string, unknown>) : {};
  const answer = (status: number, payload: unknown): GraphqlAnswer => ({ status, body: payload, operationName, validationErrors: [] });
  if (!operation) {
    return answer(200, { errors: [{ message: 'An operation name is required when the document has several operations', extensions: { code: 'OPERATION_NOT_FOUND' } }] });
  }

  const bucket = ctx.shop.bucket;
  const fixedCost = operationName ? costs.costByOperation[operationName] : undefined;
  const requested = fixedCost ?? requestedQueryCost(adminSchema(), document, operation, variables);
  if (requested > costs.maxQueryCost) {
    return answer(200, {
      errors: [
        {
          message: `Query cost is ${requested}, which exceeds the single query max cost limit (${costs.maxQueryCost}).`,
          extensions: { code: 'MAX_COST_EXCEEDED', cost: requested, maxCost: costs.maxQueryCost },
        },
      ],
      extensions: { cost: { requestedQueryCost: requested, actualQueryCost: null, throttleStatus: bucket.status() } },
    });
  }
  if (!bucket.take(requested)) {
    return answer(200, {
      errors: [{ message: 'Throttled', extensions: { code: 'THROTTLED', documentation: 'https://shopify.dev/api/usage/limits#rate-limits' } }],
      extensions: { cost: { requestedQueryCost: requested, actualQueryCost: null, throttleStatus: bucket.status() } },
    });
  }
  const result = await executeAdmin(document, variables, explicitName, ctx);
  const actual = result.data ? actualQueryCost(result.data, operation.operation === 'mutation', requested) : 0;
  bucket.refund(requested - actual);
  const out: Record<string, unknown> = {};
  if (result.errors?.length) out.errors = result.errors.map((e) => e.toJSON());
  if (result.data !== undefined) out.data = result.data;
  out.extensions = { cost: { requestedQueryCost: requested, actualQueryCost: actual, throttleStatus: bucket.status() } };
  return answer(200, out);
}
