import { SUPPORTED_PROTOCOL_VERSIONS, type CallToolRequest } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { ERROR_STATUS, ServiceError, type ErrorCode } from '../domain/errors.js';
import { scrubKeys } from '../domain/keys.js';
import { requireJsonBody } from '../http/body.js';
import { toServiceError } from '../http/errors.js';
import { AuthError } from '../services/authenticateApiKey.js';
import type { ServiceContext } from '../services/context.js';
import { answer, readMessage, type Exchange, type McpMessage } from './dispatch.js';
import { serviceOperations } from './operations.js';
import { readsContractFirst } from './toolCalls.js';

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
 * An HTTP POST whose JSON is not a message the server can take: 400 in the service's envelope, like every HTTP-level
 * error (docs/product.md §4). An MCP client reads a non-2xx answer as a transport error and shows its text.
 */
function notJsonRpc(message: string): ServiceError {
  return new ServiceError('invalid_request', `Invalid MCP request: ${message}`);
}

/** A POST's messages, all read before any runs: a body the server cannot take is refused as a whole. */
function readBody(body: unknown): McpMessage[] {
  const raw = Array.isArray(body) ? body : [body];
  if (raw.length === 0 || raw.length > MAX_BATCH) throw notJsonRpc(`a batch holds 1 to ${MAX_BATCH} messages.`);
  const messages = raw.map(readMessage);
  if (messages.includes(null)) throw notJsonRpc('the body is not a JSON-RPC 2.0 message.');
  const requests = (messages as McpMessage[]).filter((m) => m.kind !== 'notice');
  if (messages.length > 1 && requests.some((m) => m.method === 'initialize')) throw notJsonRpc('initialize must be sent alone.');
  // Answers are matched to requests by id: two requests with one id in one exchange could not be told apart.
  if (new Set(requests.map((m) => m.id)).size !== requests.length) throw notJsonRpc('two requests of a batch share an id.');
  return messages as McpMessage[];
}

/** A tool name as the request log shows it: a name of a tool's shape as sent (secrets scrubbed), else a placeholder. */
const TOOL_NAME = /^[A-Za-z0-9_.-]{1,100}$/;

/** The tools a POST calls, for the request log: comma-separated; undefined if none. */
function toolsCalled(messages: McpMessage[]): string | undefined {
  let names: string | undefined;
  for (const m of messages) {
    if (m.kind !== 'request' || m.method !== 'tools/call') continue;
    const sent = String((m.request as CallToolRequest).params.name);
    const name = TOOL_NAME.test(sent) ? scrubKeys(sent) : '(not a tool name)';
    names = names === undefined ? name : `${names},${name}`;
  }
  return names;
}

/** A POST holding one tools/call of a tool whose first step reads the contract it names. */
function confirmedByItsRead(messages: McpMessage[]): boolean {
  const [m] = messages;
  return messages.length === 1 && m.kind === 'request' && m.method === 'tools/call' && readsContractFirst((m.request as CallToolRequest).params.name);
}

/**
 * The MCP server over Streamable HTTP at /mcp: stateless, one POST = one exchange, answered as JSON (or as an event
 * stream for a client that accepts only that). GET and DELETE get 405 from the app's not-found handler: there is no
 * session and no server-initiated stream.
 *
 * The key gate has confirmed the key before this runs (401 with WWW-Authenticate: Bearer, 403, 429 otherwise), before
 * the body is read: an unauthenticated caller costs no parsing and learns nothing about what it sent. Everything else
 * HTTP-level is the service's envelope too, like every other route: wrong method (405), media type (415), size (413),
 * unreadable JSON (400), an unsupported MCP-Protocol-Version header (400), and JSON that is not a message the server
 * takes (400 invalid_request: not JSON-RPC, an empty or oversized batch, initialize in a batch, repeated ids). Inside
 * a well-formed exchange, the protocol answers in JSON-RPC (dispatch.ts) and a refused tool call is a tool result
 * carrying the envelope.
 */
export async function mcpRoutes(app: FastifyInstance, opts: { ctx: ServiceContext }): Promise<void> {
  const { ctx } = opts;

  app.post('/mcp', { schema: { hide: true }, preValidation: requireJsonBody, config: { mcp: true } }, async (req, reply) => {
    const version = req.headers['mcp-protocol-version'];
    if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(String(version))) {
      throw new ServiceError(
        'invalid_request',
        `Unsupported MCP-Protocol-Version "${String(version).slice(0, 40)}". Supported: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}.`,
      );
    }
    const messages = readBody(req.body);
    req.mcpTool = toolsCalled(messages);
    // The key itself goes no further than the gate: the tools get the caller, each resolving it for what it needs.
    const caller = req.caller!;
    // A lone call of a tool that first reads one contract resolves the caller in that read, as a GET of a contract
    // does (services/runner.ts withContract); anything else resolves it first. Either way it is resolved before
    // anything is sent, and a refusal by the gate's checks (the key, the plan, the rate limit) is the HTTP answer to
    // the whole exchange, as at connect time, never a tool result; a tool the caller lacks the permission for is a
    // tool error (insufficient_scope).
    const principal = confirmedByItsRead(messages) ? null : await caller.principal(ctx, []);
    let refusal: ServiceError | null = null;
    const exchange: Exchange = {
      ops: serviceOperations(ctx, caller),
      permissions: principal?.permissions,
      who: principal?.who,
      resolve: () => caller.principal(ctx, []),
      requestId: String(req.id),
      // The first refusal is the request log's: its code, and the status the API gives that code (the exchange
      // itself answers 200, so the log would otherwise show a refused call as a success).
      onRefused: (code) => {
        if (req.errorCode !== undefined) return;
        req.errorCode = code;
        req.mcpStatus = ERROR_STATUS[code as ErrorCode] ?? 500;
      },
      toServiceError: (err) => {
        if (err instanceof AuthError || (err instanceof ServiceError && err.code === 'rate_limited')) refusal ??= err;
        return toServiceError(err, req);
      },
    };
    // A batch's requests run together and are answered in the order they came.
    const answers = (await Promise.all(messages.map((m) => answer(m, exchange)))).filter((a): a is string => a !== null);
    // A call refused before its read (bad arguments) has not resolved the caller yet.
    if (!refusal) await caller.principal(ctx, []);
    if (refusal) throw refusal;
    if (answers.length === 0) return reply.code(202).send();
    return sendResponses(reply, req.headers.accept, answers, Array.isArray(req.body));
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
