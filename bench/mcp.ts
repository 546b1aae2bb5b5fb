/**
 * npm run bench:mcp — MCP tool calls per second, latency and server CPU per call, at 10 concurrent clients.
 *
 * Scenarios, all in the same app, each a loop of one request type over 10 connections:
 *   naive  — the SDK's stateless pattern: a new McpServer with every tool registered (McpServer.registerTool) and a
 *            new StreamableHTTPServerTransport for each request, mounted at /mcp-naive for the comparison;
 *   served — the real /mcp endpoint, with an API key;
 *   oauth  — the real /mcp endpoint, with an OAuth access token of a connection (docs/mcp-assistants.md);
 *   api    — the same read through GET /api/v1/subscription-contracts/:id: auth plus one query, the floor an MCP call
 *            shares with every other surface.
 * Each MCP scenario is a `tools/call` of get_subscription_contract. The server runs in a child process, on svc's
 * compiled modules (dist/, as `npm start` runs them), so its CPU is measured alone, on a fresh embedded database, or
 * on PostgreSQL in a fresh schema when DATABASE_URL is set. Each scenario runs BENCH_SECONDS (default 8) after a 2 s
 * warm-up, the set repeated BENCH_ROUNDS times (default 2).
 * BENCH_ONLY=naive,served picks scenarios; BENCH_PROFILE=dir writes a CPU profile of each measured run. The last line
 * printed is one JSON object with every figure. Throughput depends on what else the machine runs: compare the rows of
 * one run, and the CPU per call, rather than runs.
 */
import { fork } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import autocannon from 'autocannon';
import { buildServer } from './support.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const CONNECTIONS = 10;
const WARMUP_SECONDS = 2;

type Ready = { type: 'ready'; port: number; key: string; accessToken: string; contractId: string };
type Cpu = { type: 'cpu'; user: number; system: number };
type Figures = { calls: number; callsPerSec: number; p50: number; p99: number; cpuMsPerCall: number; non2xx: number; errors: number };

if (process.argv.includes('--serve')) {
  await serve();
} else {
  await main();
}

/**
 * svc's modules as `npm start` runs them: compiled into dist/ (main builds it first), not through the TypeScript
 * loader the bench itself runs under (tsx keeps function names, which costs a property definition per closure made).
 */
async function svcModules() {
  const load = <T>(module: string): Promise<T> => import(new URL(`../dist/${module}.js`, import.meta.url).href) as Promise<T>;
  return {
    ...(await load<typeof import('../src/app.js')>('app')),
    ...(await load<typeof import('../src/db/client.js')>('db/client')),
    ...(await load<typeof import('../src/db/migrate.js')>('db/migrate')),
    ...(await load<typeof import('../src/http/errors.js')>('http/errors')),
    ...(await load<typeof import('../src/http/logging.js')>('http/logging')),
    ...(await load<typeof import('../src/mcp/operations.js')>('mcp/operations')),
    ...(await load<typeof import('../src/mcp/dispatch.js')>('mcp/dispatch')),
    ...(await load<typeof import('../src/mcp/toolCalls.js')>('mcp/toolCalls')),
    ...(await load<typeof import('../src/mcp/tools.js')>('mcp/tools')),
    ...(await load<typeof import('../src/services/authenticateApiKey.js')>('services/authenticateApiKey')),
    ...(await load<typeof import('../src/services/context.js')>('services/context')),
    ...(await load<typeof import('../src/services/generateKey.js')>('services/generateKey')),
    ...(await load<typeof import('../src/services/seedContracts.js')>('services/seedContracts')),
    ...(await load<typeof import('../src/services/shops.js')>('services/shops')),
    ...(await load<typeof import('../src/services/principal.js')>('services/principal')),
    ...(await load<typeof import('../src/services/oauth/clients.js')>('services/oauth/clients')),
    ...(await load<typeof import('../src/services/oauth/authorize.js')>('services/oauth/authorize')),
    ...(await load<typeof import('../src/services/oauth/tokens.js')>('services/oauth/tokens')),
  };
}

