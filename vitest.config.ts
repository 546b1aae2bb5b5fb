import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/globalSetup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 2,
    // Test files share their worker's module cache: loading the app and compiling PGlite's WASM once per worker
    // instead of once per file halves the suite's time. Every file still gets its own database and app, and no
    // test depends on module state of its own.
    isolate: false,
    reporters: ['default'],
  },
});
