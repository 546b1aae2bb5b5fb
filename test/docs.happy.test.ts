import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
    expect(status.schema.enum).toEqual(['ACTIVE', 'PAUSED', 'CANCELLED', 'EXPIRED', 'FAILED']);

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
  it('GET /docs → 200 HTML', async () => {
    const res = await t.inject({ url: '/docs' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toMatch(/<html/i);
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
