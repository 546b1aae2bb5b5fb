import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  isJSONRPCErrorResponse,
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
  type MessageExtraInfo,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';

/**
 * A server connected once to a transport that carries one stateless Streamable HTTP exchange at a time: the messages
 * of one POST go in, and `exchange` settles with the responses to every request among them. The HTTP side (headers,
 * body, status, JSON or SSE framing) stays with the Fastify route, so every HTTP-level error is the service's envelope
 * and the body is parsed once, by Fastify.
 *
 * Why not the SDK's StreamableHTTPServerTransport: in stateless mode it must be new for every request, and the server
 * it is connected to must be connected and closed around it; with the Node/Web conversion of each request, that is
 * most of the MCP cost of a call (see bench/mcp.ts). One exchange at a time per channel keeps the SDK's rule that a
 * server serves one connection: request ids from different clients never meet in one server.
 */
export class ExchangeChannel implements Transport {
  onmessage?: Transport['onmessage'];
  onclose?: () => void;
  onerror?: (error: Error) => void;
  private waiting = new Set<RequestId>();
  private responses: JSONRPCMessage[] = [];
  private settle: (() => void) | null = null;

  private constructor() {}

  /** A channel with `server` connected to it for good. */
  static async open(server: Server): Promise<ExchangeChannel> {
    const channel = new ExchangeChannel();
    await server.connect(channel);
    return channel;
  }

  async start(): Promise<void> {}

  async send(message: JSONRPCMessage): Promise<void> {
    if ((isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) && message.id !== undefined && this.waiting.delete(message.id)) {
      this.responses.push(message);
      if (this.waiting.size === 0) this.settle?.();
    }
    // Notifications and server-to-client requests have no channel in a stateless exchange; the tools send none.
  }

  async close(): Promise<void> {
    this.settle?.();
    this.onclose?.();
  }

  /** Delivers one POST's messages; resolves with the responses to its requests (none when it held only notifications). */
  exchange(messages: JSONRPCMessage[], extra: MessageExtraInfo): Promise<JSONRPCMessage[]> {
    if (this.settle) throw new Error('ExchangeChannel: one exchange at a time');
    // A cancellation names a request of another POST, which never runs on this exchange; delivering it could only
    // cancel a same-id request of this batch and leave it unanswered.
    const delivered = messages.filter((m) => !(isJSONRPCNotification(m) && m.method === 'notifications/cancelled'));
    const responses: JSONRPCMessage[] = [];
    this.responses = responses;
    this.waiting = new Set(delivered.filter(isJSONRPCRequest).map((m) => m.id));
    if (this.waiting.size === 0) {
      for (const m of delivered) this.onmessage?.(m, extra);
      return Promise.resolve(responses);
    }
    return new Promise((resolve) => {
      this.settle = () => {
        this.settle = null;
        resolve(responses);
      };
      for (const m of delivered) this.onmessage?.(m, extra);
    });
  }
}
