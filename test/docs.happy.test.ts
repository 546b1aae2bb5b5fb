import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isOperationName, OPERATIONS as OPERATION_TABLE, permissionCases, permissionSentence } from '../src/domain/operations.js';
import { between, permissionsTable, TABLE_END, TABLE_START, toolsTable, TOOLS_END, TOOLS_START } from '../scripts/permissions-table.js';
import { startTestApp, type TestApp } from './support/app.js';

/** The OpenAPI document, the reference page and the health endpoints (docs/product.md, "Operating it"). */

let t: TestApp;
let doc: any;
beforeAll(async () => {
  t = await startTestApp();
  const res = await t.inject({ url: '/api/v1/openapi.json' });
  expect(res.statusCode).toBe(200);
  doc = res.json();
});
afterAll(() => t.close());

const P = '/api/v1/subscription-contracts';
const OPERATIONS: [string, string, string[]][] = [
  ['get', P, ['200', '400', '401', '403', '500', '503']],
  ['get', `${P}/{contract_id}`, ['200', '400', '401', '403', '404', '500', '503']],
  ['get', `${P}/{contract_id}/events`, ['200', '400', '401', '403', '404', '500', '503']],
  ['post', `${P}/{contract_id}/actions`, ['200', '400', '401', '403', '404', '409', '413', '415', '500', '503']],
];

/** Follows a local $ref within the document. */
const deref = (node: any): any => (node?.$ref ? deref(node.$ref.split('/').slice(1).reduce((n: any, k: string) => n[k], doc)) : node);