/** The child: the real app plus a naive /mcp-naive route, a shop with a key and some contracts. */
async function serve(): Promise<void> {
  const m = await svcModules();
  const { buildApp, openDatabase, migrate, toServiceError, createLogger, serviceOperations, INSTRUCTIONS, SERVER_INFO, callTool, TOOLS, authenticateApiKey, createServiceContext, systemClock, generateKey, seedContracts, setShopPlan, resolvedCaller } = m;
  const url = process.env.DATABASE_URL;
  let schema: string | undefined;
  if (url) {
    schema = `mcp_bench_${randomBytes(4).toString('hex')}`;
    const admin = await openDatabase({ kind: 'postgres', url });
    await admin.withSession((run) => run(`CREATE SCHEMA ${schema}`));
    await admin.close();
  }
  const db = url ? await openDatabase({ kind: 'postgres', url, searchPath: schema }) : await openDatabase({ kind: 'pglite' });
  await migrate(db);
  const ctx = createServiceContext({ db, clock: systemClock, freeUntil: null });
  const logger = createLogger({ level: 'warn', sink: { write: (line: string) => process.stderr.write(line) } });
  const app = await buildApp({
    ctx,
    credentials: { apiKey: 'bench', secret: 'bench-secret-0123456789abcdef' },
    logger,
    extraRoutes: (a) => {
      a.post('/mcp-naive', async (req, reply) => {
        // As a naive server does: the key looked up on every request.
        const key = await authenticateApiKey({ ctx, input: { authorization: req.headers.authorization } });
        const call = {
          ops: serviceOperations(ctx, resolvedCaller({ kind: 'shop', shopId: key.shopId, actor: { type: 'mcp', keyFingerprint: key.fingerprint }, permissions: key.permissions, who: 'This API key' })),
          requestId: String(req.id),
          toServiceError: (err: unknown) => toServiceError(err, req),
        };
        // The SDK's stateless pattern: a server with every tool registered, per request.
        const server = new McpServer(SERVER_INFO, { instructions: INSTRUCTIONS });
        for (const t of TOOLS) {
          server.registerTool(
            t.name,
            { title: t.title, description: t.description, inputSchema: t.input, outputSchema: t.output, annotations: t.annotations },
            ((args: Record<string, unknown>) => callTool(t.name, args, call)) as never,
          );
        }
        const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
        await server.connect(transport);
        reply.hijack();
        try {
          await transport.handleRequest(req.raw, reply.raw, req.body);
        } finally {
          await transport.close();
          await server.close();
        }
      });
    },
  });
  const shop = await setShopPlan({ ctx, input: { domain: `bench-${randomBytes(3).toString('hex')}.myshopify.com`, plan: 'enterprise' } });
  const { secret } = await generateKey({ ctx, input: { shopId: shop.id, name: 'bench' } });
  const [contract] = await seedContracts({ ctx, input: { shopId: shop.id, count: 100 } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as { port: number }).port;
  // A connection of the shop, approved for everything: its access token (bound to this server's /mcp, as the bench
  // calls it).
  const base = `http://127.0.0.1:${port}`;
  const { client_id } = (await m.registerClient(ctx, { client_name: 'bench', redirect_uris: ['http://127.0.0.1:9/cb'] })) as { client_id: string };
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const authorization = await m.checkAuthorizationRequest(ctx, { response_type: 'code', client_id, code_challenge: challenge, code_challenge_method: 'S256' }, `${base}/mcp`, base);
  const { redirectTo } = await m.approveAuthorization(ctx, { shopId: shop.id, request: authorization, approved: authorization.asked, issuer: base });
  const tokens = await m.exchangeCode(ctx, { code: new URL(redirectTo).searchParams.get('code')!, code_verifier: verifier, client_id });
  // BENCH_PROFILE=dir: a CPU profile of the measured runs only (not of startup), one file per scenario.
  const inspector = new Session();
  inspector.connect();
  await inspector.post('Profiler.enable');
  process.on('message', async (m: { type: string; name?: string }) => {
    if (m.type === 'profile-start') {
      await inspector.post('Profiler.start');
      process.send!({ type: 'profile-started' });
    } else if (m.type === 'profile-stop') {
      const { profile } = await inspector.post('Profiler.stop');
      writeFileSync(`${process.env.BENCH_PROFILE}/${m.name}.cpuprofile`, JSON.stringify(profile));
      process.send!({ type: 'profile-stopped' });
    } else if (m.type === 'cpu') {
      const u = process.cpuUsage();
      process.send!({ type: 'cpu', user: u.user, system: u.system } satisfies Cpu);
    } else if (m.type === 'stop') {
      await app.close();
      if (url) {
        await db.withSession((run) => run(`DROP SCHEMA IF EXISTS ${schema} CASCADE`));
      }
      await db.close();
      process.exit(0);
    }
  });
  process.send!({ type: 'ready', port, key: secret, accessToken: tokens.access_token, contractId: contract.id } satisfies Ready);
}

async function main(): Promise<void> {
  buildServer();
  const child = fork(new URL(import.meta.url).pathname, ['--serve'], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const next = <T>(type: string) =>
    new Promise<T>((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`bench server exited with ${code}`));
      const onMessage = (m: { type: string }) => {
        if (m.type !== type) return;
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(m as T);
      };
      child.on('message', onMessage);
      child.once('exit', onExit);
    });
  const ready = await next<Ready>('ready');
  const cpu = async () => {
    child.send({ type: 'cpu' });
    const c = await next<Cpu>('cpu');
    return c.user + c.system;
  };
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: { name: 'get_subscription_contract', arguments: { contractId: ready.contractId } },
  });
  const request = (path: string, seconds: number, credential = ready.key) =>
    autocannon({
      url: `http://127.0.0.1:${ready.port}${path}`,
      method: path.startsWith('/api') ? 'GET' : 'POST',
      connections: CONNECTIONS,
      duration: seconds,
      headers: {
        authorization: `Bearer ${credential}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-06-18',
      },
      body,
    });

  // One call by hand first: the scenario must really call the tool and get the contract back.
  for (const [path, credential] of [
    ['/mcp-naive', ready.key],
    ['/mcp', ready.key],
    ['/mcp', ready.accessToken],
  ]) {
    const res = await fetch(`http://127.0.0.1:${ready.port}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body,
    });
    const json = (await res.json()) as { result?: { structuredContent?: { contract?: { id: string } } } };
    if (res.status !== 200 || json.result?.structuredContent?.contract?.id !== ready.contractId) {
      throw new Error(`${path} did not return the contract: ${res.status} ${JSON.stringify(json).slice(0, 300)}`);
    }
  }

  const results: Record<string, Figures[]> = { naive: [], served: [], oauth: [], api: [] };
  const only = process.env.BENCH_ONLY?.split(',');
  const scenarios = ([
    ['naive', '/mcp-naive'],
    ['served', '/mcp'],
    ['oauth', '/mcp'],
    // The same read through the HTTP API: the floor an MCP call cannot go below (auth + the query).
    ['api', `/api/v1/subscription-contracts/${ready.contractId}`],
  ] as const).filter(([name]) => !only || only.includes(name));
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [name, path] of scenarios) {
      const credential = name === 'oauth' ? ready.accessToken : ready.key;
      await request(path, WARMUP_SECONDS, credential);
      if (process.env.BENCH_PROFILE) {
        child.send({ type: 'profile-start' });
        await next('profile-started');
      }
      const before = await cpu();
      const r = await request(path, SECONDS, credential);
      const used = (await cpu()) - before;
      if (process.env.BENCH_PROFILE) {
        child.send({ type: 'profile-stop', name: `${name}-${round}` });
        await next('profile-stopped');
      }
      const calls = r.requests.total;
      const f: Figures = {
        calls,
        callsPerSec: Math.round(r.requests.average),
        p50: r.latency.p50,
        p99: r.latency.p99,
        cpuMsPerCall: Math.round((used / 1000 / Math.max(calls, 1)) * 1000) / 1000,
        non2xx: r.non2xx,
        errors: r.errors + r.timeouts,
      };
      results[name].push(f);
      console.log(
        `round ${round} ${name.padEnd(6)} ${String(f.callsPerSec).padStart(6)} calls/s  p50 ${f.p50} ms  p99 ${f.p99} ms  ` +
          `server CPU ${f.cpuMsPerCall} ms/call  non-2xx ${f.non2xx}  errors ${f.errors}`,
      );
    }
  }
  child.send({ type: 'stop' });
  await new Promise((r) => child.once('exit', r));
  const best = (xs: Figures[]) => Math.max(...xs.map((x) => x.callsPerSec));
  const leastCpu = (xs: Figures[]) => Math.min(...xs.map((x) => x.cpuMsPerCall));
  console.log(
    JSON.stringify({
      connections: CONNECTIONS,
      seconds: SECONDS,
      database: process.env.DATABASE_URL ? 'postgres' : 'pglite',
      results,
      speedup: results.naive.length && results.served.length ? Math.round((best(results.served) / best(results.naive)) * 10) / 10 : null,
      // Server CPU per call, naive over served (the lower of each): what the speedup would be if the load generator,
      // which shares the machine's cores, cost nothing.
      cpuSpeedup: results.naive.length && results.served.length ? Math.round((leastCpu(results.naive) / leastCpu(results.served)) * 10) / 10 : null,
      // Server CPU per call with an OAuth token over the same call with an API key (the lower of each): the target is
      // at most 1.10.
      oauthOverKey: results.oauth.length && results.served.length ? Math.round((leastCpu(results.oauth) / leastCpu(results.served)) * 100) / 100 : null,
    }),
  );
  if (Object.values(results).flat().some((f) => f.non2xx || f.errors)) process.exitCode = 1;
}
