import type { FastifyInstance } from 'fastify';

/**
 * The API reference at /docs: the OpenAPI document the server validates with (/api/v1/openapi.json), written out as
 * one plain HTML page on the server. No script, nothing loaded from anywhere: it is readable the moment it arrives,
 * in any browser, and searchable with the browser's own find.
 */

type Json = Record<string, unknown>;
type Schema = Json & {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  oneOf?: Schema[];
  anyOf?: Schema[];
  allOf?: Schema[];
  enum?: unknown[];
  const?: unknown;
  description?: string;
  title?: string;
  format?: string;
  pattern?: string;
  default?: unknown;
  additionalProperties?: boolean | Schema;
};
type Parameter = { name: string; in: string; required?: boolean; description?: string; schema?: Schema };
type Operation = {
  operationId?: string;
  summary?: string;
  description?: string;
  tags?: string[];
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content?: Record<string, { schema?: Schema }> };
  responses?: Record<string, { description?: string; content?: Record<string, { schema?: Schema }> }>;
};
export type OpenApiDocument = {
  info: { title: string; version: string; description?: string };
  servers?: { url: string; description?: string }[];
  tags?: { name: string; description?: string }[];
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Schema> };
};

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

const esc = (s: unknown) =>
  String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');

/** Descriptions use a little Markdown: `code` spans, nothing else. */
const prose = (s: string | undefined) => (s ? esc(s).replace(/`([^`]+)`/g, '<code>$1</code>') : '');

const refName = (ref: string) => ref.replace(/^#\/components\/schemas\//, '');
const schemaAnchor = (name: string) => `schema-${name.replace(/[^A-Za-z0-9_-]/g, '-')}`;
const operationAnchor = (method: string, path: string, op: Operation) => op.operationId ?? `${method}-${path.replace(/[^A-Za-z0-9]+/g, '-')}`;

/** A schema's type in a few words, with a link for a named schema: "string (date-time)", "array of Line", "one of …". */
function typeOf(s: Schema | undefined): string {
  if (!s) return 'any';
  if (s.$ref) {
    const name = refName(s.$ref);
    return `<a href="#${schemaAnchor(name)}">${esc(name)}</a>`;
  }
  if (s.const !== undefined) return `<code>${esc(JSON.stringify(s.const))}</code>`;
  if (s.enum) return `one of ${s.enum.map((v) => `<code>${esc(JSON.stringify(v))}</code>`).join(', ')}`;
  const variants = s.oneOf ?? s.anyOf;
  if (variants) {
    const nonNull = variants.filter((v) => v.type !== 'null');
    const text = nonNull.map((v) => (v.title && !v.$ref ? esc(v.title) : typeOf(v))).join(' or ');
    return nonNull.length < variants.length ? `${text} or null` : text;
  }
  if (s.allOf?.length === 1) return typeOf(s.allOf[0]);
  const types = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  const named = types.filter((t) => t !== 'null').map((t) => {
    if (t === 'array') return `array of ${typeOf(s.items)}`;
    if (t === 'string' && s.format) return `string (${esc(s.format)})`;
    return esc(t);
  });
  const text = named.length ? named.join(' or ') : s.properties ? 'object' : 'any';
  return types.includes('null') ? `${text} or null` : text;
}

/** The object a schema describes, following one $ref, or null when it has no fields of its own to list. */
function objectOf(s: Schema | undefined, doc: OpenApiDocument): Schema | null {
  if (!s) return null;
  const target = s.$ref ? doc.components?.schemas?.[refName(s.$ref)] : s;
  return target?.properties ? target : null;
}

/** A table of an object's fields: name, type, required, what it is. */
function fieldsTable(s: Schema, caption?: string): string {
  const required = new Set(s.required ?? []);
  const rows = Object.entries(s.properties ?? {}).map(([name, p]) => {
    const notes = [p.description, p.default !== undefined ? `Default: ${JSON.stringify(p.default)}.` : undefined].filter(Boolean).join(' ');
    return (
      `<tr><th scope="row"><code>${esc(name)}</code>${required.has(name) ? ' <span class="req">required</span>' : ''}</th>` +
      `<td>${typeOf(p)}</td><td>${prose(notes)}</td></tr>`
    );
  });
  return (
    `<table>${caption ? `<caption>${esc(caption)}</caption>` : ''}` +
    `<thead><tr><th scope="col">Field</th><th scope="col">Type</th><th scope="col">Description</th></tr></thead><tbody>${rows.join('')}</tbody></table>`
  );
}

/** A request or response body: its fields when it is an object, its type otherwise, and the variants of a union. */
function bodySection(s: Schema | undefined, doc: OpenApiDocument, caption: string): string {
  const object = objectOf(s, doc);
  if (object) return fieldsTable(object, caption);
  return `<p>${esc(caption)}: ${typeOf(s)}</p>`;
}

function parametersTable(params: Parameter[]): string {
  const rows = params.map(
    (p) =>
      `<tr><th scope="row"><code>${esc(p.name)}</code>${p.required ? ' <span class="req">required</span>' : ''}</th>` +
      `<td>${esc(p.in)}</td><td>${typeOf(p.schema)}</td><td>${prose(p.description ?? p.schema?.description)}</td></tr>`,
  );
  return (
    '<table><caption>Parameters</caption><thead><tr><th scope="col">Name</th><th scope="col">In</th><th scope="col">Type</th>' +
    `<th scope="col">Description</th></tr></thead><tbody>${rows.join('')}</tbody></table>`
  );
}

function responsesList(op: Operation): string {
  const items = Object.entries(op.responses ?? {}).map(
    ([code, r]) => `<li><span class="status s${esc(code[0])}">${esc(code)}</span> ${prose(r.description)}</li>`,
  );
  return `<h4>Responses</h4><ul class="responses">${items.join('')}</ul>`;
}

function operationSection(method: string, path: string, op: Operation, doc: OpenApiDocument): string {
  const id = operationAnchor(method, path, op);
  const body = op.requestBody?.content?.['application/json']?.schema;
  const ok = Object.entries(op.responses ?? {}).find(([code]) => code.startsWith('2'));
  const okSchema = ok?.[1].content?.['application/json']?.schema;
  return (
    `<section class="op" id="${esc(id)}" aria-labelledby="${esc(id)}-title">` +
    `<h3 id="${esc(id)}-title"><span class="method m-${method}">${method.toUpperCase()}</span> <code>${esc(path)}</code></h3>` +
    `<p class="summary">${prose(op.summary)}</p>` +
    (op.description ? `<p>${prose(op.description)}</p>` : '') +
    (op.parameters?.length ? parametersTable(op.parameters) : '') +
    (body ? bodySection(body, doc, 'Request body (application/json)') : '') +
    (okSchema ? bodySection(okSchema, doc, `Response ${ok![0]} (application/json)`) : '') +
    responsesList(op) +
    '</section>'
  );
}

const STYLE = `
:root{color-scheme:light;--fg:#1a1a1a;--muted:#5c5f62;--line:#e1e3e5;--bg:#f6f6f7;--accent:#005bd3}
*{box-sizing:border-box}body{margin:0;font:15px/1.55 -apple-system,BlinkMacSystemFont,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:var(--fg);background:#fff}
a{color:var(--accent)}code{font:13px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:var(--bg);padding:0 .25em;border-radius:4px}
.layout{display:flex;align-items:flex-start}nav{position:sticky;top:0;max-height:100vh;overflow:auto;width:18rem;flex:none;padding:1.5rem 1rem;border-right:1px solid var(--line);background:var(--bg)}
nav h2{font-size:.8rem;text-transform:uppercase;letter-spacing:.04em;color:var(--muted);margin:1.2rem 0 .3rem}nav ul{list-style:none;margin:0;padding:0}nav li{margin:.15rem 0}
nav a{text-decoration:none;color:var(--fg);font-size:.9rem}nav a:hover{color:var(--accent)}
main{flex:1;min-width:0;max-width:60rem;padding:1.5rem 2rem 4rem}h1{margin:0 0 .5rem;font-size:1.7rem}h2.tag{margin:2.5rem 0 .3rem;padding-top:1rem;border-top:2px solid var(--line)}
.op{margin:1.5rem 0;padding:1rem 1.2rem;border:1px solid var(--line);border-radius:10px}.op h3{margin:0;font-size:1.05rem;overflow-wrap:anywhere}.summary{margin:.3rem 0;font-weight:600}
.method{display:inline-block;min-width:3.8rem;text-align:center;font:700 .75rem/1.8 ui-monospace,monospace;border-radius:4px;color:#fff;background:#4a4a4a}
.m-get{background:#0b6e4f}.m-post{background:#004fb0}.m-put,.m-patch{background:#8a5300}.m-delete{background:#b0001d}
table{width:100%;border-collapse:collapse;margin:.8rem 0;font-size:.9rem}caption{text-align:left;font-weight:600;padding:.2rem 0}th,td{text-align:left;vertical-align:top;padding:.35rem .5rem;border-top:1px solid var(--line)}
thead th{color:var(--muted);font-weight:600;border-top:none}tbody th{font-weight:400;white-space:nowrap}.req{color:#b0001d;font-size:.75rem}
h4{margin:.8rem 0 .2rem;font-size:.9rem}.responses{margin:0;padding-left:1.1rem}.status{font:700 .8rem ui-monospace,monospace}.s2{color:#0b6e4f}.s4{color:#8a5300}.s5{color:#b0001d}
.schema{margin:1.2rem 0}.schema h3{font-size:1rem;margin:0}.muted{color:var(--muted)}
@media (max-width:800px){.layout{display:block}nav{position:static;width:auto;max-height:none;border-right:none;border-bottom:1px solid var(--line)}main{padding:1rem}tbody th{white-space:normal}}
`;

/** The whole page: the API's description, then each tag's operations, then the named schemas they refer to. */
export function renderReferencePage(doc: OpenApiDocument): string {
  const byTag = new Map<string, { method: string; path: string; op: Operation }[]>();
  for (const tag of doc.tags ?? []) byTag.set(tag.name, []);
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const tag = op.tags?.[0] ?? 'Other';
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag)!.push({ method, path, op });
    }
  }
  const tagDescription = new Map((doc.tags ?? []).map((t) => [t.name, t.description]));
  const tags = [...byTag].filter(([, ops]) => ops.length > 0);
  const schemas = Object.entries(doc.components?.schemas ?? {}).sort(([a], [b]) => a.localeCompare(b));

  const nav = tags
    .map(
      ([tag, ops]) =>
        `<h2>${esc(tag)}</h2><ul>${ops
          .map(({ method, path, op }) => `<li><a href="#${esc(operationAnchor(method, path, op))}">${esc(op.summary ?? `${method.toUpperCase()} ${path}`)}</a></li>`)
          .join('')}</ul>`,
    )
    .join('');
  const servers = (doc.servers ?? []).map((s) => `<code>${esc(s.url)}</code>${s.description ? ` (${esc(s.description)})` : ''}`).join(', ');
  const sections = tags
    .map(
      ([tag, ops]) =>
        `<h2 class="tag" id="tag-${esc(tag.replace(/[^A-Za-z0-9]+/g, '-'))}">${esc(tag)}</h2>` +
        (tagDescription.get(tag) ? `<p>${prose(tagDescription.get(tag))}</p>` : '') +
        ops.map(({ method, path, op }) => operationSection(method, path, op, doc)).join(''),
    )
    .join('');
  const schemaSections = schemas
    .map(([name, s]) => {
      const detail = s.properties ? fieldsTable(s) : `<p>${typeOf(s)}</p>`;
      return `<section class="schema" id="${schemaAnchor(name)}"><h3><code>${esc(name)}</code></h3>${s.description ? `<p>${prose(s.description)}</p>` : ''}${detail}</section>`;
    })
    .join('');

  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">' +
    `<title>${esc(doc.info.title)} · API reference</title><style>${STYLE}</style></head><body><div class="layout">` +
    `<nav aria-label="Operations"><a href="#top"><strong>${esc(doc.info.title)}</strong></a>${nav}<h2>Schemas</h2><ul><li><a href="#schemas">All schemas</a></li></ul></nav>` +
    `<main id="top"><h1>${esc(doc.info.title)} <span class="muted">${esc(doc.info.version)}</span></h1>` +
    `<p>${prose(doc.info.description)}</p>` +
    (servers ? `<p>Base URL: ${servers}</p>` : '') +
    '<p>The OpenAPI 3.1 document this page is written from: <a href="/api/v1/openapi.json"><code>/api/v1/openapi.json</code></a>.</p>' +
    sections +
    `<h2 class="tag" id="schemas">Schemas</h2>${schemaSections}</main></div></body></html>`
  );
}

/** The page allows itself nothing but its own inline style: no script, no request anywhere, no framing. */
const DOCS_HEADERS = {
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
};

/** GET /docs: the reference page, written once from the document (the routes do not change while the process runs). */
export async function docsRoutes(app: FastifyInstance): Promise<void> {
  let html: string | undefined;
  const page = () => (html ??= renderReferencePage(app.swagger() as unknown as OpenApiDocument));
  app.get('/docs', { schema: { hide: true } }, async (_req, reply) => reply.type('text/html; charset=utf-8').headers(DOCS_HEADERS).send(page()));
  app.get('/docs/', { schema: { hide: true } }, async (_req, reply) => reply.redirect('/docs', 301));
}
