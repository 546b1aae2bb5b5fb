import {
  CallToolRequestSchema,
  ErrorCode,
  InitializeRequestSchema,
  JSONRPCMessageSchema,
  LATEST_PROTOCOL_VERSION,
  ListToolsRequestSchema,
  McpError,
  PingRequestSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
  type CallToolRequest,
  type CallToolResult,
  type InitializeRequest,
  type InitializeResult,
  type ListToolsRequest,
  type PingRequest,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import { scrubKeys } from '../domain/keys.js';
import { callTool, toolListJsonFor, type ToolCallContext } from './toolCalls.js';

/**
 * The MCP server, for both transports (/mcp over HTTP, `svc mcp-stdio`): one message in, the JSON of its answer out.
 *
 * Why not the SDK's `Server`: it serves one connection at a time, so a stateless HTTP endpoint had to pool servers
 * behind a transport of its own, and its per-message machinery (an AbortController, the request parsed again by each
 * handler, the result checked against its own schema) was most of the cost of a tool call (bench/mcp.ts). The four
 * requests we serve are small enough to answer here, exactly as the SDK's Server answers them, still reading every
 * message with the SDK's own schemas (test/mcp.happy.test.ts compares the answers with a reference SDK Server).
 */

export const SERVER_INFO = { name: 'svc', title: 'svc subscription contracts', version: '1.0.0' };

export const INSTRUCTIONS =
  'Tools to read and act on the subscription contracts of the one shop the API key belongs to: get and list ' +
  'contracts, pause (optionally until a date), resume, cancel, skip the next order, reschedule the next order, and ' +
  'read a contract\'s history. Timestamps are ISO 8601 in UTC ending in Z. A refused call is a tool error whose text ' +
  'is JSON {"error":{"code","message","requestId","details"?}}; codes: invalid_request and unsupported_action (fix ' +
  'the arguments), not_found, invalid_state (not allowed from the contract\'s current status; the message says ' +
  'which are), insufficient_scope (the key lacks the permission the tool needs; the message names it), unauthorized, plan_required, ' +
  'rate_limited, unavailable, internal_error.';

const CAPABILITIES = { tools: { listChanged: false } };

/**
 * Who the messages come from: how their tool calls run, and the caller's permissions when they are known here (at
 * /mcp once the caller is resolved; over stdio, for tools/list, as the API says them).
 */
export type Exchange = ToolCallContext;

type ServedRequest = InitializeRequest | PingRequest | ListToolsRequest | CallToolRequest;
type RpcError = { code: number; message: string; data?: unknown };

/** A message as read: a request to answer, a request refused by the protocol, or one that takes no answer. */
export type McpMessage =
  | { kind: 'request'; id: RequestId; method: string; request: ServedRequest }
  | { kind: 'refused'; id: RequestId; method: string; error: RpcError }
  | { kind: 'notice' };

const NOTICE: McpMessage = { kind: 'notice' };

/** The SDK's own schema for each request served; the method is looked at first so only one schema runs. */
function parseServed(request: { method: string }) {
  switch (request.method) {
    case 'initialize':
      return InitializeRequestSchema.safeParse(request);
    case 'ping':
      return PingRequestSchema.safeParse(request);
    case 'tools/list':
      return ListToolsRequestSchema.safeParse(request);
    case 'tools/call':
      return CallToolRequestSchema.safeParse(request);
    default:
      return undefined;
  }
}

/**
 * Reads one message with the SDK's schemas: null when it is not a JSON-RPC 2.0 message at all (the transport
 * decides what that costs: a 400 over HTTP, a line on stderr over stdio). An unknown method is -32601, as the SDK
 * answers it. Params that the method's schema refuses are -32602, invalid params as JSON-RPC names them, with the
 * first issue's field: the one deliberate difference from the SDK's Server, which answers -32603 (internal error)
 * with its schema's raw issue list. Notifications (notifications/initialized; notifications/cancelled, as every
 * request runs to its end) and responses take no answer.
 */
export function readMessage(raw: unknown): McpMessage | null {
  const parsed = JSONRPCMessageSchema.safeParse(raw);
  if (!parsed.success) return null;
  const message = parsed.data;
  if (!('method' in message) || !('id' in message)) return NOTICE;
  const { id, method } = message;
  const served = parseServed(message);
  if (!served) return { kind: 'refused', id, method, error: { code: ErrorCode.MethodNotFound, message: 'Method not found' } };
  if (!served.success) {
    const issue = served.error.issues[0];
    const where = issue.path.length ? `${issue.path.join('.')}: ` : '';
    return { kind: 'refused', id, method, error: { code: ErrorCode.InvalidParams, message: scrubKeys(`Invalid ${method} request: ${where}${issue.message}`) } };
  }
  return { kind: 'request', id, method, request: served.data };
}

/** The answer to a message, as JSON; null for a message that takes none. Never rejects: failures are answers. */
export async function answer(message: McpMessage, exchange: Exchange): Promise<string | null> {
  if (message.kind === 'notice') return null;
  if (message.kind === 'refused') {
    exchange.onRefused?.(protocolErrorCode(message.error.code));
    return errorJson(message.id, message.error);
  }
  const { id, request } = message;
  try {
    switch (request.method) {
      case 'initialize':
        return resultJson(id, JSON.stringify(initializeResult(request)));
      case 'ping':
        return resultJson(id, '{}');
      case 'tools/list':
        // Only the tools the caller may call (domain/operations.ts).
        return resultJson(id, toolListJsonFor(exchange.permissions));
      case 'tools/call':
        return toolCallResponseJson(id, await callTool(request.params.name, request.params.arguments, exchange));
    }
  } catch (err) {
    const error = rpcError(err, exchange);
    exchange.onRefused?.(protocolErrorCode(error.code));
    return errorJson(id, error);
  }
}

/**
 * A JSON-RPC error (an unknown method or tool, params the protocol refuses) in the service's words, for the request
 * log: the client's request was refused (invalid_request), unless the server failed (internal_error).
 */
const protocolErrorCode = (code: number) => (code === ErrorCode.InternalError ? 'internal_error' : 'invalid_request');

/** As the SDK's Server: the client's version when we support it, else our latest (the client then decides). */
function initializeResult(request: InitializeRequest): InitializeResult {
  const requested = request.params.protocolVersion;
  const protocolVersion = SUPPORTED_PROTOCOL_VERSIONS.includes(requested) ? requested : LATEST_PROTOCOL_VERSION;
  return { protocolVersion, capabilities: CAPABILITIES, serverInfo: SERVER_INFO, instructions: INSTRUCTIONS };
}

/**
 * The SDK's McpError writes "MCP error <code>: " before its message, and a client (the SDK's among them) writes it
 * again when it turns the answer into an error of its own: "MCP error -32602: MCP error -32602: Unknown tool". The
 * code travels in its own field, so the message goes out without it (the one other difference from the SDK's Server).
 */
function bareMessage(err: McpError): string {
  const prefix = `MCP error ${err.code}: `;
  return err.message.startsWith(prefix) ? err.message.slice(prefix.length) : err.message;
}

/** A protocol error (an unknown tool); anything else is reported and answered with nothing in it. */
function rpcError(err: unknown, exchange: Exchange): RpcError {
  // Its message may echo what the client sent (a tool's name): never a key, as in every error (docs/product.md §4).
  if (err instanceof McpError) return { code: err.code, message: scrubKeys(bareMessage(err)), ...(err.data !== undefined && { data: err.data }) };
  exchange.toServiceError(err);
  return { code: ErrorCode.InternalError, message: 'Internal error' };
}

const resultJson = (id: RequestId, resultJson: string) => `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${resultJson}}`;

const errorJson = (id: RequestId, error: RpcError) => JSON.stringify({ jsonrpc: '2.0', id, error });

/**
 * A tools/call answer. A successful result's text block is the JSON of its structuredContent (toolSuccess), so that
 * JSON is written once and used for both, instead of serialising the contract twice.
 */
function toolCallResponseJson(id: RequestId, result: CallToolResult): string {
  const text = result.content[0]?.type === 'text' ? result.content[0].text : undefined;
  // `in`, not a read: a result made from JSON text (toolSuccessJson) parses it only when read.
  if (result.isError || !('structuredContent' in result) || result.content.length !== 1 || text === undefined) {
    return resultJson(id, JSON.stringify(result));
  }
  return resultJson(id, `{"content":[{"type":"text","text":${JSON.stringify(text)}}],"structuredContent":${text}}`);
}
