import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// The admin UI (web/) is served by the service under /admin, so every asset URL carries that base. Everything,
// Polaris' CSS included, is bundled: the page loads nothing from another origin in standalone mode.
export default defineConfig({
  root: fileURLToPath(new URL('./web', import.meta.url)),
  base: '/admin/',
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2020',
    chunkSizeWarningLimit: 1500,
  },
  logLevel: 'info',
});
