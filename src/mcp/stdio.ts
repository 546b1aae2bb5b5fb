import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { MESSAGES, ServiceError } from '../domain/errors.js';
import { isWellFormedKey, mentionsKey } from '../domain/keys.js';
import { httpOperations } from './apiClient.js';
import { RESOURCES } from '../domain/permissions.js';
import { answer, readMessage, type Exchange, type McpMessage } from './dispatch.js';

export const DEFAULT_BASE_URL = 'http://127.0.0.1:3000';

type Io = { err: (s: string) => void };

function baseUrlProblem(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'is not a URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be an http:// or https:// URL';
  if (mentionsKey(value)) return 'must not contain an API key (set the key in SVC_API_KEY only)';
  if (url.search || url.hash) return 'must be the server\'s base URL, without a query or fragment';
  return null;
}

/**
 * `svc mcp-stdio`: the same tools as /mcp, for IDEs that launch a local process, served over stdin/stdout and run on
 * the HTTP API as any client would (SVC_BASE_URL, key in SVC_API_KEY). Stdout carries the protocol and nothing else;
 * everything for a human goes to stderr. A missing, malformed or refused key ends the process at once with a
 * message saying what to do, so the IDE shows that instead of a server without a working tool. Returns the exit
 * code when the client closes stdin.
 */
export async function runMcpStdio(
  env: NodeJS.ProcessEnv,
  io: Io,
  streams: { stdin: Readable; stdout: Writable } = { stdin: process.stdin, stdout: process.stdout },
): Promise<number> {
  const key = env.SVC_API_KEY?.trim();
  if (!key) {
    io.err(
      'svc mcp-stdio: SVC_API_KEY is not set. Generate a key in the app (Settings → API) and set it in the environment ' +
        'of this MCP server in your IDE\'s configuration.',
    );
    return 1;
  }
  if (!isWellFormedKey(key)) {
    // Never echo the value: it may be a real key with a typo.
    io.err('svc mcp-stdio: SVC_API_KEY is not a valid svc API key (svc_live_ followed by 49 letters and digits, with a matching checksum). Copy it again from where you stored it when it was generated.');
    return 1;
  }
  const baseUrl = (env.SVC_BASE_URL?.trim() || DEFAULT_BASE_URL).replace(/\/+$/, '');
  const problem = baseUrlProblem(baseUrl);
  if (problem) {
    io.err(`svc mcp-stdio: SVC_BASE_URL ${problem}: set it to the svc server's address, e.g. ${DEFAULT_BASE_URL}.`);
    return 1;
  }

  const ops = httpOperations(baseUrl, key);
  try {
    const me = await ops.currentKey();
    const can = RESOURCES.filter((r) => me.permissions[r] !== 'none').map((r) => `${r}: ${me.permissions[r]}`);
    io.err(`svc mcp-stdio: key ${me.name ? `${JSON.stringify(me.name)} ` : ''}(fingerprint ${me.fingerprint}) of ${me.shop.domain}: ${can.length ? can.join(', ') : 'no permissions'}.`);
  } catch (err) {
    const e = err instanceof ServiceError ? err : new ServiceError('internal_error', MESSAGES.internal);
    if (e.code === 'unauthorized' || e.code === 'plan_required' || e.code === 'app_not_installed') {
      io.err(`svc mcp-stdio: the svc API at ${baseUrl} refused SVC_API_KEY (${e.code}): ${e.message}`);
      return 1;
    }
    // Not reachable yet (the server may start after the IDE): serve anyway; each tool call says what is wrong.
    io.err(`svc mcp-stdio: warning: ${e.message}`);
  }

  const toServiceError = (err: unknown): ServiceError => {
    if (err instanceof ServiceError) return err;
    io.err(`svc mcp-stdio: unexpected error: ${(err as Error).message}`);
    return new ServiceError('internal_error', MESSAGES.internal);
  };
  // Each message gets an id of its own for errors raised here (the API unreachable): refusals from the API keep the
  // API's request id, the one its logs know. tools/list offers the tools the key may call as the API says it now
  // (its permissions may have changed since the start); when the API cannot say, every tool, and each call is the
  // API's to judge.
  const exchange = async (message: McpMessage): Promise<Exchange> => {
    const listing = message.kind === 'request' && message.method === 'tools/list';
    const permissions = listing ? await ops.currentKey().then((k) => k.permissions, () => undefined) : undefined;
    return { ops, toServiceError, requestId: `stdio-${randomUUID()}`, permissions };
  };

  // The stdio transport of MCP: one JSON-RPC message per line each way. Messages are answered as they come, each
  // answer written when it is ready, as the SDK's server does.
  const lines = createInterface({ input: streams.stdin, crlfDelay: Infinity });
  const underway = new Set<Promise<void>>();
  lines.on('line', (line) => {
    if (!line.trim()) return;
    let message;
    try {
      message = readMessage(JSON.parse(line));
    } catch {
      message = null;
    }
    if (!message) {
      io.err('svc mcp-stdio: ignored a line that is not a JSON-RPC 2.0 message.');
      return;
    }
    const received = message;
    const answering = exchange(received).then((x) => answer(received, x)).then((json) => {
      if (json !== null) streams.stdout.write(`${json}\n`);
    });
    underway.add(answering);
    void answering.finally(() => underway.delete(answering));
  });
  io.err(`svc mcp-stdio: serving the svc tools on stdio, calling ${baseUrl}.`);
  // The client closing stdin ends the server, once the answers under way are written.
  await once(lines, 'close');
  await Promise.all(underway);
  return 0;
}
