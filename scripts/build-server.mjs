// Compiles src/ (TypeScript) into dist/ as plain ES modules, one file per source file, and copies the SQL
// migrations and database functions beside them: `npm start` runs that with plain node. (A TypeScript loader at run
// time would cost memory and a second V8 isolate for its loader thread; the tests and the CLI still run the sources
// through tsx.)
//
// `npm run build` always compiles. `npm start` (scripts/start.mjs) compiles only when dist/ is not what src/ would
// give: it keeps a stamp of every source file's path, size and modification time, and of this script, and compares.
// So a start never runs a stale dist/, and a second start does not pay for a build it does not need.
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const src = path.join(root, 'src');
const out = path.join(root, 'dist');
const stampFile = path.join(out, '.build-stamp.json');

/** What the build depends on: every file under src/ (sources and migrations) and this script. */
function inputsStamp() {
  const files = readdirSync(src, { recursive: true })
    .map(String)
    .sort()
    .map((f) => {
      const st = statSync(path.join(src, f));
      return st.isFile() ? `${f}:${st.size}:${st.mtimeMs}` : null;
    })
    .filter(Boolean);
  const self = statSync(fileURLToPath(import.meta.url));
  return JSON.stringify({ files, script: `${self.size}:${self.mtimeMs}` });
}

/** True when dist/ was built from exactly the files src/ holds now. */
export function upToDate() {
  try {
    return existsSync(path.join(out, 'main.js')) && readFileSync(stampFile, 'utf8') === inputsStamp();
  } catch {
    return false;
  }
}

export async function buildServer() {
  const stamp = inputsStamp();
  const { build, stop } = await import('esbuild');
  const entryPoints = readdirSync(src, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
    .map((f) => path.join(src, f));
  rmSync(out, { recursive: true, force: true });
  try {
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
  } finally {
    // esbuild serves builds from a child process; a server started in this process must not keep it.
    await stop();
  }
  cpSync(path.join(src, 'db', 'migrations'), path.join(out, 'db', 'migrations'), { recursive: true });
  cpSync(path.join(src, 'db', 'functions'), path.join(out, 'db', 'functions'), { recursive: true });
  writeFileSync(stampFile, stamp);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await buildServer();
