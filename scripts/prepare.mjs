// Runs on `npm install` / `npm ci`: builds the admin UI into web/dist. A production install without dev
// dependencies (npm ci --omit=dev) has no Vite: it then skips the build and says so; ship a prebuilt web/dist.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';

try {
  createRequire(import.meta.url).resolve('vite/package.json');
} catch {
  console.log('svc: Vite is not installed (production install?): skipping the admin UI build. Run `npm run build:web` where dev dependencies are installed.');
  process.exit(0);
}
const r = spawnSync('npm', ['run', '-s', 'build:web'], { stdio: 'inherit' });
process.exit(r.status ?? 1);
