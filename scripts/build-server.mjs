// Compiles src/ (TypeScript) into dist/ as plain ES modules, one file per source file, and copies the SQL
// migrations beside them: `npm start` runs that with plain node. It takes well under a second, so `npm start`
// builds every time and never runs a stale dist/. (A TypeScript loader at run time would cost ~35 MB of memory
// and a second V8 isolate for its loader thread; the tests and the CLI still run the sources through tsx.)
import { cpSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const src = path.join(root, 'src');
const out = path.join(root, 'dist');

const entryPoints = readdirSync(src, { recursive: true })
  .map(String)
  .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
  .map((f) => path.join(src, f));

rmSync(out, { recursive: true, force: true });
await build({
  entryPoints,
  outdir: out,
  outbase: src,
  bundle: false,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: true,
  logLevel: 'warning',
});
cpSync(path.join(src, 'db', 'migrations'), path.join(out, 'db', 'migrations'), { recursive: true });
