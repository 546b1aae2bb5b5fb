import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { randomUUID } from 'node:crypto';
import { Kind, parse } from 'graphql';
import { errorBody, type HttpFault, type RequestFacts } from './faults.js';
import { answerGraphql } from './graphql.js';
import { ADMIN_API_VERSION, checkDocument } from './schema.js';
import type { LoggedRequest, StandInOptions } from './options.js';
import { StandIn } from './standIn.js';
import { SHOP_DOMAIN } from './store.js';

const INVALID_TOKEN = '[API] Invalid API key or access token (unrecognized login or wrong password)';
const MAX_BODY = 1024 * 1024;

/** A running stand-in: the harness (see StandIn) plus where it listens and how to stop it. */
export type RunningStandIn = StandIn & { close(): Promise<void> };

/**
 * Starts the stand-in of the platform on 127.0.0.1 at a random port. Shops live under `/{shop}`:
 * `POST /{shop}/admin/api/2026-10/graphql.json` (header X-Shopify-Access-Token), `POST /{shop}/admin/oauth/access_token`
 * (JSON or form body), the app subscription confirmation page under `/{shop}/admin/charges/…`, and bulk operation
 * results at `/_standin/bulk/{token}.jsonl`.
 */
export async function startStandIn(options: StandInOptions): Promise<RunningStandIn> {
  const standIn = new StandIn(options) as RunningStandIn;
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    handle(standIn, req, res).catch((err) => {
      if (!res.headersSent) send(res, 500, { errors: `stand-in failure: ${(err as Error).message}` });
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  standIn.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  standIn.close = async () => {
    standIn.bulk.close();
    await standIn.webhooks.close();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const s of sockets) s.destroy();
    await closed;
  };
  return standIn;
}

function send(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'X-Request-Id': randomUUID(), ...headers });
  res.end(text);
}