describe('GET /api/v1/openapi.json', () => {
  it('is OpenAPI 3.1 with exactly the /api/v1 routes (contracts, renewals, webhook endpoints) and no admin or internal ones', () => {
    expect(doc.openapi).toMatch(/^3\.1\./);
    expect(doc.info.title).toBeTruthy();
    const W = '/api/v1/webhook-endpoints';
    expect(Object.keys(doc.paths).sort()).toEqual(
      [
        P,
        `${P}/{contract_id}`,
        `${P}/{contract_id}/actions`,
        `${P}/{contract_id}/events`,
        `${P}/{contract_id}/billing-attempts`,
        `${P}/{contract_id}/edits`,
        `${P}/{contract_id}/upcoming`,
        '/api/v1/billing-attempts',
        '/api/v1/billing-policy',
        W,
        `${W}/{id}`,
        `${W}/{id}/deliveries`,
        `${W}/{id}/deliveries/{delivery_id}/resend`,
        `${W}/{id}/resend-failed`,
        `${W}/{id}/rotate-secret`,
        `${W}/{id}/test`,
        '/api/v1/bulk-jobs',
        '/api/v1/bulk-jobs/{id}',
        '/api/v1/bulk-jobs/{id}/cancel',
        '/api/v1/bulk-jobs/{id}/results',
        '/api/v1/bulk-jobs/{id}/start',
        '/api/v1/key',
      ].sort(),
    );
    const text = JSON.stringify(doc);
    expect(text).not.toContain('/admin');
    expect(text).not.toContain('/healthz');
    expect(text).not.toContain('/readyz');
    expect(text).not.toContain('/test/');
  });

  it.each(OPERATIONS)('%s %s documents bearer auth and its error responses in the envelope', (method, path, codes) => {
    const op = doc.paths[path][method];
    expect(op, `${method} ${path}`).toBeDefined();
    expect(op.security).toEqual([{ bearerAuth: [] }]);
    for (const code of codes) expect(Object.keys(op.responses)).toContain(code);
    for (const code of codes.filter((c) => c !== '200')) {
      const schema = deref(op.responses[code].content['application/json'].schema);
      expect(schema.properties.error.required).toEqual(expect.arrayContaining(['code', 'message', 'requestId']));
    }
  });

  it('every operation has a unique operationId and only tags declared (with a description) at the top level', () => {
    const declared = new Map<string, string>(doc.tags.map((tag: any) => [tag.name, tag.description]));
    const ids: string[] = [];
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        if (!['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'].includes(method)) continue;
        expect(op.operationId, `${method} ${path}`).toMatch(/^[a-z][A-Za-z]+$/);
        ids.push(op.operationId);
        expect(op.tags?.length, `${method} ${path} tags`).toBeGreaterThan(0);
        for (const tag of op.tags) expect(declared.get(tag), `tag ${tag}`).toMatch(/\w{3,}/);
        expect(op.summary, `${method} ${path}`).toBeTruthy();
        expect(op.description, `${method} ${path}`).toBeTruthy();
      }
    }
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(expect.arrayContaining(['listSubscriptionContracts', 'getSubscriptionContract', 'listContractEvents', 'actOnSubscriptionContract']));
  });

  it('names a contact and a license, and holds only components the operations use', () => {
    expect(doc.info.contact.name).toBeTruthy();
    expect(doc.info.license.name).toBeTruthy();
    const text = JSON.stringify(doc.paths);
    const reached = new Set<string>();
    const follow = (json: string) => {
      for (const [, id] of json.matchAll(/"#\/components\/schemas\/([^"]+)"/g)) {
        if (reached.has(id)) continue;
        reached.add(id);
        follow(JSON.stringify(doc.components.schemas[id]));
      }
    };
    follow(text);
    // Unused ones used to be emitted: the `…Input` twins of response-only schemas, and the admin API's ApiKey.
    expect(Object.keys(doc.components.schemas).sort()).toEqual([...reached].sort());
  });

  it('without a PUBLIC_URL, its server is a baseUrl variable (linters and clients need one)', () => {
    expect(doc.servers).toEqual([expect.objectContaining({ url: '{baseUrl}', variables: { baseUrl: expect.objectContaining({ default: expect.any(String) }) } })]);
  });

  it('the bearer scheme is declared', () => {
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
  });

  it('is built from the validating schemas: contract_id pattern, list limits, the six actions', () => {
    const get = doc.paths[`${P}/{contract_id}`].get;
    const idParam = get.parameters.find((p: any) => p.name === 'contract_id');
    expect(idParam).toMatchObject({ in: 'path', required: true });
    expect(idParam.schema.pattern).toBe('^\\d{1,19}$');

    const list = doc.paths[P].get;
    const limit = list.parameters.find((p: any) => p.name === 'limit');
    expect(limit.schema).toMatchObject({ minimum: 1, maximum: 100, default: 50 });
    const status = list.parameters.find((p: any) => p.name === 'status');
    // One status or several (status=ACTIVE&status=PAUSED).
    expect(JSON.stringify(status.schema)).toContain(JSON.stringify(['ACTIVE', 'PAUSED', 'CANCELLED', 'EXPIRED', 'FAILED']));

    const body = deref(doc.paths[`${P}/{contract_id}/actions`].post.requestBody.content['application/json'].schema);
    const variants = (body.oneOf ?? body.anyOf).map(deref);
    expect(variants.map((v: any) => v.properties.action.const ?? v.properties.action.enum?.[0]).sort()).toEqual(['bill_now', 'cancel', 'pause', 'reschedule', 'resume', 'skip']);
    for (const v of variants) expect(v.additionalProperties).toBe(false);

    const contract = deref(deref(get.responses['200'].content['application/json'].schema).properties.contract);
    expect(Object.keys(contract.properties).sort()).toEqual(
      ['billing', 'billingPolicy', 'cancellationReason', 'cancelledAt', 'createdAt', 'customer', 'deliveryPolicy', 'discounts', 'id', 'lines', 'nextBillingDate', 'pausedAt', 'resumeAt', 'shippingAddress', 'status', 'totals', 'updatedAt'].sort(),
    );
  });
});

