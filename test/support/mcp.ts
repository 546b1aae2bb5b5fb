import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'vitest';
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
