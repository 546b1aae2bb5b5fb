import { ErrorCode, McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { errorEnvelope, invalidInput, issuesToDetails, type ServiceError } from '../domain/errors.js';
import { allows, insufficientScope, missing, RESOURCES, type Permissions } from '../domain/permissions.js';
import type { ContractOperations } from './operations.js';
import { TOOLS, type ToolDefinition } from './tools.js';

/** Per exchange: whose operations, the request id for error envelopes, and how an unexpected error is reported. */
export type ToolCallContext = {
  ops: ContractOperations;
  requestId?: string;
  toServiceError(err: unknown): ServiceError;
  /** Told of every refused call (the code its envelope carries): the HTTP transport's request log keeps the first. */
  onRefused?(code: string): void;
  /**
   * The caller's permissions, when resolved before the call (at /mcp, unless the call's own first read resolves
   * them): a tool outside them is refused before its arguments are looked at, as the API refuses a request before
   * its body. Otherwise the operations refuse it (the services, or the API for `svc mcp-stdio`).
   */
  permissions?: Permissions;
  /** How a refusal names the caller ("This API key"). */
  who?: string;
  /**
   * Resolves the caller when its permissions are not known yet (at /mcp, a lone call whose own first read would):
   * asked only for a call whose arguments are refused, so that a tool outside the permissions is refused for that
   * first, whatever its arguments.
   */
  resolve?(): Promise<{ permissions: Permissions; who: string }>;
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

/** A tool may be called with these permissions: each permission its operation needs is held. */
export const mayCall = (tool: Pick<ToolDefinition, 'needs'>, permissions: Permissions): boolean => tool.needs.every((n) => allows(permissions, n));

const listJsonCache = new Map<string, string>();

/**
 * The tools/list answer (JSON) for a principal's permissions: only the tools it may call, so a model is not offered
 * tools whose every call would be refused (a tool called anyway is still refused: insufficient_scope). When the
 * permissions are not known here (stdio), every tool, and the API decides. Computed once per set of permissions.
 */
export function toolListJsonFor(permissions: Permissions | undefined): string {
  const key = permissions ? RESOURCES.map((r) => permissions[r]).join(',') : '*';
  let json = listJsonCache.get(key);
  if (json === undefined) {
    const names = new Set(TOOLS.filter((t) => !permissions || mayCall(t, permissions)).map((t) => t.name));
    json = JSON.stringify({ tools: TOOL_LIST.tools.filter((t) => names.has(t.name)) });
    listJsonCache.set(key, json);
  }
  return json;
}

const BY_NAME = new Map<string, ToolDefinition>(TOOLS.map((t) => [t.name, t]));

/** True for a tool whose first step reads the one contract it names. */
export const readsContractFirst = (name: string): boolean => BY_NAME.get(name)?.readsContractFirst === true;

export function toolSuccess(data: Record<string, unknown>): CallToolResult {
  // Structured output for clients that read it, and the same JSON as text for those that do not.
  return { content: [{ type: 'text', text: JSON.stringify(data) }], structuredContent: data };
}

/**
 * toolSuccess from the result's JSON text: the structured content is that text parsed, and only if something asks
 * for it (the /mcp endpoint writes the text in both places and never does).
 */
export function toolSuccessJson(text: string): CallToolResult {
  let data: Record<string, unknown> | undefined;
  return {
    content: [{ type: 'text', text }],
    get structuredContent() {
      return (data ??= JSON.parse(text) as Record<string, unknown>);
    },
  };
}

/**
 * A refusal as a tool error carrying the API's envelope, so a model can read the code and fix its call. No
 * structuredContent: the SDK's client checks any structuredContent against the tool's outputSchema, errors included.
 */
export function toolFailure(err: ServiceError, requestId = ''): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(errorEnvelope(err, requestId)) }] };
}

/** Validates the arguments as the API validates a request (invalid_request with details), then runs the tool. */
export async function callTool(name: string, args: unknown, call: ToolCallContext): Promise<CallToolResult> {
  const tool = BY_NAME.get(name);
  // An unknown tool is a protocol error (the client asked for something that does not exist), not a tool result.
  if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${String(name).slice(0, 80)}`);
  // The permissions before the arguments, as the API checks them before the body.
  const outside = (p: Permissions, who: string | undefined): CallToolResult | null => {
    const lacking = missing(p, tool.needs);
    if (!lacking.length) return null;
    call.onRefused?.('insufficient_scope');
    return toolFailure(insufficientScope(lacking, who, p), call.requestId);
  };
  const refused = call.permissions ? outside(call.permissions, call.who) : null;
  if (refused) return refused;
  const parsed = tool.input.safeParse(args ?? {});
  if (!parsed.success) {
    if (!call.permissions && call.resolve) {
      try {
        const p = await call.resolve();
        const scope = outside(p.permissions, p.who);
        if (scope) return scope;
      } catch (err) {
        const failure = call.toServiceError(err);
        call.onRefused?.(failure.code);
        return toolFailure(failure, call.requestId);
      }
    }
    call.onRefused?.('invalid_request');
    return toolFailure(invalidInput(issuesToDetails(parsed.error.issues), 'Invalid arguments'), call.requestId);
  }
  try {
    const json = tool.runJson ? await tool.runJson(call.ops, parsed.data) : null;
    return json !== null ? toolSuccessJson(json) : toolSuccess(await tool.run(call.ops, parsed.data));
  } catch (err) {
    const failure = call.toServiceError(err);
    call.onRefused?.(failure.code);
    // A refusal relayed from the HTTP API keeps that API's request id: it is the one its logs know.
    const relayed = (failure as { requestId?: unknown }).requestId;
    return toolFailure(failure, typeof relayed === 'string' ? relayed : call.requestId);
  }
}