describe('reference page and health', () => {
  it('every operation states the key permission it needs, as domain/operations.ts has it: x-svc-permissions and a sentence', () => {
    const seen: string[] = [];
    for (const item of Object.values(doc.paths) as Record<string, any>[]) {
      for (const op of Object.values(item)) {
        expect(isOperationName(op.operationId), op.operationId).toBe(true);
        seen.push(op.operationId);
        const cases = permissionCases(op.operationId);
        expect(op['x-svc-permissions']).toEqual(cases.map((c) => ({ ...(c.when && { when: c.when }), needs: c.needs.map((n) => ({ ...n })) })));
        expect(op.description.endsWith(permissionSentence(op.operationId)), op.operationId).toBe(true);
      }
    }
    // Every operation of the table is in the document.
    expect(seen.sort()).toEqual(Object.keys(OPERATION_TABLE).sort());
    // As a reader sees them: a fixed permission, an action's by its action, a bulk job's two, and the one that needs none.
    expect(doc.paths[P].get.description).toContain('Key permission needed: `contracts: read`.');
    expect(doc.paths[`${P}/{contract_id}/actions`].post['x-svc-permissions']).toEqual([
      { when: 'action pause, resume, cancel, skip or reschedule', needs: [{ resource: 'contracts', level: 'write' }] },
      { when: 'action bill_now', needs: [{ resource: 'billing', level: 'write' }] },
    ]);
    expect(doc.paths['/api/v1/bulk-jobs'].post.description).toContain('`bulk_jobs: write` and `contracts: write`');
    expect(doc.paths['/api/v1/key'].get['x-svc-permissions']).toEqual([{ needs: [] }]);
    // A 403 that can be insufficient_scope says so; GET /key's cannot be.
    expect(doc.paths[P].get.responses['403'].description).toContain('insufficient_scope');
    expect(doc.paths['/api/v1/key'].get.responses['403'].description).not.toContain('insufficient_scope');
  });

  it('docs/keys-and-permissions.md has the tables of what each operation and each MCP tool needs, as they are', () => {
    const page = readFileSync(new URL('../docs/keys-and-permissions.md', import.meta.url), 'utf8');
    // Stale? `npm run client:generate && npx tsx scripts/permissions-table.ts` writes them again.
    expect(between(page, TABLE_START, TABLE_END)).toBe(permissionsTable(doc));
    expect(between(page, TOOLS_START, TOOLS_END)).toBe(toolsTable());
  });

  it('GET /docs: the reference written on the server from the document, every operation in it, no script and no framework', async () => {
    const res = await t.inject({ url: '/docs' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toMatch(/^<!doctype html><html lang="en">/);
    // Readable as it arrives: no loading state, no client bundle, nothing from elsewhere, no framework's branding.
    expect(res.body).not.toMatch(/loading/i);
    expect(res.body).not.toMatch(/swagger|redoc|scalar/i);
    expect(res.body).not.toMatch(/<script|<link|<iframe|src=/i);
    expect(res.headers['content-security-policy']).toMatch(/default-src 'none'/);
    expect(res.body).toContain(`<title>${doc.info.title} · API reference</title>`);
    // Every operation: its method and path, its summary, and a link to it in the navigation.
    let operations = 0;
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        operations++;
        expect(res.body).toContain(`<span class="method m-${method}">${method.toUpperCase()}</span> <code>${path}</code>`);
        expect(res.body).toContain(`id="${op.operationId}"`);
        expect(res.body).toContain(`href="#${op.operationId}"`);
      }
    }
    expect(operations).toBeGreaterThan(20);
    // Request bodies and responses by field, and the named schemas they refer to.
    expect(res.body).toContain('<caption>Request body (application/json)</caption>');
    expect(res.body).toContain('<code>idempotency-key</code>');
    expect(res.body).toContain('id="schema-SubscriptionContract"');
    expect(res.body).toContain('href="/api/v1/openapi.json"');
    expect((await t.inject({ url: '/docs/' })).headers.location).toBe('/docs');
  });

  it('/healthz and /readyz → 200', async () => {
    const health = await t.inject({ url: '/healthz' });
    expect(health.statusCode).toBe(200);
    expect(health.json()).toEqual({ status: 'ok' });
    const ready = await t.inject({ url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toEqual({ status: 'ready' });
  });
});