async function readBody(req: http.IncomingMessage): Promise<string> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new Error('body too large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** A JSON body, or a form body (the token endpoint takes both); null when it is neither. */
function parseBody(raw: string, contentType: string | undefined): Record<string, unknown> | null {
  if (contentType?.includes('application/x-www-form-urlencoded')) return Object.fromEntries(new URLSearchParams(raw));
  try {
    const v = JSON.parse(raw);
    return v && typeof v === 'object' && !Array.isArray(v) ? v : null;
  } catch {
    return null;
  }
}

function rootFieldsOf(query: unknown): string[] {
  try {
    const doc = checkDocument(String(query)).document ?? parse(String(query));
    return doc.definitions.flatMap((d) =>
      d.kind === Kind.OPERATION_DEFINITION ? d.selectionSet.selections.flatMap((s) => (s.kind === Kind.FIELD ? [s.name.value] : [])) : [],
    );
  } catch {
    return [];
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Applies a fault; true when it took over the answer (nothing more may be written). */
async function applyFault(fault: HttpFault | undefined, res: http.ServerResponse, entry: LoggedRequest): Promise<boolean> {
  if (!fault) return false;
  entry.fault = fault.kind;
  if (fault.kind === 'latency') {
    await sleep(fault.ms);
    return false;
  }
  if (fault.kind === 'hang') return true;
  if (fault.kind === 'hangup') {
    res.socket?.destroy();
    return true;
  }
  const status = fault.status ?? 503;
  entry.status = status;
  send(res, status, fault.body ?? errorBody(status));
  return true;
}

function loggedHeaders(req: http.IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (k === 'x-shopify-access-token') continue;
    out[k] = k === 'authorization' ? '[redacted]' : String(v);
  }
  return out;
}

async function handle(standIn: StandIn, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://stand-in');
  const bulkFile = /^\/_standin\/bulk\/([0-9a-f]+)\.jsonl$/.exec(url.pathname);
  if (bulkFile && req.method === 'GET') {
    const content = standIn.bulk.files.get(bulkFile[1]);
    if (content === undefined) return send(res, 404, { errors: 'Not Found' });
    res.writeHead(200, { 'Content-Type': 'application/jsonl' });
    return void res.end(content);
  }
  const m = /^\/([^/]+)\/admin\/(.+)$/.exec(url.pathname);
  const domain = m?.[1] ?? '';
  if (!m || !SHOP_DOMAIN.test(domain) || !standIn.store.shops.has(domain)) return send(res, 404, { errors: 'Not Found' });
  const shop = standIn.shop(domain);
  const rest = m[2];
  const raw = await readBody(req);
  const entry: LoggedRequest = { at: standIn.clock.now(), shop: domain, endpoint: 'other', method: req.method ?? 'GET', path: url.pathname, headers: loggedHeaders(req) };
  if (standIn.options.keepLog !== false) standIn.requests.push(entry);
  const finish = (status: number, body: unknown, headers?: Record<string, string>) => {
    entry.status = status;
    entry.response = body;
    send(res, status, body, headers);
  };

  if (rest === 'oauth/access_token' && req.method === 'POST') {
    entry.endpoint = 'oauth';
    const body = parseBody(raw, req.headers['content-type']) ?? {};
    entry.grantType = typeof body.grant_type === 'string' ? body.grant_type : undefined;
    const facts: RequestFacts = { endpoint: 'oauth', shop: domain, operationName: null, rootFields: [] };
    if (await applyFault(standIn.faults.take(facts, 'before'), res, entry)) return;
    const answer = standIn.tokens.handle(domain, shop.installed, body);
    if (await applyFault(standIn.faults.take(facts, 'after'), res, entry)) return;
    return finish(answer.status, answer.body);
  }

  const api = /^api\/([^/]+)\/graphql\.json$/.exec(rest);
  if (api && req.method === 'POST') {
    entry.endpoint = 'graphql';
    standIn.graphqlCalls.set(domain, (standIn.graphqlCalls.get(domain) ?? 0) + 1);
    if (api[1] !== ADMIN_API_VERSION) return finish(404, { errors: 'Not Found' });
    const body = parseBody(raw, 'application/json');
    entry.query = typeof body?.query === 'string' ? body.query : undefined;
    entry.variables = body?.variables && typeof body.variables === 'object' ? (body.variables as Record<string, unknown>) : undefined;
    entry.operationName = typeof body?.operationName === 'string' ? body.operationName : null;
    const facts: RequestFacts = { endpoint: 'graphql', shop: domain, operationName: entry.operationName, rootFields: rootFieldsOf(body?.query) };
    if (await applyFault(standIn.faults.take(facts, 'before'), res, entry)) return;
    if (!shop.installed || !standIn.tokens.authenticate(domain, req.headers['x-shopify-access-token'] as string | undefined)) {
      return finish(401, { errors: INVALID_TOKEN });
    }
    const ctx = standIn.context(shop);
    const answer = await answerGraphql(body, ctx, standIn.costs);
    entry.operationName = answer.operationName;
    entry.rootCalls = ctx.calls;
    entry.validationErrors = answer.validationErrors;
    if (await applyFault(standIn.faults.take(facts, 'after'), res, entry)) return;
    return finish(answer.status, answer.body, { 'X-Shopify-API-Version': ADMIN_API_VERSION });
  }

  const charge = /^charges\/\d+\/(\d+)\/RecurringApplicationCharge\/confirm_recurring_application_charge$/.exec(rest);
  const sub = charge ? shop.appSubscriptions.find((s) => s.id === Number(charge[1])) : undefined;
  if (sub && req.method === 'GET') {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    const price = sub.lineItems.map((l) => (l.plan.kind === 'recurring' ? `${l.plan.price.amount} ${l.plan.price.currencyCode}` : l.plan.terms));
    return void res.end(
      `<!doctype html><title>Approve subscription</title><h1>${sub.name}</h1><p>${price.join(', ')}${sub.test ? ' (test)' : ''}</p>` +
        `<p>Status: ${sub.status}</p><form method="post"><button name="decision" value="approve">Approve</button>` +
        `<button name="decision" value="decline">Decline</button></form>`,
    );
  }
  if (sub && req.method === 'POST') {
    const decision = new URLSearchParams(raw).get('decision');
    if (sub.status === 'PENDING') {
      if (decision === 'decline') standIn.declineAppSubscription(domain, sub.id);
      else standIn.approveAppSubscription(domain, sub.id);
    }
    const back = new URL(sub.returnUrl);
    back.searchParams.set('charge_id', String(sub.id));
    res.writeHead(302, { Location: back.toString() });
    return void res.end();
  }
  return finish(404, { errors: 'Not Found' });
}
