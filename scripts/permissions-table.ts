// The table of docs/keys-and-permissions.md that says what each API operation needs, written from the OpenAPI
// document (each operation's x-svc-permissions, which the server derives from src/domain/operations.ts), so the page
// cannot drift from what the server checks (test/docs.happy.test.ts compares them).
//
//   tsx scripts/permissions-table.ts     rewrites the tables in docs/keys-and-permissions.md: the API's from
//                                        clients/typescript/openapi.json (run `npm run client:generate` first),
//                                        the MCP tools' from src/mcp/tools.ts
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describePermission } from '../src/domain/permissions.js';
import { TOOLS } from '../src/mcp/tools.js';

type Case = { when?: string; needs: { resource: string; level: string }[] };
type Operation = { operationId?: string; summary?: string; tags?: string[]; 'x-svc-permissions'?: Case[] };
type Document = { paths: Record<string, Record<string, Operation>> };

export const TABLE_START = '<!-- permissions table: scripts/permissions-table.ts writes it from the OpenAPI document -->';
export const TABLE_END = '<!-- end of the permissions table -->';
export const TOOLS_START = '<!-- tools table: scripts/permissions-table.ts writes it from src/mcp/tools.ts -->';
export const TOOLS_END = '<!-- end of the tools table -->';

const needs = (c: Case) => (c.needs.length ? c.needs.map((n) => `\`${n.resource}: ${n.level}\``).join(' and ') : 'none (any key)');

/** The Markdown table: one row per operation, in the document's order, grouped by its tag. */
export function permissionsTable(doc: Document): string {
  const rows: string[] = ['| | request | what it does | permission needed |', '|---|---|---|---|'];
  let tag = '';
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const cases = op['x-svc-permissions'];
      if (!cases) continue;
      const group = op.tags?.[0] ?? '';
      const label = group !== tag ? `**${group}**` : '';
      tag = group;
      const permission = cases.map((c) => (c.when ? `${needs(c)} for ${c.when}` : needs(c))).join('; ');
      rows.push(`| ${label} | \`${method.toUpperCase()} ${path.replace(/^\/api\/v1/, '')}\` | ${op.summary ?? op.operationId} | ${permission} |`);
    }
  }
  return rows.join('\n');
}

/** The MCP tools and what each needs: a tool is offered to a key only if the key holds all of it. */
export function toolsTable(): string {
  const rows = ['| tool | permission needed |', '|---|---|'];
  for (const tool of TOOLS) rows.push(`| \`${tool.name}\` | ${tool.needs.map((n) => `\`${describePermission(n)}\``).join(' and ') || 'none'} |`);
  return rows.join('\n');
}

/** The text between a start and an end marker of the page. */
export function between(page: string, startMarker: string, endMarker: string): string {
  const start = page.indexOf(startMarker);
  const end = page.indexOf(endMarker);
  if (start < 0 || end < start) throw new Error(`the page has no ${startMarker} … ${endMarker} block`);
  return page.slice(start + startMarker.length, end).trim();
}

/** The page's text with the block between the markers replaced by `table`. */
export function withTable(page: string, table: string, startMarker = TABLE_START, endMarker = TABLE_END): string {
  between(page, startMarker, endMarker);
  const start = page.indexOf(startMarker);
  const end = page.indexOf(endMarker);
  return `${page.slice(0, start + startMarker.length)}\n${table}\n${page.slice(end)}`;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const root = new URL('..', import.meta.url);
  const doc = JSON.parse(readFileSync(new URL('clients/typescript/openapi.json', root), 'utf8')) as Document;
  const page = fileURLToPath(new URL('docs/keys-and-permissions.md', root));
  const text = withTable(withTable(readFileSync(page, 'utf8'), permissionsTable(doc)), toolsTable(), TOOLS_START, TOOLS_END);
  writeFileSync(page, text);
  console.log(`wrote the permissions and tools tables of ${page}`);
}
