import { realpathSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli } from './run.js';

/** `svc`, the operator's CLI: its commands are in commands.ts, how one is run in run.ts. */
export { runCli };
export type { PlatformStatus } from './platformStatus.js';

// The whole path, not the file name: src/main.ts (the server) is also a "main.ts".
const real = (file: string) => {
  try {
    return realpathSync(path.resolve(file));
  } catch {
    return file;
  }
};
const isMain = !!process.argv[1] && real(process.argv[1]) === real(fileURLToPath(import.meta.url));
if (isMain) {
  runCli(process.argv.slice(2), { out: (s) => process.stdout.write(s + '\n'), err: (s) => process.stderr.write(s + '\n') })
    .then((code) => {
      process.exitCode = code;
    })
    .catch((err) => {
      process.stderr.write(`svc: ${(err as Error).message}\n`);
      process.exitCode = 1;
    });
}
