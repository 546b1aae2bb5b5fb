import {
  JSONRPCMessageSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
  isInitializeRequest,
  isJSONRPCRequest,
  type CallToolResult,
  type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { ServiceError } from '../domain/errors.js';
import { requireJsonBody } from '../http/body.js';
import { toServiceError } from '../http/errors.js';
import { AuthError } from '../services/authenticateApiKey.js';
import type { ServiceContext } from '../services/context.js';
import { ExchangeChannel } from './exchange.js';
import { serviceOperations } from './operations.js';
import { Pool } from './pool.js';
import { buildToolServer, callTool, hasTool, type ToolCallContext } from './server.js';

// A batch is one request for the rate limit: kept small so it cannot multiply the shop's budget by much. Batches left
// the protocol in 2025-06-18 and clients do not send them; older protocol versions may.
const MAX_BATCH = 10;

/** JSON unless the client accepts only an event stream (RFC 9110 lets a server ignore an Accept it cannot meet). */
function wantsEventStream(accept: string | undefined): boolean {
  if (!accept) return false;
  const a = accept.toLowerCase();
  return a.includes('text/event-stream') && !/application\/json|application\/\*|\*\/\*/.test(a);
}

/**
 * The message nearly every exchange carries, one `tools/call` of one of our tools, when it is plainly well formed:
 * exactly the keys the SDK's schemas allow and nothing optional (no `_meta`, no task). It is run directly, by the
 * same `callTool` the SDK server calls, with the result the SDK server would send; the SDK's per-message machinery
 * (the request's schemas checked again, an AbortController, the result checked against its own schema, the
 * channel) was most of the MCP cost of a call (bench/mcp.ts). Anything else goes through the SDK server.
 */
function directToolCall(body: unknown): { id: string | number; name: string; args: unknown } | null {
  if (!isPlainObject(body) || body.jsonrpc !== '2.0' || body.method !== 'tools/call') return null;
  for (const k in body) if (k !== 'jsonrpc' && k !== 'id' && k !== 'method' && k !== 'params') return null;
  const { id, params } = body;
  if (typeof id !== 'string' && !Number.isInteger(id)) return null;
  if (!isPlainObject(params)) return null;
  for (const k in params) if (k !== 'name' && k !== 'arguments') return null;
  const { name, arguments: args } = params;
  if (typeof name !== 'string' || !hasTool(name) || (args !== undefined && !isPlainObject(args))) return null;
  return { id: id as string | number, name, args };
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * A tools/call response as JSON. A successful result's text block is the JSON of its structuredContent (toolSuccess),
 * so that JSON is written once and used for both, instead of serialising the contract twice.
 */
function toolCallResponseJson(id: string | number, result: CallToolResult): string {
  const text = result.content[0]?.type === 'text' ? result.content[0].text : undefined;
  if (result.isError || !result.structuredContent || result.content.length !== 1 || text === undefined) {
    return JSON.stringify({ jsonrpc: '2.0', id, result });
  }
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[{"type":"text","text":${JSON.stringify(text)}}],"structuredContent":${text}}}`;
}

/**
 * An HTTP POST whose JSON is not a message the server can take: 400 in the service's envelope, like every HTTP-level
 * error (PRODUCT §4). An MCP client reads a non-2xx answer as a transport error and shows its text.
 */
function notJsonRpc(message: string): ServiceError {
  return new ServiceError('invalid_request', `Invalid MCP request: ${message}`);
}

/**
 * The MCP server over Streamable HTTP at /mcp: stateless, one POST = one exchange, answered as JSON (or as an event
 * stream for a client that accepts only that). GET and DELETE get 405 from the app's not-found handler: there is no
 * session and no server-initiated stream.
 *
 * Errors: everything HTTP-level is the service's envelope, like every other route — auth (401 with
 * WWW-Authenticate: Bearer, 403), wrong method (405), media type (415), size (413), unreadable JSON (400), an
 * unsupported MCP-Protocol-Version header (400), and JSON that is not a message the server takes (400
 * invalid_request: not JSON-RPC, an empty or oversized batch, repeated ids). Inside a well-formed exchange, the
 * protocol answers in JSON-RPC (an unknown method is -32601) and a refused tool call is a tool result carrying the
 * envelope.
 */
export async function mcpRoutes(app: FastifyInstance, opts: { ctx: ServiceContext }): Promise<void> {
  const { ctx } = opts;
  const channels = new Pool(() => ExchangeChannel.open(buildToolServer((extra) => extra?.call as ToolCallContext)));

  // Authentication comes first, as on the API (the app's key gate, PRODUCT §2 order): before the body is read, so
  // an unauthenticated caller costs no parsing and learns nothing about what it sent.
  app.post('/mcp', { schema: { hide: true }, preValidation: requireJsonBody }, async (req, reply) => {
    const version = req.headers['mcp-protocol-version'];
    if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(String(version))) {
      throw new ServiceError(
        'invalid_request',
        `Unsupported MCP-Protocol-Version "${String(version).slice(0, 40)}". Supported: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}.`,
      );
    }
    const key = req.apiKey!;
    // A key found revoked (or its shop without API access) by a tool's statement is an HTTP 401/403 for the whole
    // exchange, as at connect time, not a tool result.
    let refusal: AuthError | null = null;
    const call: ToolCallContext = {
      ops: serviceOperations(ctx, { shopId: key.shopId, actor: { type: 'mcp', keyFingerprint: key.fingerprint }, key }),
      requestId: String(req.id),
      toServiceError: (err) => {
        if (err instanceof AuthError) refusal = err;
        return toServiceError(err, req);
      },
    };

    const direct = directToolCall(req.body);
    if (direct) {
      const result = await callTool(direct.name, direct.args, call);
      if (refusal) throw refusal;
      return sendResponses(reply, req.headers.accept, [toolCallResponseJson(direct.id, result)], false);
    }

    const batch = Array.isArray(req.body);
    const raw: unknown[] = batch ? (req.body as unknown[]) : [req.body];
    if (raw.length === 0 || raw.length > MAX_BATCH) {
      throw notJsonRpc(`a batch holds 1 to ${MAX_BATCH} messages.`);
    }
    const messages: JSONRPCMessage[] = [];
    for (const m of raw) {
      const parsed = JSONRPCMessageSchema.safeParse(m);
      if (!parsed.success) throw notJsonRpc('the body is not a JSON-RPC 2.0 message.');
      messages.push(parsed.data);
    }
    if (messages.length > 1 && messages.some(isInitializeRequest)) {
      throw notJsonRpc('initialize must be sent alone.');
    }
    const ids = messages.filter(isJSONRPCRequest).map((m) => m.id);
    if (new Set(ids).size !== ids.length) throw notJsonRpc('two requests of a batch share an id.');

    // The key itself goes no further than the auth check (no token, no request headers): the tools get the shop
    // and the key's fingerprint.
    const responses = await channels.use((channel) =>
      channel.exchange(messages, { authInfo: { token: '', clientId: key.keyId, scopes: [], extra: { call } } }),
    );

    if (refusal) throw refusal;
    if (responses.length === 0) return reply.code(202).send();
    return sendResponses(reply, req.headers.accept, responses.map((r) => JSON.stringify(r)), batch);
  });
}

/** Responses (each already JSON) as one JSON body, or as an event stream for a client that accepts only that. */
function sendResponses(reply: FastifyReply, accept: string | undefined, responses: string[], batch: boolean): FastifyReply {
  if (wantsEventStream(accept)) {
    return reply
      .code(200)
      .header('cache-control', 'no-cache')
      .type('text/event-stream')
      .send(responses.map((r) => `event: message\ndata: ${r}\n\n`).join(''));
  }
  return reply
    .code(200)
    .type('application/json')
    .send(batch ? `[${responses.join(',')}]` : responses[0]);
}
