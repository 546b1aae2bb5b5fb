/**
 * CPU profiles (V8's .cpuprofile, written by `node --cpu-prof`) read for bench:compare's BENCH_PROFILE: each side's
 * self time per request over the measured rounds only, by package (a node_modules package, a file of svc, a part of
 * node), and the parts whose time differs most between the two sides. The profiles' clock is the monotonic one that
 * process.hrtime reads in any process on the machine, so the rounds' windows, timed by the bench, select the samples.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

type ProfileNode = { id: number; callFrame: { functionName: string; url: string } };
type Profile = { nodes: ProfileNode[]; startTime: number; samples: number[]; timeDeltas: number[] };

/** A window of a round, in microseconds of the monotonic clock. */
export type Window = { from: number; to: number };

export const nowUs = (): number => Number(process.hrtime.bigint() / 1000n);

/** Where a frame's code lives: a package, a file of svc, a part of node, or V8's own entry ((garbage collector), …). */
function partOf(frame: ProfileNode['callFrame']): string {
  const { url, functionName } = frame;
  if (!url) return functionName || '(anonymous)';
  const inModules = url.lastIndexOf('/node_modules/');
  if (inModules >= 0) {
    const rest = url.slice(inModules + '/node_modules/'.length).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  if (url.startsWith('node:')) return url;
  return path.basename(url);
}

/** Microseconds of self time per part within the windows. (idle) and (program) are not the process's own work. */
function selfTime(profile: Profile, windows: Window[]): Map<string, number> {
  const part = new Map(profile.nodes.map((n) => [n.id, partOf(n.callFrame)]));
  const out = new Map<string, number>();
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i];
    if (!windows.some((w) => t >= w.from && t <= w.to)) continue;
    const name = part.get(profile.samples[i])!;
    out.set(name, (out.get(name) ?? 0) + profile.timeDeltas[i]);
  }
  out.delete('(idle)');
  out.delete('(program)');
  return out;
}

/** The one profile a side's process wrote into its directory (it writes it as it exits). */
export function readProfile(dir: string): Profile {
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  if (files.length !== 1) throw new Error(`${dir}: expected one .cpuprofile, found ${files.length}`);
  return JSON.parse(readFileSync(path.join(dir, files[0]), 'utf8')) as Profile;
}

/**
 * Lines saying, for one scenario, each side's busy time per request and the parts whose time per request differs
 * most (this side minus the other), largest rise first, then the largest falls.
 */
export function profileComparison(
  scenario: string,
  sides: { this: { profile: Profile; windows: Window[]; served: number }; other: { profile: Profile; windows: Window[]; served: number } },
  top = 12,
): string[] {
  const perRequest = (s: typeof sides.this) => {
    const times = selfTime(s.profile, s.windows);
    for (const [k, v] of times) times.set(k, v / Math.max(1, s.served));
    return times;
  };
  const mine = perRequest(sides.this);
  const theirs = perRequest(sides.other);
  const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
  const rows = [...new Set([...mine.keys(), ...theirs.keys()])].map((k) => ({ k, a: mine.get(k) ?? 0, b: theirs.get(k) ?? 0 }));
  rows.sort((x, y) => y.a - y.b - (x.a - x.b));
  const line = (r: (typeof rows)[number]) => `    ${r.a.toFixed(2).padStart(7)} ${r.b.toFixed(2).padStart(7)} ${(r.a - r.b >= 0 ? '+' : '') + (r.a - r.b).toFixed(2)}  ${r.k}`;
  // The largest rises, then the largest falls; a short list is shown whole, once.
  const falls = rows.slice(Math.max(top, rows.length - top));
  return [
    `${scenario}: busy µs per request in the profiles (idle excluded): this ${total(mine).toFixed(1)}, other ${total(theirs).toFixed(1)}; by part (this, other, difference):`,
    ...rows.slice(0, top).map(line),
    ...(falls.length ? ['    …', ...falls.map(line)] : []),
  ];
}
