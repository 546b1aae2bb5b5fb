// `npm run lint:openapi`: lints the OpenAPI document the server serves with Redocly (recommended rules,
// redocly.yaml) and Spectral (spectral:oas, .spectral.yaml), and fails on any problem, warnings included: Redocly
// itself exits 0 on warnings, so both tools report as JSON and the problems are counted here. Prints one line per
// problem, or one line saying the document is clean.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeOpenapiDocument } from './openapi-document.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bin = (name: string) => path.join(root, 'node_modules', '.bin', name);

type Problem = { tool: string; severity: string; rule: string; where: string; message: string };

/** Runs a linter that prints JSON on stdout. Its stderr is shown only when it fails to produce a report. */
function runJson(cmd: string, args: string[]): unknown {
  const r = spawnSync(cmd, args, {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    // Redocly: no usage reports, no update notices. (On Node 20 it also prints a notice that its future releases
    // need Node 22 on stderr, which is about the tool, not the document.)
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
  });
  try {
    return JSON.parse(r.stdout);
  } catch {
    process.stderr.write(`${path.basename(cmd)} produced no report (exit ${r.status}):\n${r.stdout}${r.stderr}`);
    process.exit(1);
  }
}

function redocly(doc: string): Problem[] {
  const report = runJson(bin('redocly'), ['lint', '--config', 'redocly.yaml', '--format=json', '--max-problems=1000', doc]) as {
    problems: { ruleId: string; severity: string; message: string; location: { pointer?: string }[] }[];
  };
  return report.problems.map((p) => ({
    tool: 'redocly',
    severity: p.severity,
    rule: p.ruleId,
    where: p.location[0]?.pointer ?? '',
    message: p.message,
  }));
}

const SPECTRAL_SEVERITY = ['error', 'warn', 'info', 'hint'];
function spectral(doc: string): Problem[] {
  const results = runJson(bin('spectral'), ['lint', '--ruleset', '.spectral.yaml', '--format', 'json', '--fail-severity', 'hint', '--quiet', doc]) as {
    code: string;
    severity: number;
    message: string;
    path: string[];
  }[];
  return results.map((r) => ({
    tool: 'spectral',
    severity: SPECTRAL_SEVERITY[r.severity] ?? String(r.severity),
    rule: r.code,
    where: r.path.join('.'),
    message: r.message,
  }));
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-openapi-'));
try {
  const doc = path.join(dir, 'openapi.json');
  await writeOpenapiDocument(doc);
  const problems = [...redocly(doc), ...spectral(doc)];
  for (const p of problems) console.log(`${p.tool} ${p.severity} ${p.rule} ${p.where}: ${p.message}`);
  if (problems.length) {
    console.log(`OpenAPI document: ${problems.length} problem(s).`);
    process.exitCode = 1;
  } else {
    console.log('OpenAPI document: no problems (Redocly recommended, Spectral spectral:oas).');
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
