// `npm start`: compile src/ into dist/ if it changed since the last build (scripts/build-server.mjs), then run the
// server in this same process, with the node options `npm start` passes (package.json → config.node_args).
import { buildServer, upToDate } from './build-server.mjs';

if (!upToDate()) {
  process.stderr.write('svc: compiling src/ into dist/\n');
  await buildServer();
}
await import('../dist/main.js');
