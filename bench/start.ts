import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, root } from './support.js';

/**
 * `npm start` on the embedded database, timed as a newcomer lives it: from running `npm start` to the first 200 on
 * /healthz. Once on a new data directory (the first start creates the database and migrates it), then
 * BENCH_ROUNDS (3) times on the same directory (compiled already, nothing to migrate). Prints what each start said
 * and when, and one JSON object as its last line. The machine's load average is printed beside the figures: on a
 * shared machine it moves them more than anything svc does.
 */

const rounds = Number(process.env.BENCH_ROUNDS ?? 3);

async function oneStart(dataDir: string): Promise<{ ms: number; steps: { at: number; msg: string }[] }> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn('npm', ['start'], {
    cwd: root,
    env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), DATABASE_URL: '', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const steps: { at: number; msg: string }[] = [];
  let buffered = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    let i: number;
    while ((i = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, i);
      buffered = buffered.slice(i + 1);
      try {
        const msg = String(JSON.parse(line).msg);
        if (msg !== 'request') steps.push({ at: Math.round(performance.now() - started), msg });
      } catch {
        // npm's own lines
      }
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => process.stderr.write(chunk));
  let exited = false;
  child.on('exit', () => (exited = true));
  for (;;) {
    if (exited) throw new Error('npm start exited before answering /healthz');
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).status === 200) break;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  const ms = Math.round(performance.now() - started);
  process.kill(-child.pid!, 'SIGTERM');
  if (!exited) await new Promise((r) => child.once('exit', r));
  return { ms, steps };
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-bench-start-'));
try {
  const load = () => os.loadavg()[0].toFixed(1);
  const first = await oneStart(path.join(dir, 'data'));
  console.log(`first start: ${first.ms} ms (load ${load()})`);
  for (const s of first.steps) console.log(`  +${s.at} ms  ${s.msg}`);
  const later: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const r = await oneStart(path.join(dir, 'data'));
    later.push(r.ms);
    console.log(`start ${i + 2}: ${r.ms} ms (load ${load()})`);
    for (const s of r.steps) console.log(`  +${s.at} ms  ${s.msg}`);
  }
  console.log(JSON.stringify({ firstStartMs: first.ms, laterStartsMs: later, loadAverage1m: Number(load()) }));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
