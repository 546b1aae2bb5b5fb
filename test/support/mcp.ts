import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'vitest';
import { MESSAGES, ServiceError } from '../../src/domain/errors.js';
import { INSTRUCTIONS, SERVER_INFO } from '../../src/mcp/dispatch.js';
import type { ContractOperations } from '../../src/mcp/operations.js';
import { callTool, TOOL_LIST } from '../../src/mcp/toolCalls.js';
import type { TestApp } from './app.js';

/** MCP tests talk to a real listening server: the SDK's client over real HTTP, or fetch for raw requests. */

export async function listen(t: TestApp): Promise<string> {
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
}

/** An SDK client connected to `${base}/mcp` with the key in the Authorization header, as an IDE configures it. */
export async function mcpClient(base: string, key: string): Promise<Client> {
  const client = new Client({ name: 'svc-tests', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  });
  await client.connect(transport);
  return client;
}

export type ToolErrorEnvelope = { code: string; message: string; requestId: string; details?: { path: string; message: string }[] };

/** The envelope a refused tool call carries in its text content (and asserts it is a tool error). */
export function toolError(result: unknown): ToolErrorEnvelope {
  const r = result as CallToolResult;
  expect(r.isError).toBe(true);
  expect(r.structuredContent).toBeUndefined();
  const text = (r.content[0] as { type: 'text'; text: string }).text;
  return JSON.parse(text).error;
}

/** The structured result of a successful tool call (and asserts the text content says the same). */
export function toolOk<T = any>(result: unknown): T {
  const r = result as CallToolResult;
  expect(r.isError ?? false).toBe(false);
  expect(JSON.parse((r.content[0] as { text: string }).text)).toEqual(r.structuredContent);
  return r.structuredContent as T;
}

/** A raw POST /mcp: for what the SDK client would never send. */
export function rawPost(base: string, body: string | object, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

export const callBody = (name: string, args: object, id: number | string = 1) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args },
});

/**
 * The SDK's own low-level Server with our tools, as /mcp once ran them: what our dispatch must answer like. `ask`
 * sends one request and resolves with the server's response to it.
 */
export async function referenceServer(call: { ops: ContractOperations }) {
  const server = new Server(SERVER_INFO, { capabilities: { tools: { listChanged: false } }, instructions: INSTRUCTIONS });
  const context = { ...call, requestId: 'reference', toServiceError: (e: unknown) => (e instanceof ServiceError ? e : new ServiceError('internal_error', MESSAGES.internal)) };
  server.setRequestHandler(ListToolsRequestSchema, () => TOOL_LIST);
  server.setRequestHandler(CallToolRequestSchema, (request) => callTool(request.params.name, request.params.arguments, context));
  const [client, end] = InMemoryTransport.createLinkedPair();
  await server.connect(end);
  const waiting = new Map<unknown, (m: JSONRPCMessage) => void>();
  client.onmessage = (m) => waiting.get((m as { id?: unknown }).id)?.(m);
  await client.start();
  return {
    ask: (message: { id: string | number }) =>
      new Promise<JSONRPCMessage>((resolve) => {
        waiting.set(message.id, resolve);
        void client.send(message as JSONRPCMessage);
      }),
    close: () => server.close(),
  };
}
