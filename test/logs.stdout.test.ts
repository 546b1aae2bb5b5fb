import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';

/**
 * Standard output as svc writes it: info lines in blocks (not one write per request), warnings at once with every
 * line before them, in order, and nothing lost at exit.
 */
describe('logging to standard output', () => {
  it('writes a warning at once, after the lines before it, and every line by exit, in order', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/stdoutLogger.ts'], { stdio: ['pipe', 'pipe', 'inherit'] });
    const lines: { n: number; msg?: string; at: number }[] = [];
    createInterface({ input: child.stdout }).on('line', (l) => {
      const j = JSON.parse(l) as { n?: number; requestId?: string; msg: string };
      lines.push({ n: j.n ?? Number(j.requestId!.slice(2)), msg: j.msg, at: Date.now() });
    });
    // The warning arrives without waiting for a block to fill or for the once-a-second flush.
    const started = Date.now();
    while (!lines.some((l) => l.n === 4) && Date.now() - started < 10_000) await new Promise((r) => setTimeout(r, 10));
    expect(lines.map((l) => l.n)).toEqual([1, 2, 3, 4]);
    child.stdin.write('go\n');
    const code = await new Promise<number | null>((r) => child.on('exit', r));
    await new Promise((r) => setTimeout(r, 50));
    expect(code).toBe(0);
    expect(lines.map((l) => l.n)).toEqual(Array.from({ length: 2005 }, (_, i) => i + 1));
    expect(lines.at(-1)!.msg).toBe('last');
  });
});
