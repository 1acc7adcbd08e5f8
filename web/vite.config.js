// The console builds into the directory the console Go package embeds.
// Preact's JSX runtime through esbuild: no framework plugin is needed.
import { defineConfig } from 'vite';

export default defineConfig({
  root: '.',
  base: '/',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  // npm run dev: the console with live reload against a running warden
  // serve (WARDEN_URL, default http://127.0.0.1:8080).
  server: {
    proxy: Object.fromEntries(['/v1', '/admin', '/healthz', '/readyz', '/openapi.json'].map((p) => [p, process.env.WARDEN_URL || 'http://127.0.0.1:8080'])),
  },
  build: {
    outDir: '../internal/console/assets/app',
    emptyOutDir: true,
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
    target: 'es2022',
  },
});
