import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { issuesToDetails } from '../domain/actions.js';
import { ServiceError } from '../domain/errors.js';
import { scrubKeys } from '../http/logging.js';
import type { ContractOperations } from './operations.js';
import { TOOLS, type ToolDefinition } from './tools.js';

export const SERVER_INFO = { name: 'svc', title: 'svc subscription contracts', version: '1.0.0' };

export const INSTRUCTIONS =
  'Tools to read and act on the subscription contracts of the one shop the API key belongs to: get and list ' +
  'contracts, pause (optionally until a date), resume, cancel, skip the next order, reschedule the next order, and ' +
  'read a contract\'s history. Timestamps are ISO 8601 in UTC ending in Z. A refused call is a tool error whose text ' +
  'is JSON {"error":{"code","message","requestId","details"?}}; codes: invalid_request and unsupported_action (fix ' +
  'the arguments), not_found, invalid_state (not allowed from the contract\'s current status; the message says ' +
  'which are), unauthorized, plan_required, rate_limited, unavailable, internal_error.';

/** Per exchange: whose operations, the request id for error envelopes, and how an unexpected error is reported. */
export type ToolCallContext = {
  ops: ContractOperations;
  requestId?: string;
  toServiceError(err: unknown): ServiceError;
};

/** JSON Schema for a client, inlined (no $ref) so every client can read it; draft-07 as the SDK's McpServer emits. */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Tool['inputSchema'] {
  const out = z.toJSONSchema(schema, { io, target: 'draft-7' }) as Record<string, unknown>;
  const defs = (out.definitions ?? {}) as Record<string, unknown>;
  const inline = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(inline);
    if (!node || typeof node !== 'object') return node;
    const ref = (node as { $ref?: string }).$ref;
    if (ref?.startsWith('#/definitions/')) return inline(defs[ref.slice('#/definitions/'.length)]);
    return Object.fromEntries(Object.entries(node).filter(([k]) => k !== 'definitions').map(([k, v]) => [k, inline(v)]));
  };
  return inline(out) as Tool['inputSchema'];
}

/** The tools/list answer, computed once at startup: it never changes while the process runs. */
export const TOOL_LIST: { tools: Tool[] } = {
  tools: TOOLS.map((t) => ({
    name: t.name,
    title: t.title,
    description: t.description,
    inputSchema: jsonSchema(t.input, 'input'),
    outputSchema: jsonSchema(t.output, 'output'),
    annotations: t.annotations,
  })),
};

const BY_NAME = new Map<string, ToolDefinition>(TOOLS.map((t) => [t.name, t]));

export const hasTool = (name: string): boolean => BY_NAME.has(name);

export function toolSuccess(data: Record<string, unknown>): CallToolResult {
  // Structured output for clients that read it, and the same JSON as text for those that do not.
  return { content: [{ type: 'text', text: JSON.stringify(data) }], structuredContent: data };
}

/**
 * A refusal as a tool error carrying the API's envelope, so a model can read the code and fix its call. No
 * structuredContent: the SDK's client checks any structuredContent against the tool's outputSchema, errors included.
 */
export function toolFailure(err: ServiceError, requestId = ''): CallToolResult {
  // As the HTTP envelope: a message may echo what the client sent (an unknown field's name), never a key.
  const error: Record<string, unknown> = { code: err.code, message: scrubKeys(err.message), requestId };
  if (err.details?.length) error.details = err.details.map((d) => ({ path: scrubKeys(d.path), message: scrubKeys(d.message) }));
  return { isError: true, content: [{ type: 'text', text: JSON.stringify({ error }) }] };
}

/** Validates the arguments as the API validates a request (invalid_request with details), then runs the tool. */
export async function callTool(name: string, args: unknown, call: ToolCallContext): Promise<CallToolResult> {
  const tool = BY_NAME.get(name);
  // An unknown tool is a protocol error (the client asked for something that does not exist), not a tool result.
  if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${String(name).slice(0, 80)}`);
  const parsed = tool.input.safeParse(args ?? {});
  if (!parsed.success) {
    const details = issuesToDetails(parsed.error.issues);
    const first = details[0];
    return toolFailure(
      new ServiceError('invalid_request', `Invalid arguments: ${first.path ? `${first.path} ` : ''}${first.message}.`, { details }),
      call.requestId,
    );
  }
  try {
    return toolSuccess(await tool.run(call.ops, parsed.data));
  } catch (err) {
    const failure = call.toServiceError(err);
    // A refusal relayed from the HTTP API keeps that API's request id: it is the one its logs know.
    const relayed = (failure as { requestId?: unknown }).requestId;
    return toolFailure(failure, typeof relayed === 'string' ? relayed : call.requestId);
  }
}

/**
 * An MCP server with the tools. The SDK's low-level Server rather than McpServer: the tool list is answered from
 * TOOL_LIST (McpServer converts every schema on every tools/list), arguments are validated here so a bad argument
 * comes back with the API's code and details (McpServer answers with its own text), and results are not validated
 * again against their own schemas. `resolve` finds the exchange's context in the request's auth info.
 */
export function buildToolServer(resolve: (authExtra: Record<string, unknown> | undefined) => ToolCallContext): Server {
  const server = new Server(SERVER_INFO, { capabilities: { tools: { listChanged: false } }, instructions: INSTRUCTIONS });
  server.setRequestHandler(ListToolsRequestSchema, () => TOOL_LIST);
  server.setRequestHandler(CallToolRequestSchema, (request, extra) =>
    callTool(request.params.name, request.params.arguments, resolve(extra.authInfo?.extra)),
  );
  return server;
}
